#!/usr/bin/env bash
# Device call: the SpMM rework with the butterfly slot reduction back (the
# reduce-scatter of call67/68 ran bf16 2.5-5x slower) and shuffles skipped
# for vector columns past the row; registers of the new build and of call66's
# (.probe/C66.so.gz); the SpMM tests; where the time goes; the variant sweep.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
res() { cuobjdump --dump-resource-usage "$1" 2>/dev/null | python3 scripts/device/kernel_resources.py spmm_; }
{ echo "== this build"; res pyg_fusesample/_C*312*.so | grep "BFloat16\|Efl\|Efi"
  if [ -f .probe/C66.so.gz ]; then gunzip -c .probe/C66.so.gz > /tmp/C66.so
    echo "== call66 build (HEAD)"; res /tmp/C66.so | grep "BFloat16\|Efl\|Efi"; fi
} > "$OUT/spmm_resources_call69.log"
grep "rows_kernel.*BFloat16.*l\|rows_kernelILb0EflLi4" "$OUT/spmm_resources_call69.log"
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py -x 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -3
python scripts/device/spmm_profile.py 2>&1 | grep -v "Warn\|_warn_once" > "$OUT/spmm_profile_call69.log"
cat "$OUT/spmm_profile_call69.log"
SPMM_F=16,32,128 timeout 300 python scripts/device/spmm_timing.py products hub \
  > "$OUT/spmm_variants_call69.log" 2>&1
cat "$OUT/spmm_variants_call69.log"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
