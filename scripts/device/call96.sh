#!/usr/bin/env bash
# Device call, no build (call90's kernels): compute-sanitizer memcheck on the
# prefetch='thread' tests; the products-like [15, 10] step at batch 512 and
# 4096 with the default loader, prefetch='thread' and the floor.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
  tests/test_cuda_sampler.py -k "prefetch_thread" 2>&1 | tail -4 | tee "$OUT/sanitizer_prefetch_thread.log"
echo "memcheck rc ${PIPESTATUS[0]}" | tee -a "$OUT/sanitizer_prefetch_thread.log"
timeout 300 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-thread model-only --fanouts 15,10 --batch-sizes 512 4096 \
  --amp off on --out $OUT/step_products_thread_batches.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -13
