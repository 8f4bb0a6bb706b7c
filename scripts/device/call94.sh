#!/usr/bin/env bash
# Device call, no build (call90's build of the kernels, carried gzipped in
# .base_so/; this tree changes only Python): FusedNeighborLoader's
# prefetch='thread' (batches assembled on a background thread) and the SpMM
# hub chunk of 4096. The CUDA tests of the loader, sampler and SpMM; then the
# products-like step at [15, 10] and [15, 10, 5], batch 1024, fp32 and bf16,
# with the loader modes and the floor.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_cuda_sampler.py \
  tests/test_loader.py tests/test_spmm_ops.py tests/test_auto_spmm_conv.py tests/test_autotune.py \
  2>&1 | tee "$OUT/cuda_tests_call94.log" | tail -4
timeout 330 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-thread fused-sync model-only --fanouts 15,10 15,10,5 --batch-sizes 1024 \
  --amp off on --out $OUT/step_products_thread.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -20
