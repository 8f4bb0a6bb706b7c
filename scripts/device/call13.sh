#!/usr/bin/env bash
# Device call: build with sample_aggregate's CUDA kernels, the sampler's CUDA
# tests (phase_floyd now uses the shared warp_floyd), CUDA == CPU agreement of
# the new op, op timing and the FusedGraphSAGE step with a profile.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
[ "$REBUILD" = 1 ] && python3 -m pytest tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py -q -x 2>&1 | tail -2
python3 scripts/device/aggregate_timing.py products 2>&1 | tee $OUT/aggregate_timing.log
