#!/usr/bin/env bash
# Device call: the bf16 arxiv-like step matrix again, NeighborLoader rows
# last and prefetch off (fused-sync) beside on (fused): call56 ran fused
# right after the NeighborLoader rows and measured it slower than per-hop
# everywhere, while call61's interleaved rounds showed only a first-round
# (order) effect.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 560 python3 -m pyg_fusesample.bench step --graph arxiv --device cuda \
  --variants fused-sync fused per-hop torch-gpu model-only pyg --num-workers 0 8 \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --amp on \
  --settle-steps ${SETTLE:-0} --out $OUT/step_arxiv_amp_on_${TAG:-call62}.csv 2>&1 | grep -v "^|\|^<\|^$" | grep -v "pyg w=" | tail -46
