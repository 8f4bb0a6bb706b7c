#!/usr/bin/env bash
# Device call: build with one keyed_draw (rng.h) behind every sampler's draws
# (CPU and CUDA Floyd, with-replacement draws of neighbor_sample and
# sample_aggregate); the CUDA tests of the sampler, loader, sample_aggregate
# and the fused SAGE layers (bitwise CPU == CUDA draws); memcheck on the
# sampler's and sample_aggregate's CUDA tests.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 240 python3 -m pytest -q -m cuda -p no:cacheprovider tests/test_cuda_sampler.py \
  tests/test_neighbor_sample_op.py tests/test_loader.py tests/test_sample_aggregate_op.py \
  tests/test_fused_sage.py 2>&1 | tail -3 | tee $OUT/cuda_tests_draws.log
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
  tests/test_cuda_sampler.py tests/test_sample_aggregate_op.py -m cuda \
  -k "not 2_31 and not many_scan_tiles" > /tmp/san.log 2>&1
echo "memcheck rc=$? (3 = errors, 124 = timeout)" | tee $OUT/sanitizer_draws.log
tail -1 /tmp/san.log | tee -a $OUT/sanitizer_draws.log
grep -m2 "ERROR SUMMARY" /tmp/san.log | tee -a $OUT/sanitizer_draws.log
