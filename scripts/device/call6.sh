#!/usr/bin/env bash
# Device call: rebuild, CUDA tests, sanitizers, op timing, GPU benchmark CSVs.
export REBUILD=1
source "$(dirname "$0")/prelude.sh"
cp pyg_fusesample/_C*.so $OUT/
bash scripts/device/check.sh
python3 scripts/device/op_timing.py 2449029 2>&1 | tee $OUT/op_timing.log
M=/tmp/md; mkdir -p $M; B="python3 -m pyg_fusesample.bench"
$B loader --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --out $M/loader_gpu.csv 2>&1 | grep "b=1024"
$B epoch --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 --out $M/epoch_gpu.csv 2>&1 | grep "epoch w"
$B step --graph products --device cuda --variants pyg fused per-hop torch-gpu model-only \
  --num-workers 0 8 --fanouts 15,10 15,10,5 --amp off on --out $M/step_products.csv 2>&1 | grep "w=" | grep -v "^|"
cp $M/*.csv $OUT/
