#!/usr/bin/env bash
# Device call, no build (call129's .so, carried): call100's two step runs
# again with the native-thread default -- the products-like [15, 10, 5] step
# in 2 interleaved rounds (default loader, prefetch=True lookahead, floor;
# batch 512 / 1024 / 4096; fp32 and bf16), and NeighborLoader (8 workers)
# against the default loader and the floor at batch 1024, both fan-outs,
# both precisions, 2 rounds.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 260 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-prefetch model-only --fanouts 15,10,5 --batch-sizes 512 1024 4096 \
  --amp off on --rounds 2 --out $OUT/step_products_rounds_3hop.csv 2>&1 | sed -n '/own round/,$p'
timeout 300 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants pyg fused model-only --num-workers 8 --fanouts 15,10 15,10,5 --batch-sizes 1024 \
  --amp off on --rounds 2 --out $OUT/step_products_rounds_pyg.csv 2>&1 | sed -n '/own round/,$p'
