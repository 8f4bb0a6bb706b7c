#!/usr/bin/env bash
# Device call, build: the review's change -- BatchPrefetcher gathers a
# batch's attribute rows through fusesample::gather_rows_list (the loader's
# op) instead of its own loop over gather_rows. Loader, sampler, prefetcher
# and harness tests; memcheck on the native and Python prefetch-thread tests.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
log=$OUT/cuda_tests_call135.log
timeout 200 python3 -m pytest -q -p no:cacheprovider -o faulthandler_timeout=60 tests/test_cuda_sampler.py \
  tests/test_batch_prefetcher.py tests/test_loader.py tests/test_bench.py > /tmp/t.log 2>&1
echo "loader/sampler/prefetcher/harness tests rc=$?" | tee $log
grep -E "^FAILED|^ERROR|Timeout" /tmp/t.log | head -10 | tee -a $log; tail -1 /tmp/t.log | tee -a $log
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
  tests/test_cuda_sampler.py -k "native or prefetch_thread" > /tmp/san.log 2>&1
{ echo "memcheck (prefetch-thread tests) rc=$?"; grep -E "passed|failed" /tmp/san.log | tail -1
  grep -m1 "ERROR SUMMARY" /tmp/san.log; } | tee -a $log
