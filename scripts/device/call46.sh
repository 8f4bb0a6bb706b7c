#!/usr/bin/env bash
# Device call: build after the review's sampler edit (next_k named once) and
# run the sampler's CUDA tests (with the shared assert_same_sample).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_sampler.py 2>&1 | tail -3 \
  | tee $OUT/cuda_tests_sampler_review.log
