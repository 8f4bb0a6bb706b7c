#!/usr/bin/env bash
# Device call: build with halving only where it measured faster (lanes of
# <= 16 values, >= 8 slots); the SpMM / autotune / AutoSpMMConv tests; the
# full `spmm` benchmark on the products-like and hub-skewed graphs (call71
# runs the other two on the same build).
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 150 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -3
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
timeout 380 python3 -m pyg_fusesample.bench spmm --graphs products hub \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench_a.log \
  | grep "F=\(16\|32\|128\) \|GCN"
