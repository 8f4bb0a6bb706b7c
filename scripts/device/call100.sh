#!/usr/bin/env bash
# Device call, no build (call90's kernels): under memcheck, what keeps an
# abandoned prefetch='thread' iterator alive (call99: a frame of its
# __init__; here the chain of holders above that frame); the products-like
# [15, 10, 5] step in 2 interleaved rounds (default loader, prefetch='thread',
# floor; batch 512 / 1024 / 4096; fp32 and bf16); NeighborLoader (8 workers)
# against the default loader and the floor at batch 1024, both fan-outs,
# both precisions, 2 rounds.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
log=$OUT/thread_stop_probe_holders.log
THREAD_STOP_WAIT=5 timeout 150 compute-sanitizer --tool memcheck \
  python3 scripts/device/thread_stop_probe.py > $log 2>&1
echo "memcheck rc $?" >> $log
grep -v "^  File.*site-packages" $log | head -60
timeout 200 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-thread model-only --fanouts 15,10,5 --batch-sizes 512 1024 4096 \
  --amp off on --rounds 2 --out $OUT/step_products_rounds_3hop.csv 2>&1 | sed -n '/own round/,$p'
timeout 220 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants pyg fused model-only --num-workers 8 --fanouts 15,10 15,10,5 --batch-sizes 1024 \
  --amp off on --rounds 2 --out $OUT/step_products_rounds_pyg.csv 2>&1 | sed -n '/own round/,$p'
