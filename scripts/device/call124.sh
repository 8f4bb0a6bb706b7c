#!/usr/bin/env bash
# Device call, no build (call122's .so, carried; only Python docs changed
# since): the loader alone with the new GPU default (native prefetch thread)
# against lookahead (fused-prefetch), per-hop and the plain PyTorch GPU
# sampler, 3 fan-outs x 3 batch sizes; then whole epochs of loading.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 300 python3 -m pyg_fusesample.bench loader --graph products --device cuda \
  --variants fused fused-prefetch per-hop torch-gpu --fanouts 15,10 15,10,5 10,10,10 \
  --batch-sizes 512 1024 4096 --out $OUT/loader_gpu.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -40
timeout 200 python3 -m pyg_fusesample.bench epoch --graph products --device cuda \
  --variants fused fused-prefetch per-hop torch-gpu --fanouts 15,10 15,10,5 10,10,10 \
  --out $OUT/epoch_gpu.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -15
