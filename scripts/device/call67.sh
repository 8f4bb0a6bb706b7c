#!/usr/bin/env bash
# Device call: build with the SpMM rework (recursive-halving slot reduction,
# rowptr prefetch, parallel chunk combines, hub chunks on a second stream);
# the SpMM / autotune / AutoSpMMConv tests; where the time goes now, with the
# concurrent launch and without (FUSESAMPLE_SPMM_SERIAL_HUBS=1); the variant
# sweep at F = 16, 32, 128 on the products-like and hub-skewed graphs.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py -x 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -4
python scripts/device/spmm_profile.py > "$OUT/spmm_profile_call67.log" 2>&1
FUSESAMPLE_SPMM_SERIAL_HUBS=1 python scripts/device/spmm_profile.py \
  > "$OUT/spmm_profile_call67_serial.log" 2>&1
grep -v Warn "$OUT/spmm_profile_call67.log" | grep -v "_warn_once"
echo "-- serial"
grep "call " "$OUT/spmm_profile_call67_serial.log"
SPMM_F=16,32,128 timeout 300 python scripts/device/spmm_timing.py products hub \
  > "$OUT/spmm_variants_call67.log" 2>&1
cat "$OUT/spmm_variants_call67.log"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
