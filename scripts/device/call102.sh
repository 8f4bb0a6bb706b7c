#!/usr/bin/env bash
# Device call, build: the SpMM light-row kernel takes an order of work items
# (CSRGraph.light_rows: the light rows by length) for the hub-split variants.
# The SpMM / autotune / AutoSpMMConv tests; then each hub-split cell of the
# committed benchmark timed with the rows in length order and in index order.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -3
timeout 280 python3 scripts/device/spmm_light_order.py 2>&1 | tee $OUT/spmm_light_order_call102.log
