#!/usr/bin/env bash
# Device call: call62 again with the harness's settle steps (untimed steps
# before the first variant of each setting), to check the order effect is
# gone.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 560 python3 -m pyg_fusesample.bench step --graph arxiv --device cuda \
  --variants fused-sync fused per-hop torch-gpu model-only pyg --num-workers 0 8 \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --amp on \
  --out $OUT/step_arxiv_amp_on_call63.csv 2>&1 | grep -v "^|\|^<\|^$" | grep -v "pyg w=" | tail -46
