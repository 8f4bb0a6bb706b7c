#!/usr/bin/env bash
# Device call: rebuild, full CUDA tests + sanitizers, the demo on the GPU.
export REBUILD=1
source "$(dirname "$0")/prelude.sh"
bash scripts/device/check.sh
python3 -m pyg_fusesample.demo --epochs 3 2>&1 | grep -v "it/s\|s/it" | tee $OUT/demo_gpu.log | tail -9
