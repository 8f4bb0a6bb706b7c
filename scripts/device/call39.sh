#!/usr/bin/env bash
# Device call: build with the shared launch/check helpers and the SpMM's
# two-non-zeros-per-pass loop for 16-bit rows (plain index loads); SpMM
# variants incl. intermediate lane layouts (SPMM_LANES) on the products-like
# and hub-skewed graphs; then the whole test suite.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
SPMM_LANES=4,8 SPMM_F=32,128 timeout 240 python3 scripts/device/spmm_timing.py products hub 2>&1 \
  | tee $OUT/spmm_variants.log
timeout 200 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -4 | tee $OUT/all_tests_h200.log
