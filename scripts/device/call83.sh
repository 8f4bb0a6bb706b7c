#!/usr/bin/env bash
# Device call: EXPERIMENT, A/B on one machine. A: call82's build (carried in
# .base_so/). B: this tree, float32 lanes with 2 vectors (8 accumulators, as
# 16-bit lanes have since call73) and the register cap switchable per call
# (FUSESAMPLE_SPMM_MIN_BLOCKS). float32 cells only.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && cp -r pyg_fusesample /tmp/base/ \
  && cp .base_so/_C.cpython-312-x86_64-linux-gnu.so /tmp/base/pyg_fusesample/
cuobjdump --dump-resource-usage pyg_fusesample/_C*312*.so 2>/dev/null \
  | python3 scripts/device/kernel_resources.py spmm_ | grep "EflLi4" > "$OUT/spmm_resources_call83.log"
cat "$OUT/spmm_resources_call83.log"
echo "--- A (call82 build)"
SPMM_BLOCKS=0 SPMM_DTYPES=float32 PYTHONPATH=/tmp/base:$PYTHONPATH timeout 200 \
  python3 scripts/device/spmm_min_blocks.py 2>&1 | tee "$OUT/spmm_ab_a.log"
echo "--- B (2 vectors a lane)"
SPMM_BLOCKS=3,4,5,6 SPMM_DTYPES=float32 timeout 300 python3 scripts/device/spmm_min_blocks.py 2>&1 \
  | tee "$OUT/spmm_ab_b.log"
