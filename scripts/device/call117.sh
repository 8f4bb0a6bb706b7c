#!/usr/bin/env bash
# Device call, experiment build: one-vector lane layouts give a row just the
# lanes across its vectors (one edge slot, 32 / lanes rows a warp) when
# FUSESAMPLE_SPMM_ROW_GROUP=1, else a warp a row (hub, warp) as committed.
# SpMM tests with the switch on; the A/B on the committed one-vector cells
# of all four graphs.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
FUSESAMPLE_SPMM_ROW_GROUP=1 timeout 100 python3 -m pytest -q -p no:cacheprovider \
  tests/test_spmm_ops.py 2>&1 | tail -1
AB_ENV=FUSESAMPLE_SPMM_ROW_GROUP AB_MODES=warp=,rows=1 AB_CELLS=one-vector \
  SPMM_GRAPHS=hub_skewed,products_like,reddit_like,erdos_renyi \
  timeout 300 python3 scripts/device/spmm_kernel_ab.py 2>&1 | grep -v Warn | tee $OUT/spmm_row_group_call117.log
