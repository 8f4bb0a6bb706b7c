#!/usr/bin/env bash
# Device call: build with one-vector layouts on a kernel of one vector a lane
# (call85); registers; SpMM / autotune / AutoSpMMConv tests; the `spmm`
# benchmark on all four graphs.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
cuobjdump --dump-resource-usage pyg_fusesample/_C*312*.so 2>/dev/null \
  | python3 scripts/device/kernel_resources.py spmm_ | grep "BFloat16\|Efl" > "$OUT/spmm_resources_call86.log"
grep "Lb0E.*\(ElLi8\|EflLi4\)" "$OUT/spmm_resources_call86.log"
timeout 150 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -2
timeout 300 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench.log
grep -c "F=" $OUT/spmm_bench.log
