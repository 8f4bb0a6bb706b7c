#!/usr/bin/env bash
# Device call: the loader sweep and
# whole-epoch loading with the two-phases-per-hop sampler, and the training
# step of the loader variants (no NeighborLoader rows: those are loader-bound
# and were measured in call12).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
B="python3 -m pyg_fusesample.bench"
timeout 200 $B loader --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --out $OUT/loader_gpu.csv 2>&1 \
  | grep -v "^|\|^<\|^$" | tail -4
timeout 150 $B epoch --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 --out $OUT/epoch_gpu.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -4
timeout 200 $B step --graph products --device cuda --variants fused fused-prefetch per-hop model-only \
  --fanouts 15,10 15,10,5 --amp off on --out $OUT/${STEP_CSV:-step_products_call37.csv} 2>&1 \
  | grep -v "^|\|^<\|^$" | tail -4
