#!/usr/bin/env bash
# Device call: the final tree's build (two-phases-per-hop sampler, SpMM with
# the bf16 widening only), its sampler / loader / sparse CUDA tests,
# compute-sanitizer memcheck and racecheck on the sampler's CUDA tests, and
# the sampling op fused vs per-hop on a products-sized power-law graph. The
# built extension comes back so later calls can carry it (REBUILD=0).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
so=$(ls pyg_fusesample/_C*.so); ls -la $so
# (26.6 MB: over the 16 MB a returned file may have, so later calls rebuild)
{ timeout 200 python3 -m pytest -q -m cuda tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py \
    tests/test_loader.py -p no:cacheprovider 2>&1 | tail -3
  timeout 100 python3 -m pytest -q -m cuda tests/test_spmm_ops.py -p no:cacheprovider 2>&1 | tail -2
} | tee $OUT/cuda_tests_sampler.log
for tool in memcheck racecheck; do
  if [ $tool = memcheck ]; then sel="equals_cpu or empty or bad or uniform or prefetch or gpu_data"
  else sel="(equals_cpu and not many) or empty or uniform"; fi
  timeout 170 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q \
    tests/test_cuda_sampler.py -k "$sel" -p no:cacheprovider > /tmp/san_$tool.log 2>&1
  echo "$tool rc=$? (3 = errors found, 124 = timeout)"; tail -1 /tmp/san_$tool.log
  grep -m3 "ERROR SUMMARY\|RACECHECK SUMMARY\|Invalid\|Race" /tmp/san_$tool.log
done 2>&1 | tee $OUT/sanitizer_sampler.log
timeout 90 python3 scripts/device/op_timing.py 2449029 2>&1 | tee $OUT/op_timing.log
