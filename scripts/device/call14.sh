#!/usr/bin/env bash
# Device call for the fused SAGE issue: build, the CUDA tests of the new op and
# layers (+ the sampler's), compute-sanitizer on the op's CUDA tests, then the
# `sage` benchmark on the products- and Reddit-like graphs and the products
# learning curves. CSVs and logs land in $OUT.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
python3 -m pytest tests/test_sample_aggregate_op.py tests/test_fused_sage.py \
  tests/test_cuda_sampler.py tests/test_neighbor_sample_op.py -q -ra 2>&1 \
  | tee "$OUT/cuda_tests.log" | tail -3
for tool in memcheck racecheck; do
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_sample_aggregate_op.py -k "cuda and not opcheck" >> "$OUT/sanitizer.log" 2>&1
  echo "$tool rc=$?"; tail -1 "$OUT/sanitizer.log"
done
V="pyg fused-loader fused-sage fused-sage-emb fused-sage-graph fused-sage-emb-graph"
python3 -m pyg_fusesample.bench sage --graph products --device cuda --variants $V \
  --num-workers 8 --fanouts 15,10 25,10 --amp off on --out $OUT/sage_products.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
python3 -m pyg_fusesample.bench sage --graph reddit --device cuda --variants $V \
  --num-workers 8 --fanouts 25,10 --amp off on --out $OUT/sage_reddit.csv \
  2>&1 | grep " w=" | tee -a $OUT/bench.log
python3 -m pyg_fusesample.bench sage-curve --graph products --device cuda \
  --variants pyg fused-sage fused-sage-graph --num-workers 8 --fanouts 15,10 \
  --epochs ${EPOCHS:-10} --out $OUT/sage_curve_products.csv 2>&1 | grep "epoch" \
  | tee -a $OUT/bench.log
