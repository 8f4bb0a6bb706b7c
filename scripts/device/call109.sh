#!/usr/bin/env bash
# Device call, no build (call108's build: main's kernels; carried gzipped in
# .b_so/): the final tree's SpMM, autotune, AutoSpMMConv, sampler, loader
# and harness tests (after call107 only Python changed: the scheduler's
# fastest-candidate helper, documentation).
export REBUILD=0 QUIET_BUILD=1
gunzip -c .b_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 250 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py tests/test_cuda_sampler.py tests/test_loader.py tests/test_bench.py \
  2>&1 | tee $OUT/cuda_tests_final.log | tail -1
