#!/usr/bin/env bash
# Device call: call73's build carried (REBUILD=0, the tree's kernels): the
# SpMM CUDA tests with the new capture test (the hub variants' fork/join of
# streams inside a CUDA graph).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 150 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -3
