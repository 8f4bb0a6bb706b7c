#!/usr/bin/env bash
# Device call: a second sample of the loader-vs-floor epoch ratio on another
# machine (fused-prefetch measured 1.25x the floor in call20 and 1.11x in
# call29): fused loader with and without prefetch and the pre-sampled floor.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 400 python3 -m pyg_fusesample.bench sage-curve --graph products --device cuda \
  --variants fused-loader fused-prefetch model-only --fanouts 15,10 --epochs ${EPOCHS:-6} \
  --out $OUT/curve_loader_repeat.csv 2>&1 | grep "epoch" | tee $OUT/curve_repeat.log
