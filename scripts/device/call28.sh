#!/usr/bin/env bash
# Device call: the whole suite on the final Python side, the captured step's
# memory again (now captured on its warm-up stream), and the products example
# on the GPU (synthetic, reduced scale): fused loader, FusedGraphSAGE eager
# and with --capture.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/all_tests.log" | tail -3
timeout 90 python3 scripts/device/captured_memory.py 2>&1 | head -2 | tee $OUT/captured_memory.log
for m in "--loader fused" "--model fused-sage" "--model fused-sage --capture"; do
  echo "== examples/ogbn_products_sage.py --synthetic --scale 0.1 --epochs 2 --device cuda $m"
  timeout 80 python3 examples/ogbn_products_sage.py --synthetic --scale 0.1 --epochs 2 \
    --device cuda $m 2>&1 | grep -v Warning | tail -4
done 2>&1 | tee $OUT/examples_gpu.log
