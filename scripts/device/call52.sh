#!/usr/bin/env bash
# Device call: call51 again after the harness stops NeighborLoader's workers
# at the end of their row (in call51 they prefetched on, with persistent
# workers, into the next rows' timing), with 60 timed steps per row.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
B="python3 -m pyg_fusesample.bench"
timeout 540 $B step --graph products --device cuda --steps 60 \
  --variants pyg fused fused-sync per-hop torch-gpu model-only --num-workers 8 \
  --fanouts 15,10 15,10,5 --amp off on --out $OUT/step_products.csv 2>&1 \
  | grep -v "^|\|^<\|^$" | tail -25
