#!/usr/bin/env bash
# Device call, no build (call126's .so, carried; the tree's C++ is call126's):
# the whole suite with its 15 slowest tests (call126's 170 s limit cut it at
# test 84, in test_auto_spmm_conv); memcheck and racecheck on the native
# prefetch thread's CUDA tests.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 330 python3 -m pytest -q -p no:cacheprovider --durations=15 tests > /tmp/suite.log 2>&1
echo "suite rc=$?" | tee $OUT/all_tests_h200.log
grep -A17 "slowest" /tmp/suite.log | tee -a $OUT/all_tests_h200.log; tail -1 /tmp/suite.log | tee -a $OUT/all_tests_h200.log
grep -E "^FAILED|^ERROR" /tmp/suite.log | head -20 | tee -a $OUT/all_tests_h200.log
for tool in memcheck racecheck; do
  timeout 110 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
    tests/test_cuda_sampler.py -k "native or prefetch_thread_equals" > /tmp/san.log 2>&1
  { echo "$tool (native prefetch-thread tests) rc=$?"; grep -E "passed|failed" /tmp/san.log | tail -1
    grep -m1 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san.log; } | tee -a $OUT/sanitizer_native_thread.log
done
