#!/usr/bin/env bash
# Device call: the 'hub-subwarp' SpMM variant (short rows packed four to a
# warp, long rows to thread blocks) -- build, the sparse CUDA tests, every
# variant timed on the narrow-F cells, then the full `spmm` benchmark with the
# scheduler probing it.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 100 python3 -m pytest tests/test_spmm_ops.py tests/test_auto_spmm_conv.py \
  tests/test_autotune.py -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -2
SPMM_F=16,32,64 timeout 120 python3 scripts/device/spmm_timing.py products hub \
  2>&1 | tee $OUT/spmm_variants_call31.log
timeout 330 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log | grep "F=\(16\|32\|64\) \|GCN"
