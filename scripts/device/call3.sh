#!/usr/bin/env bash
# Device call: build, CUDA tests, sanitizers, loader sweeps on products-like.
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
bash scripts/device/build.sh 2>&1 | tee $OUT/build_check.log || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
cp pyg_fusesample/_C*.so $OUT/
python3 -m pytest tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py -q -ra 2>&1 | tee $OUT/cuda_tests.log | tail -4
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_cuda_sampler.py -k "not 2_31 and (long or induced or empty or loader or uniform or bad)" \
    > $OUT/sanitizer_$tool.log 2>&1; echo "sanitizer $tool rc=$?"; tail -1 $OUT/sanitizer_$tool.log
done
R=benchmarks/results
python3 -m pyg_fusesample.bench loader --graph products --device cuda \
  --variants fused per-hop torch-gpu --fanouts 15,10 15,10,5 10,10,10 \
  --batch-sizes 512 1024 4096 --out $OUT/loader_gpu.csv 2>&1 | grep -v "^|" | tail -30
python3 -m pyg_fusesample.bench epoch --graph products --device cuda \
  --variants fused per-hop torch-gpu --fanouts 15,10 15,10,5 --out $OUT/epoch_gpu.csv 2>&1 | grep -v "^|" | tail -8
