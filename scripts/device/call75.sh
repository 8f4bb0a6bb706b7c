#!/usr/bin/env bash
# Device call (tried and dropped): build with the light rows' first column loaded one row ahead
# (4- and 8-byte rows); SpMM tests; the variant sweep at F = 16, 32, 128 on
# the products-like and hub-skewed graphs; if all pass, the `spmm` benchmark
# on those two graphs.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
timeout 150 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -2
SPMM_F=16,32,128 timeout 200 python scripts/device/spmm_timing.py products hub \
  > "$OUT/spmm_variants_call75.log" 2>&1
cat "$OUT/spmm_variants_call75.log"
timeout 200 python3 -m pyg_fusesample.bench spmm --graphs products hub --features 16 32 128 --no-gcn \
  --steps 20 --out $OUT/spmm_h200_call75.csv 2>&1 | grep -v "^|\|^<\|^$" | grep "F=\(16\|32\|128\) "
