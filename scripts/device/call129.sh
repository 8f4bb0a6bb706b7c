#!/usr/bin/env bash
# Device call, build: BatchPrefetcher joins its thread without the GIL
# (call128: test_prefetch_thread_raises_in_order[True] hung in the
# iterator's destructor). The loader/sampler/prefetcher tests verbose with
# faulthandler, then the rest of the suite.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 150 python3 -m pytest -v -p no:cacheprovider -o faulthandler_timeout=40 tests/test_cuda_sampler.py \
  tests/test_batch_prefetcher.py tests/test_loader.py tests/test_bench.py > $OUT/tests_call129.log 2>&1
echo "loader tests rc=$?" >> $OUT/tests_call129.log
grep -E "Timeout|FAILED" $OUT/tests_call129.log | head; tail -2 $OUT/tests_call129.log
timeout 280 python3 -m pytest -q -p no:cacheprovider -o faulthandler_timeout=60 tests \
  --deselect tests/test_cuda_sampler.py --deselect tests/test_batch_prefetcher.py \
  --deselect tests/test_loader.py --deselect tests/test_bench.py 2>&1 | tail -2 | tee -a $OUT/tests_call129.log
