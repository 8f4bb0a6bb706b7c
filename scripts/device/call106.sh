#!/usr/bin/env bash
# Device call, build: the unordered rows kernels back to the index code of
# before the order (call105: 'subwarp' bf16 F=16 on Erdos-Renyi still 10%
# slower with a -1 sentinel). Registers of the rows kernels; per-kernel times
# of call105's cells; the SpMM tests; the `spmm` benchmark on all four
# graphs; the whole suite.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
{ echo "== this build"; cuobjdump --dump-resource-usage pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so \
    | python3 scripts/device/kernel_resources.py spmm_rows_kernel | grep "BFloat16\|Efl"
  echo "== call90's build"; gunzip -c .base_so/_C312.so.gz > /tmp/old.so
  cuobjdump --dump-resource-usage /tmp/old.so | python3 scripts/device/kernel_resources.py spmm_rows_kernel \
    | grep "BFloat16\|Efl"; } > $OUT/spmm_resources_call106.log 2>&1
export SPMM_PROFILE=er:bfloat16:16:subwarp:-1:0,er:float32:32:subwarp:-1:0,hub:float32:16:hub-subwarp:80:0,hub:bfloat16:16:hub-subwarp:80:0,hub:float32:32:hub-subwarp:80:0
timeout 150 python3 scripts/device/spmm_profile.py 2>&1 | grep -v "Warn\|warn" | tee $OUT/spmm_profile_call106.log \
  | grep "==\|call\|rows_kernel"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -1
timeout 240 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench.log
grep -c "F=" $OUT/spmm_bench.log
timeout 150 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1 | tee $OUT/all_tests_h200.log
