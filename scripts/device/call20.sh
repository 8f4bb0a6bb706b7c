#!/usr/bin/env bash
# Device call for the examples issue: the products-like learning curves of
# PyG GraphSAGE with NeighborLoader (8 workers), with FusedNeighborLoader
# (and prefetch), on pre-sampled batches (the model-only floor), and
# FusedGraphSAGE eager / captured, from one run; then the products example on
# the GPU (synthetic, reduced scale) with the fused loader and FusedGraphSAGE.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 330 python3 -m pyg_fusesample.bench sage-curve --graph products --device cuda \
  --variants pyg fused-loader fused-prefetch model-only fused-sage fused-sage-graph \
  --num-workers 8 --fanouts 15,10 --epochs ${EPOCHS:-4} \
  --out $OUT/curve_examples_products.csv 2>&1 | grep "epoch" | tee $OUT/curve.log
for m in "--loader fused" "--model fused-sage --amp"; do
  timeout 60 python3 examples/ogbn_products_sage.py --synthetic --scale 0.1 --epochs 2 \
    --device cuda $m 2>&1 | grep -v Warning | tail -4 | tee -a $OUT/examples_gpu.log
done
