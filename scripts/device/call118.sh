#!/usr/bin/env bash
# Device call, build: the packed variants give a row max(8, lanes) lanes, and
# the scheduler probes the one-vector layouts packed too ('subwarp@L',
# 'hub-subwarp@t@L'; call117's A/B). SpMM / autotune / AutoSpMMConv tests;
# the `spmm` benchmark on all four graphs (with the GCN rows). Few files
# under $OUT: the .so must come back.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -1
timeout 330 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench_call118.log
grep -c "F=" $OUT/spmm_bench_call118.log; grep "hub_skewed" $OUT/spmm_bench_call118.log | grep "F=128\|F=64"
