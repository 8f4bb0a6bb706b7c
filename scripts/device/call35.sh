#!/usr/bin/env bash
# Device call: build with the sampler's two-phases-per-hop redesign (single-
# pass look-back scans, next hop's count fused into the dedup scan) and the
# SpMM bfloat16 unpacking / int32 columns / streaming index loads; sampler
# CUDA tests; op timing fused vs per-hop; sparse CUDA tests; SpMM variants
# with int32 and int64 columns; opcode counts of the bf16 row kernel.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 240 python3 -m pytest -q -x tests/test_cuda_sampler.py -p no:cacheprovider 2>&1 \
  | tail -15 | tee $OUT/tests_sampler.log
{ timeout 70 python3 scripts/device/op_timing.py
  echo "== FUSESAMPLE_BLOCKS_PER_SM=2"
  FUSESAMPLE_BLOCKS_PER_SM=2 timeout 60 python3 scripts/device/op_timing.py; } 2>&1 | tee $OUT/op_timing.log
timeout 150 python3 -m pytest -q -x -m cuda tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py -p no:cacheprovider 2>&1 | tail -8 | tee $OUT/tests_spmm.log
{ SPMM_F=32,128,256 timeout 150 python3 scripts/device/spmm_timing.py products hub
  echo "== int64 columns"
  SPMM_COL64=1 SPMM_F=32,128 timeout 90 python3 scripts/device/spmm_timing.py products; } 2>&1 \
  | tee $OUT/spmm_variants.log
cuobjdump -sass pyg_fusesample/_C*.so | python3 scripts/device/sass_summary.py spmm_rows_kernel \
  > $OUT/sass_spmm.log 2>&1
