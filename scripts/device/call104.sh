#!/usr/bin/env bash
# Device call, no build (call103's build, carried gzipped in .b_so/): the
# `spmm` benchmark on all four graphs with the light rows in length order
# (the scheduler's probes and the chosen kernels alike); the whole suite.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .b_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 330 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench.log
grep -c "F=" $OUT/spmm_bench.log
timeout 200 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -3 | tee $OUT/all_tests_h200.log
