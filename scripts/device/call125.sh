#!/usr/bin/env bash
# Device call, build: the native prefetch thread enqueues fused GPU sampling
# one batch ahead (neighbor_sample_async) while it assembles the current
# batch. Loader, sampler, prefetcher and harness tests; the loader alone and
# whole epochs (default = native thread, fused-prefetch = lookahead, per-hop,
# torch-gpu); the [15, 10] step in 3 interleaved rounds.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_sampler.py \
  tests/test_batch_prefetcher.py tests/test_loader.py tests/test_bench.py 2>&1 | tail -4 | tee $OUT/tests_call125.log
timeout 200 python3 -m pyg_fusesample.bench loader --graph products --device cuda \
  --variants fused fused-prefetch per-hop torch-gpu --fanouts 15,10 15,10,5 10,10,10 \
  --batch-sizes 512 1024 4096 --out $OUT/loader_gpu.csv 2>&1 | grep "fused \|per-hop " | cut -c1-120
timeout 100 python3 -m pyg_fusesample.bench epoch --graph products --device cuda \
  --variants fused fused-prefetch per-hop torch-gpu --fanouts 15,10 15,10,5 10,10,10 \
  --out $OUT/epoch_gpu.csv 2>&1 | grep "epoch w" | cut -c1-120
timeout 280 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-prefetch model-only --fanouts 15,10 --batch-sizes 512 1024 4096 \
  --amp off on --rounds 3 --out $OUT/step_products_rounds.csv > /dev/null 2>&1
sed -n '/Median/,$p' $OUT/step_products_rounds.md
