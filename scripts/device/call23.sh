#!/usr/bin/env bash
# Device call: FusedGraphSAGE's lean training path (TreeLayerInput) -- build,
# the fused-layer CUDA tests, the products `sage` rows again (transient memory),
# and the hub-skewed GCN step's scheduler decisions (telemetry), which moved
# from 0.71x to 1.00x of GCNConv between two runs.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 150 python3 -m pytest tests/test_tree_layer_input.py tests/test_fused_sage.py \
  tests/test_sample_aggregate_op.py -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/cuda_tests_sage.log" | tail -3
V="pyg fused-loader fused-sage fused-sage-emb fused-sage-graph fused-sage-emb-graph"
timeout 330 python3 -m pyg_fusesample.bench sage --graph products --device cuda --variants $V \
  --num-workers 8 --fanouts 15,10 25,10 --amp off on --out $OUT/sage_products.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
FUSESAMPLE_AUTOTUNE_TELEMETRY=$OUT/hub_telemetry.jsonl timeout 90 python3 -m pyg_fusesample.bench \
  spmm --graphs hub --features 64 --dtypes float32 --steps 10 --out /tmp/hub.csv 2>&1 \
  | grep -v "^|\|^<\|^$" | tee $OUT/hub_gcn.log
