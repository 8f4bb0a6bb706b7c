#!/usr/bin/env bash
# Device call for the examples issue, after the FusedGraphSAGE memory work:
# the products-like learning curves from one run -- PyG GraphSAGE with
# NeighborLoader (8 workers), with FusedNeighborLoader (and prefetch), on
# pre-sampled batches (the floor), and FusedGraphSAGE eager / captured.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 450 python3 -m pyg_fusesample.bench sage-curve --graph products --device cuda \
  --variants pyg fused-loader fused-prefetch model-only fused-sage fused-sage-graph \
  --num-workers 8 --fanouts 15,10 --epochs ${EPOCHS:-4} \
  --out $OUT/curve_examples_products.csv 2>&1 | grep "epoch" | tee $OUT/curve.log
