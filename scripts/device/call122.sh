#!/usr/bin/env bash
# Device call, build: the native prefetch thread on a CUDA stream of its own,
# and prefetch='thread' the loader's GPU default for plain batches. The
# loader, sampler and prefetcher tests; the products-like [15, 10] step in 3
# interleaved rounds at batch 512 / 1024 / 4096, fp32 and bf16: default
# loader (native thread), fused-prefetch (lookahead, the old default), floor.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_sampler.py \
  tests/test_batch_prefetcher.py tests/test_loader.py tests/test_bench.py 2>&1 | tail -15 | tee $OUT/tests_call122.log
timeout 400 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-prefetch model-only --fanouts 15,10 --batch-sizes 512 1024 4096 \
  --amp off on --rounds 3 --out $OUT/step_products_native.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -3
sed -n '/Median/,$p' $OUT/step_products_native.md
