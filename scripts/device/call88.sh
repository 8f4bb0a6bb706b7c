#!/usr/bin/env bash
# Device call: call87's build carried (REBUILD=0): the lane-layout tests with
# the new one-vector kernel test; memcheck and racecheck on the one-vector
# tests (the hub variant takes the concurrent launch and shared memory).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py -k "lane or one_vector" 2>&1 \
  | tail -2 | tee "$OUT/cuda_tests_one_vector.log"
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_spmm_ops.py -k "one_vector and (hub or warp) and bfloat16" \
    > /tmp/san.log 2>&1
  { echo "$tool rc=$? (3 = errors, 124 = timeout)"; tail -1 /tmp/san.log
    grep -m2 "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/san.log; } | tee -a "$OUT/sanitizer_one_vector.log"
done
