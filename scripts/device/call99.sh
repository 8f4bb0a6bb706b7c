#!/usr/bin/env bash
# Device call, no build (call90's kernels, carried gzipped in .base_so/;
# this tree changes only Python): why an abandoned prefetch='thread' epoch's
# thread outlived its iterator under memcheck (call97), plainly and under
# memcheck; then the products-like [15, 10] step in 3 interleaved rounds
# (the harness's new --rounds) with the default loader, prefetch='thread'
# and the floor, at batch 512 / 1024 / 4096, fp32 and bf16.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
log=$OUT/thread_stop_probe.log
echo "== plain" > $log
timeout 100 python3 scripts/device/thread_stop_probe.py >> $log 2>&1
echo "== memcheck" >> $log
THREAD_STOP_WAIT=20 timeout 200 compute-sanitizer --tool memcheck \
  python3 scripts/device/thread_stop_probe.py >> $log 2>&1
echo "memcheck rc $?" >> $log
grep -v "^  File.*site-packages" $log | head -80
timeout 330 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-thread model-only --fanouts 15,10 --batch-sizes 512 1024 4096 \
  --amp off on --rounds 3 --out $OUT/step_products_rounds.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -24
