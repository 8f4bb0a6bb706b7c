#!/usr/bin/env bash
# One device call: build, CUDA tests, sanitizers, op timing.
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
bash scripts/device/build.sh || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $OUT/gpu.txt
python3 -m pytest tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py -q -x -ra 2>&1 | tee $OUT/cuda_tests.log | tail -25
for tool in memcheck racecheck; do
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_cuda_sampler.py -k "equals_cpu and (15 or 100) and long or induced or empty" \
    > $OUT/sanitizer_$tool.log 2>&1; echo "sanitizer $tool rc=$?"; tail -3 $OUT/sanitizer_$tool.log
done
python3 scripts/device/op_timing.py 1000000 2>&1 | tee $OUT/op_timing.log
