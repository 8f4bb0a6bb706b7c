#!/usr/bin/env bash
# Device call: training-step benchmark (all variants, AMP off/on) on the
# products-like and arxiv-like graphs, with the prebuilt extension.
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
REBUILD=0 bash scripts/device/build.sh || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
python3 -m pyg_fusesample.bench step --graph products --device cuda \
  --variants pyg fused per-hop torch-gpu model-only --num-workers 0 8 \
  --fanouts 15,10 15,10,5 --amp off on --out $OUT/step_products.csv 2>&1 | grep -v "^|" | tail -30
python3 -m pyg_fusesample.bench step --graph arxiv --device cuda \
  --variants pyg fused per-hop torch-gpu model-only --num-workers 8 \
  --fanouts 15,10 15,10,5 --amp off --out $OUT/step_arxiv.csv 2>&1 | grep -v "^|" | tail -12
