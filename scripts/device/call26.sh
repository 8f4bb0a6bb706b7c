#!/usr/bin/env bash
# Device call: FusedGraphSAGE's lean step with the bias gradient as a GEMM --
# build, the CUDA tests it touches (and the examples' --capture), the
# op-by-op memory trace, then the products and Reddit-like `sage` rows.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 150 python3 -m pytest tests/test_tree_layer_input.py tests/test_fused_sage.py \
  tests/test_sample_aggregate_op.py tests/test_ogb_examples.py tests/test_autotune.py \
  -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/cuda_tests_sage.log" | tail -3
timeout 90 python3 scripts/device/memory_trace.py --fanout 15,10 > $OUT/memory_trace.log 2>&1
head -1 $OUT/memory_trace.log
V="pyg fused-loader fused-sage fused-sage-emb fused-sage-graph fused-sage-emb-graph"
timeout 200 python3 -m pyg_fusesample.bench sage --graph products --device cuda --variants $V \
  --num-workers 8 --fanouts 15,10 25,10 --amp off on --out $OUT/sage_products.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
timeout 200 python3 -m pyg_fusesample.bench sage --graph reddit --device cuda --variants $V \
  --num-workers 8 --fanouts 25,10 --amp off on --out $OUT/sage_reddit.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
