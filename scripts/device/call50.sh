#!/usr/bin/env bash
# Device call: sampler / loader / gather CUDA tests after the prefetch and
# gather_rows_list changes, the loader sweep (synchronised latency and the
# pipelined period per batch) and whole epochs of loading; the built
# extension comes back compressed for call51.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
gzip -1 -c pyg_fusesample/_C*.so > $OUT/_C.so.gz
timeout 200 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda_sampler.py \
  tests/test_neighbor_sample_op.py tests/test_loader.py 2>&1 | tail -4 | tee $OUT/cuda_tests_sampler.log
B="python3 -m pyg_fusesample.bench"
timeout 220 $B loader --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 10,10,10 --batch-sizes 512 1024 4096 --out $OUT/loader_gpu.csv 2>&1 \
  | grep -v "^|\|^<\|^$" | tail -28
timeout 150 $B epoch --graph products --device cuda --variants fused per-hop torch-gpu \
  --fanouts 15,10 15,10,5 10,10,10 --out $OUT/epoch_gpu.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -10
