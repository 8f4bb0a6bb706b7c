#!/usr/bin/env bash
# Device call: rebuild, CUDA tests (incl. prefetch), sanitizers, and the
# training-step CSV with every variant (incl. fused-prefetch).
export REBUILD=1
source "$(dirname "$0")/prelude.sh"
bash scripts/device/check.sh
M=/tmp/md; mkdir -p $M
python3 -m pyg_fusesample.bench step --graph products --device cuda \
  --variants pyg fused fused-prefetch per-hop torch-gpu model-only --num-workers 0 8 \
  --fanouts 15,10 15,10,5 --amp off on --out $M/step_products.csv 2>&1 | grep "w=" | grep -v "^|"
cp $M/*.csv $OUT/
