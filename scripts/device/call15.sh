#!/usr/bin/env bash
# Device call: CUDA tests of the op/layers (PyG's scatter falls back to torch's
# where the carried torch_scatter has no CUDA), compute-sanitizer on the op's
# CUDA tests, the Reddit-like `sage` rows, and the products rows again with
# the graph variants' transient memory measured from before the capture.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
python3 -m pytest tests/test_sample_aggregate_op.py tests/test_fused_sage.py -q -ra 2>&1 \
  | tee "$OUT/cuda_tests.log" | tail -3
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_sample_aggregate_op.py -k "cuda and not opcheck" > /tmp/san_$tool.log 2>&1
  echo "$tool rc=$?"; tail -1 /tmp/san_$tool.log; grep -m3 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san_$tool.log
done 2>&1 | tee "$OUT/sanitizer.log"
V="pyg fused-loader fused-sage fused-sage-emb fused-sage-graph fused-sage-emb-graph"
python3 -m pyg_fusesample.bench sage --graph reddit --device cuda --variants $V \
  --num-workers 8 --fanouts 25,10 --amp off on --out $OUT/sage_reddit.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
python3 -m pyg_fusesample.bench sage --graph products --device cuda --variants $V \
  --num-workers 8 --fanouts 15,10 25,10 --amp off on --out $OUT/sage_products.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
