#!/usr/bin/env bash
# Device call: call64 with bf16 autocast, loader variants and the floor only
# (the device time left did not allow torch-gpu and NeighborLoader rows).
AMP=on VARIANTS="fused fused-sync per-hop model-only" exec bash "$(dirname "$0")/call64.sh"
