#!/usr/bin/env bash
# Device call, experiment build: the 16-bit one-vector SpMM kernels (rows
# and hub chunks) with P non-zeros a pass under B blocks per SM,
# FUSESAMPLE_SPMM_WIDE_PASS=P:B (4:6, 4:5, 3:6; unset: 2 a pass as
# committed). Registers and spills; the SpMM tests as committed and at 4:6;
# the A/B on the committed one-vector bf16 cells of all four graphs.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
cuobjdump --dump-resource-usage pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so \
  | python3 scripts/device/kernel_resources.py spmm_ | grep BFloat16 > $OUT/spmm_resources_call111.log 2>&1
grep -v "LOCAL 0" $OUT/spmm_resources_call111.log | head -30
for mode in "" 4:6; do
  FUSESAMPLE_SPMM_WIDE_PASS=$mode timeout 100 python3 -m pytest -q -p no:cacheprovider \
    tests/test_spmm_ops.py 2>&1 | tail -1
done
AB_ENV=FUSESAMPLE_SPMM_WIDE_PASS AB_MODES=old=,4:6=4:6,4:5=4:5,3:6=3:6 AB_CELLS=one-vector-16 \
  SPMM_GRAPHS=hub_skewed,products_like,reddit_like,erdos_renyi \
  timeout 300 python3 scripts/device/spmm_kernel_ab.py 2>&1 | grep -v Warn | tee $OUT/spmm_wide_pass_call111.log
