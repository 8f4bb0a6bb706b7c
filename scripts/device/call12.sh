#!/usr/bin/env bash
# Device call: the training-step CSV on the tree validated by call11.sh
# (same CUDA code; build + benchmark only, to fit the remaining device time).
export REBUILD=1
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
M=/tmp/md; mkdir -p $M
python3 -m pyg_fusesample.bench step --graph products --device cuda \
  --variants pyg fused fused-prefetch per-hop torch-gpu model-only --num-workers 0 8 \
  --fanouts 15,10 15,10,5 --amp off on --out $M/step_products.csv 2>&1 | grep "w=" | grep -v "^|"
cp $M/*.csv $OUT/
