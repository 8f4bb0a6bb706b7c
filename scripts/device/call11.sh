#!/usr/bin/env bash
# Device call: rebuild (with gather_rows), CUDA tests + sanitizers, then the
# loader sweep and epoch CSVs.
export REBUILD=1
source "$(dirname "$0")/prelude.sh"
bash scripts/device/check.sh
M=/tmp/md; mkdir -p $M; B="python3 -m pyg_fusesample.bench"
$B loader --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --out $M/loader_gpu.csv 2>&1 | grep "b=1024" | grep -v "^|"
$B epoch --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 --out $M/epoch_gpu.csv 2>&1 | grep "epoch w" | grep -v "^|"
cp $M/*.csv $OUT/
