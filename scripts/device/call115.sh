#!/usr/bin/env bash
# Device call, no build (call113's build, carried gzipped in .c_so/; only
# the scheduler changed): an index-order twin no longer takes one of the
# MAX_RIVALS whole-graph slots (call113: hub-skewed bf16 F=64's twin kept
# out the kernel that won it in call112). Autotune / AutoSpMMConv tests; the
# `spmm` benchmark on all four graphs (with the GCN rows).
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -1
timeout 320 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench_call115.log
grep -c "F=" $OUT/spmm_bench_call115.log; grep "hub_skewed" $OUT/spmm_bench_call115.log | grep bfloat16
