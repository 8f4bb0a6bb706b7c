#!/usr/bin/env bash
# Device call: the whole test suite on this tree (extension carried from
# call50, REBUILD=0), then compute-sanitizer memcheck and racecheck on the
# sampler's CUDA tests (neighbor_sample_async and the prefetching loader
# included).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -4 | tee $OUT/all_tests_h200.log
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
    tests/test_cuda_sampler.py -m cuda -k "not 2_31 and not many_scan_tiles and not does_not_wait" \
    > /tmp/san.log 2>&1
  echo "$tool rc=$? (3 = errors, 124 = timeout)" | tee -a $OUT/sanitizer_sampler.log
  tail -1 /tmp/san.log | tee -a $OUT/sanitizer_sampler.log
  grep -m2 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san.log | tee -a $OUT/sanitizer_sampler.log
done
