#!/usr/bin/env bash
# Device call: the step matrix on the arxiv-like graph (fan-outs [15,10],
# [15,10,5], [10,10,10]; batch 512/1024/4096; NeighborLoader with 0 and 8
# workers, FusedNeighborLoader fused and per-hop, the plain PyTorch GPU
# sampler, pre-sampled batches), AMP given by $AMP (off for call55, on for
# call56); extension carried from call50 (REBUILD=0).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
AMP=${AMP:-off}
timeout 560 python3 -m pyg_fusesample.bench step --graph arxiv --device cuda \
  --variants pyg fused per-hop torch-gpu model-only --num-workers 0 8 \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --amp $AMP \
  --out $OUT/step_arxiv_amp_$AMP.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -40
