#!/usr/bin/env bash
# Device call, no build: after the review (loader iterator dispatch, harness
# prefetch table, the CUDA loader tests' shared data and batch comparison):
# the sampler/loader CUDA tests and the harness tests.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_cuda_sampler.py \
  tests/test_loader.py tests/test_bench.py 2>&1 | tee "$OUT/cuda_tests_loader.log" | tail -4
