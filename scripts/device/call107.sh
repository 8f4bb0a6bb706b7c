#!/usr/bin/env bash
# Device call, build: the hub-split variants with both row kernels (light
# rows by length, or in index order as before), the scheduler probing the
# index-order twin of a hub-split winner. SpMM / autotune / AutoSpMMConv
# tests; memcheck and racecheck on the light-order tests; the `spmm`
# benchmark on all four graphs; the whole suite.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -1
log=$OUT/sanitizer_light_rows.log
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
    tests/test_spmm_ops.py -k "light" > $log.$tool 2>&1
  echo "$tool rc $?"; grep -E "passed|failed|ERROR SUMMARY|RACECHECK SUMMARY" $log.$tool | tail -2
done
timeout 240 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench.log
grep -c "F=" $OUT/spmm_bench.log
timeout 150 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1 | tee $OUT/all_tests_h200.log
