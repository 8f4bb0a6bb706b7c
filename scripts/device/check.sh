#!/usr/bin/env bash
# On the GPU machine, after build.sh: the CUDA-relevant test files, then
# compute-sanitizer memcheck and racecheck on the CUDA tests (the >2^31-edge
# test is left out of the sanitizer runs: 13 GB under instrumentation).
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
python3 -m pytest tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py \
  tests/test_loader.py -q -ra 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py \
    -k "not 2_31 and (long or induced or empty or loader or uniform or bad or prefetch or gather_rows)" \
    >> "$OUT/sanitizer.log" 2>&1
  echo "$tool rc=$?"; tail -1 "$OUT/sanitizer.log"
done
