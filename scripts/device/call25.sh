#!/usr/bin/env bash
# Device call: where the fused step's transient memory goes (op-by-op trace),
# the tree-input CUDA tests, and the `spmm` rows of the hub-skewed graph again
# (the scheduler now confirms close probe verdicts on the whole graph).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 100 python3 -m pytest tests/test_tree_layer_input.py tests/test_autotune.py -q -ra \
  -p no:cacheprovider 2>&1 | tail -3
timeout 120 python3 scripts/device/memory_trace.py --fanout 15,10 > $OUT/memory_trace.log 2>&1
timeout 120 python3 scripts/device/memory_trace.py --fanout 15,10 --amp > $OUT/memory_trace_amp.log 2>&1
head -1 $OUT/memory_trace.log $OUT/memory_trace_amp.log
FUSESAMPLE_AUTOTUNE_TELEMETRY=$OUT/hub_telemetry.jsonl timeout 200 python3 -m pyg_fusesample.bench \
  spmm --graphs hub --steps 20 --out $OUT/spmm_hub.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_hub.log
