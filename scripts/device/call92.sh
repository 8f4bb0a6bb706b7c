#!/usr/bin/env bash
# Device call: call91's change with the chunk's row, its place and its scale
# worked out after the gathers (call91 lost 8% at float32 F=32). The hub
# kernels' registers in both builds; SpMM tests; A/B as in call91 (A = call90's
# build of HEAD).
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
gzip -c pyg_fusesample/_C*312*.so > "$OUT/_C312.so.gz"
rm -rf /tmp/base && mkdir -p /tmp/base && cp -r pyg_fusesample /tmp/base/ \
  && cp .base_so/_C.cpython-312-x86_64-linux-gnu.so /tmp/base/pyg_fusesample/
for so in /tmp/base/pyg_fusesample/_C*312*.so pyg_fusesample/_C*312*.so; do
  echo "--- $so"
  cuobjdump --dump-resource-usage $so 2>/dev/null | python3 scripts/device/kernel_resources.py spmm_hub_kernel
done 2>&1 | tee "$OUT/spmm_hub_resources.log"
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -3
for round in 1 2; do
  echo "--- A (HEAD, call90 build), round $round"
  SWEEP_CHUNKS=2048,4096 PYTHONPATH=/tmp/base:$PYTHONPATH timeout 120 \
    python3 scripts/device/spmm_chunk_sweep.py 2>&1 | tee -a "$OUT/spmm_chunk_ab_a.log"
  echo "--- B (one-chunk rows written by the hub kernel), round $round"
  SWEEP_CHUNKS=2048,4096 timeout 120 python3 scripts/device/spmm_chunk_sweep.py 2>&1 \
    | tee -a "$OUT/spmm_chunk_ab_b.log"
done
