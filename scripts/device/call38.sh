#!/usr/bin/env bash
# Device call: the full `spmm`
# benchmark with the bf16 widening, then the whole test suite.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 360 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log \
  | grep "F=\(32\|128\) \|GCN"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -4 | tee $OUT/all_tests_h200.log
