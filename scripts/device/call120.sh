#!/usr/bin/env bash
# Device call, build after the final review: the ordered rows kernel no
# longer falls back to index order on a null order (the launch never passed
# one). The whole suite; the `spmm` benchmark on all four graphs (with the
# GCN rows); memcheck on the light-order tests. Few files under $OUT.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 150 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1 | tee $OUT/all_tests_h200.log
timeout 280 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench_call120.log
grep -c "F=" $OUT/spmm_bench_call120.log; grep "hub_skewed F=128" $OUT/spmm_bench_call120.log
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
  tests/test_spmm_ops.py -k "light" > /tmp/san.log 2>&1
{ echo "memcheck (light-order tests) rc=$?"; grep -E "passed|failed" /tmp/san.log | tail -1
  grep -m1 "ERROR SUMMARY" /tmp/san.log; } | tee -a $OUT/all_tests_h200.log
