#!/usr/bin/env bash
# Device call: build after the review (one empty-batch path in the sampler's
# CUDA launch, one current-stream handle in the SpMM launch); the sampler,
# sampling-op, loader and SpMM CUDA tests.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_sampler.py \
  tests/test_neighbor_sample_op.py tests/test_loader.py tests/test_spmm_ops.py \
  tests/test_autotune.py 2>&1 | tee "$OUT/cuda_tests_review.log" | tail -2
