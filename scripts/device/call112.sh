#!/usr/bin/env bash
# Device call, build: the 16-bit one-vector SpMM kernels gather 4
# non-zeros a pass under 5 blocks (call111's A/B). Resources; SpMM /
# autotune / AutoSpMMConv tests; what the public SpMM path costs beyond the
# raw op; the `spmm` benchmark on all four graphs (with the GCN rows).
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
cuobjdump --dump-resource-usage pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so \
  | python3 scripts/device/kernel_resources.py spmm_ > $OUT/spmm_resources_call112.log 2>&1
grep -c "LOCAL 0" $OUT/spmm_resources_call112.log; grep -v "LOCAL 0" $OUT/spmm_resources_call112.log | head
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -1
timeout 90 python3 scripts/device/spmm_call_overhead.py 2>&1 | grep -v Warn | tee $OUT/spmm_call_overhead_call112.log
timeout 250 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench_call112.log
grep -c "F=" $OUT/spmm_bench_call112.log; grep "F=128\|F=256" $OUT/spmm_bench_call112.log | grep bfloat16
