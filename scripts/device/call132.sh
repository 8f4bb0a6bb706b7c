#!/usr/bin/env bash
# Device call, no build (call129's .so, carried): the products-like [15, 10]
# step in 4 interleaved rounds with the native-thread default (call125 ran 3;
# its ratios spread 1.15-1.22 at batch 1024): default loader, prefetch=True
# lookahead, floor; batch 512 / 1024 / 4096; fp32 and bf16.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 420 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-prefetch model-only --fanouts 15,10 --batch-sizes 512 1024 4096 \
  --amp off on --rounds 4 --out $OUT/step_products_rounds.csv 2>&1 | sed -n '/own round/,$p'
