#!/usr/bin/env bash
# Device call: the committed `sage` rows (products-like [15,10] and [25,10],
# AMP off/on, every variant in one process) and the products learning curves,
# on the tree with FusedGraphSAGE's leaner activations (bmm masked mean,
# in-place root term and ReLU); the layer tests first.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
python3 -m pytest tests/test_fused_sage.py -q 2>&1 | tail -1
V="pyg fused-loader fused-sage fused-sage-emb fused-sage-graph fused-sage-emb-graph"
python3 -m pyg_fusesample.bench sage --graph products --device cuda --variants $V \
  --num-workers 8 --fanouts 15,10 25,10 --amp off on --out $OUT/sage_products.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
python3 -m pyg_fusesample.bench sage-curve --graph products --device cuda \
  --variants pyg fused-sage fused-sage-graph --num-workers 8 --fanouts 15,10 \
  --epochs ${EPOCHS:-10} --out $OUT/sage_curve_products.csv 2>&1 | grep "epoch" \
  | tee -a $OUT/bench.log
rm -f $OUT/*.md $OUT/*.png
