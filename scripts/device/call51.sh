#!/usr/bin/env bash
# Device call: the training step of every loader variant (NeighborLoader with
# 8 workers included) on the products-like graph, synchronised and pipelined,
# with the extension built in call50 (carried, REBUILD=0).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
B="python3 -m pyg_fusesample.bench"
timeout 500 $B step --graph products --device cuda \
  --variants pyg fused fused-sync per-hop torch-gpu model-only --num-workers 8 \
  --fanouts 15,10 15,10,5 --amp off on --out $OUT/step_products.csv 2>&1 \
  | grep -v "^|\|^<\|^$" | tail -25
