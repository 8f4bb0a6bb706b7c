#!/usr/bin/env bash
# Device call (tried and dropped): the 16-bit accumulate loop unrolled twice (four gathers in
# flight a lane), A/B on one machine against call73's build (.probe/C73.so.gz,
# the tree's kernel before this change): SpMM tests, then the bf16 variant
# sweep on the products-like, hub-skewed and Erdos-Renyi graphs with each.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py -k "cuda" 2>&1 | tail -1
rm -rf /tmp/base && mkdir -p /tmp/base && cp -r pyg_fusesample /tmp/base/
gunzip -c .probe/C73.so.gz > /tmp/base/pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
for g in hub er products; do
  echo "== call73 build"
  SPMM_DTYPES=bfloat16 SPMM_F=16,32,128,256 PYTHONPATH=/tmp/base:$PYTHONPATH \
    timeout 100 python3 scripts/device/spmm_timing.py $g 2>&1 | grep -v "^products:\|^hub:\|^er"
  echo "== this build"
  SPMM_DTYPES=bfloat16 SPMM_F=16,32,128,256 timeout 100 python3 scripts/device/spmm_timing.py $g 2>&1
done | tee "$OUT/spmm_variants_call76.log"
