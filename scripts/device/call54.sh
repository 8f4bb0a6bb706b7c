#!/usr/bin/env bash
# Device call: the sampler's CUDA tests after the stream-safety change of
# neighbor_sample_async (extension carried from call50, Python changes only),
# and the loader's host time on this machine.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda_sampler.py \
  tests/test_neighbor_sample_op.py tests/test_loader.py 2>&1 | tail -3 | tee $OUT/cuda_tests_sampler.log
timeout 150 python3 scripts/device/loader_host_time.py > $OUT/loader_host_time.log 2>&1
head -6 $OUT/loader_host_time.log
