#!/usr/bin/env bash
# Device call: build with the one-vector kernel kept to rows of >= 8 vectors
# (call86: it lost on rows of 2 and 4); registers; the `spmm` benchmark on all
# four graphs; the whole suite.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
cuobjdump --dump-resource-usage pyg_fusesample/_C*312*.so 2>/dev/null \
  | python3 scripts/device/kernel_resources.py spmm_ | grep "BFloat16\|Efl" > "$OUT/spmm_resources_call87.log"
timeout 280 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench.log
grep -c "F=" $OUT/spmm_bench.log
timeout 170 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -2 | tee $OUT/all_tests_h200.log
