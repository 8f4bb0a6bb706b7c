#!/usr/bin/env bash
# Device call: hub rows of one chunk written by the hub kernel itself (the
# combine only adds rows of several chunks). SpMM tests; then A/B on one
# machine, A = call90's build of HEAD (carried in .base_so/), B = this tree:
# the chunk sweep at 2048 / 4096 / 8192 non-zeros a chunk.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
gzip -c pyg_fusesample/_C*312*.so > "$OUT/_C312.so.gz"
rm -rf /tmp/base && mkdir -p /tmp/base && cp -r pyg_fusesample /tmp/base/ \
  && cp .base_so/_C.cpython-312-x86_64-linux-gnu.so /tmp/base/pyg_fusesample/
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -3
for round in 1 2; do
  echo "--- A (HEAD, call90 build), round $round"
  SWEEP_CHUNKS=2048,4096,8192 PYTHONPATH=/tmp/base:$PYTHONPATH timeout 120 \
    python3 scripts/device/spmm_chunk_sweep.py 2>&1 | tee -a "$OUT/spmm_chunk_ab_a.log"
  echo "--- B (one-chunk rows written by the hub kernel), round $round"
  SWEEP_CHUNKS=2048,4096,8192 timeout 120 python3 scripts/device/spmm_chunk_sweep.py 2>&1 \
    | tee -a "$OUT/spmm_chunk_ab_b.log"
done
