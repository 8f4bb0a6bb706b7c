#!/usr/bin/env bash
# Device call: build; the CUDA tests of the sparse ops, the scheduler and
# AutoSpMMConv; compute-sanitizer memcheck on the spmm op tests; then the
# `spmm` benchmark (scheduler choice vs cuSPARSE vs the gather floor, and the
# GCN step) on the four generated graphs.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 120 python3 -m pytest tests/test_spmm_ops.py tests/test_auto_spmm_conv.py \
  tests/test_autotune.py -q -ra 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -3
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 python3 -m pytest -q -x \
  tests/test_spmm_ops.py -k "cuda and not opcheck and not huge" > /tmp/san.log 2>&1
echo "memcheck rc=$?"; grep -m1 "ERROR SUMMARY" /tmp/san.log; tail -1 /tmp/san.log
timeout ${BENCH_S:-330} python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log
