#!/usr/bin/env bash
# Device call, no build (call129's .so, carried; the tree's C++ is call129's):
# racecheck and memcheck on the native prefetch thread's CUDA tests after the
# GIL-free join (call127's racecheck passed its tests but hung at exit).
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
log=$OUT/sanitizer_native_thread_call130.log
for tool in racecheck memcheck; do
  start=$SECONDS
  timeout 250 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
    -o faulthandler_timeout=200 tests/test_cuda_sampler.py tests/test_batch_prefetcher.py \
    -k "native or prefetch_thread" > /tmp/san.log 2>&1
  { echo "$tool (native/python prefetch-thread tests) rc=$? in $((SECONDS - start)) s"
    grep -E "passed|failed" /tmp/san.log | tail -1
    grep -m1 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san.log
    grep -E "Timeout|^FAILED" /tmp/san.log | head -5; } | tee -a $log
done
