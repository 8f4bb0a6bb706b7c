#!/usr/bin/env bash
# Device call: build with the SpMM/SDDMM/softmax CUDA kernels; op-level check
# and timing of every SpMM variant against cuSPARSE (no scheduler).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
python3 scripts/device/spmm_timing.py products hub 2>&1 | tee $OUT/spmm_timing.log
