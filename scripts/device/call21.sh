#!/usr/bin/env bash
# Device call: the lane-layout knob -- build, the sparse CUDA tests, then the
# `spmm` benchmark again (the scheduler now probes two lane layouts).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 100 python3 -m pytest tests/test_spmm_ops.py tests/test_auto_spmm_conv.py \
  tests/test_autotune.py -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -2
timeout ${BENCH_S:-300} python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log
