#!/usr/bin/env bash
# Device call: call73's build carried (REBUILD=0): the loader's and sampler's
# CUDA tests after the loader's batch windows moved into
# SeededBatchSampler.slices (the GPU seeds are cut there too).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_loader.py \
  tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py 2>&1 \
  | tee "$OUT/cuda_tests_loader.log" | tail -2
