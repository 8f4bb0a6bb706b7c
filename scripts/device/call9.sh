#!/usr/bin/env bash
# Device call: final validation of the committed tree -- rebuild, CUDA tests,
# sanitizers, and the loader/step numbers for [15,10] at batch 1024.
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
REBUILD=1 bash scripts/device/build.sh || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
bash scripts/device/check.sh
python3 -m pyg_fusesample.bench loader --graph products --device cuda --variants fused per-hop \
  --fanouts 15,10 15,10,5 --batch-sizes 1024 --out /tmp/loader_check.csv 2>&1 | grep "w=" | grep -v "^|"
