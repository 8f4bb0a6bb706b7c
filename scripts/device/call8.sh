#!/usr/bin/env bash
# Device call: rebuild, CUDA tests (incl. prefetch), sanitizers, and the
# training-step CSV with every variant (incl. fused-prefetch).
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
REBUILD=1 bash scripts/device/build.sh || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
python3 -m pytest tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py tests/test_loader.py -q -ra 2>&1 | tee $OUT/cuda_tests.log | tail -2
for tool in memcheck racecheck; do
timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
  tests/test_cuda_sampler.py -k "not 2_31 and (long or induced or empty or loader or uniform or bad or prefetch)" \
  >> $OUT/sanitizer.log 2>&1; echo "$tool rc=$?"; tail -1 $OUT/sanitizer.log
done
M=/tmp/md; mkdir -p $M
python3 -m pyg_fusesample.bench step --graph products --device cuda \
  --variants pyg fused fused-prefetch per-hop torch-gpu model-only --num-workers 0 8 \
  --fanouts 15,10 15,10,5 --amp off on --out $M/step_products.csv 2>&1 | grep "w=" | grep -v "^|"
cp $M/*.csv $OUT/
