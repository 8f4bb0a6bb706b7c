#!/usr/bin/env bash
# Device call: rebuild, full CUDA tests + sanitizers, the demo on the GPU.
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
REBUILD=1 bash scripts/device/build.sh || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
bash scripts/device/check.sh
python3 -m pyg_fusesample.demo --epochs 3 2>&1 | grep -v "it/s\|s/it" | tee $OUT/demo_gpu.log | tail -9
