#!/usr/bin/env bash
# Device call: the prefetching loader (batch i+1's sampling enqueued through
# fusesample::neighbor_sample_async as batch i is handed out). Sampler and
# loader CUDA tests, where the loader's host time goes, then the step
# (synchronised and pipelined) and epoch of the loader variants.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 240 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda_sampler.py \
  tests/test_neighbor_sample_op.py tests/test_loader.py 2>&1 | tail -15 | tee $OUT/cuda_tests_sampler.log
timeout 120 python3 scripts/device/loader_host_time.py 2>&1 | tee $OUT/loader_host_time.log | head -12
B="python3 -m pyg_fusesample.bench"
timeout 200 $B step --graph products --device cuda --variants fused fused-sync per-hop model-only \
  --fanouts 15,10 15,10,5 --amp off on --out $OUT/step_products_${TAG:-call47}.csv 2>&1 \
  | grep -v "^|\|^<\|^$" | tail -17
timeout 120 $B epoch --graph products --device cuda --variants fused fused-sync per-hop \
  --fanouts 15,10 15,10,5 --out $OUT/epoch_gpu_${TAG:-call47}.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -7
