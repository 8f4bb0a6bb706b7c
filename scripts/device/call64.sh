#!/usr/bin/env bash
# Device call: the products-like step matrix the issue asks for (fan-outs
# [15,10], [15,10,5], [10,10,10]; batch 512/1024/4096), AMP given by $AMP (off
# for call64, on for call65); NeighborLoader with 8 workers only (with 0 a
# products step takes 0.2-1.3 s at batch 1024: call12). Extension carried
# from call50.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
AMP=${AMP:-off}
timeout 580 python3 -m pyg_fusesample.bench step --graph products --device cuda \
  --variants ${VARIANTS:-fused fused-sync per-hop torch-gpu model-only pyg} --num-workers 8 \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --amp $AMP \
  --out $OUT/step_products_matrix_amp_$AMP.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -56
