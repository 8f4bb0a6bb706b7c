#!/usr/bin/env bash
# Device call, build (call107's kernels; the .so did not come back): the
# scheduler also probes 'hub-subwarp' at F=128 (packed light rows: 8 lanes
# a row, four rows a warp, twice the gathers in flight of 'hub' at 16
# lanes; the hub-skewed bf16 F=128 light rows took 0.81 ms alone against a
# 0.39 ms floor, call90). Autotune tests; the `spmm` benchmark at F=128 on
# all four graphs, against call107's. (Ran on branch packed-wide, whose
# rule, candidates.PACKED_HUB_MAX_F = 128, was not merged: see the README.)
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_autotune.py tests/test_auto_spmm_conv.py 2>&1 | tail -1
timeout 300 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er --features 128 \
  --steps 20 --no-gcn --out $OUT/spmm_h200_f128_call108.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench_call108.log
grep "F=128" $OUT/spmm_bench_call108.log
