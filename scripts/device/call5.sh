#!/usr/bin/env bash
# Device call: CUDA tests (incl. >2^31 edges), sanitizers, then every GPU
# benchmark CSV (loader sweep, epoch, training steps) with the prebuilt .so.
export REBUILD=${REBUILD:-0}
source "$(dirname "$0")/prelude.sh"
M=/tmp/md; mkdir -p $M
bash scripts/device/check.sh
B="python3 -m pyg_fusesample.bench"
$B loader --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --out $M/loader_gpu.csv 2>&1 | grep "b=1024" 
$B epoch --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 --out $M/epoch_gpu.csv 2>&1 | grep "epoch w"
$B step --graph products --device cuda --variants pyg fused per-hop torch-gpu model-only \
  --num-workers 0 8 --fanouts 15,10 15,10,5 --amp off on --out $M/step_products.csv 2>&1 | grep -v "^|" | grep "w="
$B step --graph arxiv --device cuda --variants pyg fused per-hop torch-gpu model-only \
  --num-workers 8 --fanouts 15,10 15,10,5 --amp off --out $M/step_arxiv.csv 2>&1 | grep "w=" | grep -v "^|"
cp $M/*.csv $OUT/
