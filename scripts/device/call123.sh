#!/usr/bin/env bash
# Device call, no build (call122's .so, carried): where a synchronised next()
# of the native prefetch thread spends its 0.2 ms (call122's loader_ms);
# compute-sanitizer memcheck and racecheck on the prefetch-thread tests.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 120 python3 scripts/device/native_next_probe.py 2>&1 | tee $OUT/native_next_probe.log
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
    tests/test_cuda_sampler.py tests/test_batch_prefetcher.py -k "thread or prefetcher" > /tmp/san.log 2>&1
  { echo "$tool (prefetch-thread and prefetcher tests) rc=$?"; grep -E "passed|failed" /tmp/san.log | tail -1
    grep -m1 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san.log; } | tee -a $OUT/sanitizer_native_thread.log
done
