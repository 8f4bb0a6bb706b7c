#!/usr/bin/env bash
# Device call: the full `spmm` benchmark with the scheduler's third lane
# layout (between the default and one vector per lane) and the two-per-pass
# loop for 16-bit rows. REBUILD=0: reuses call40's build when the machine is
# still warm (same tree), builds otherwise.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 420 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log \
  | grep "F=\(32\|128\) \|GCN"
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_autotune.py tests/test_auto_spmm_conv.py \
  2>&1 | tail -2
