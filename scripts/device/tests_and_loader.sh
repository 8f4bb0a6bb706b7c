#!/usr/bin/env bash
# Device call A: build, CUDA tests, sanitizers, launch tuning, loader sweeps.
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
bash scripts/device/build.sh || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
cp pyg_fusesample/_C*.so $OUT/ 2>/dev/null
python3 -m pytest tests/test_cuda_sampler.py -q -x -ra -k bad_inputs > $OUT/bad_inputs.log 2>&1
echo "bad_inputs rc=$?"; tail -3 $OUT/bad_inputs.log
if grep -q "Segmentation" $OUT/bad_inputs.log; then
  timeout 120 cuda-gdb -batch -ex run -ex bt --args python3 -m pytest -q -p no:faulthandler \
    tests/test_cuda_sampler.py -k bad_inputs > $OUT/gdb.log 2>&1; grep -A25 "SIGSEGV" $OUT/gdb.log | head -40
fi
python3 -m pytest tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py -q -ra --deselect tests/test_cuda_sampler.py::test_cuda_bad_inputs 2>&1 | tee $OUT/cuda_tests.log | tail -6
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_cuda_sampler.py -k "not 2_31 and not bad_inputs and (long or induced or empty or loader or uniform)" \
    > $OUT/sanitizer_$tool.log 2>&1; echo "sanitizer $tool rc=$?"; tail -2 $OUT/sanitizer_$tool.log
done
for bps in 1 2 4; do echo "blocks/SM $bps"; FUSESAMPLE_BLOCKS_PER_SM=$bps python3 scripts/device/op_timing.py 1000000 2>&1 | grep "15, 10, 5\]\|10, 10, 10\] batch 1024"; done
