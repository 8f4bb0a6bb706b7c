#!/usr/bin/env bash
# Device call: the full `spmm` benchmark with the whole-graph confirmation band
# widened to 0.8-1.6 (call41 missed a Reddit-like kernel probed at 1.52).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 420 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log \
  | grep "F=\(32\|128\) \|GCN"
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_autotune.py tests/test_auto_spmm_conv.py \
  2>&1 | tail -2
