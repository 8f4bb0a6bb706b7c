#!/usr/bin/env bash
# Device call: the full `spmm` benchmark with the scheduler re-ranking close
# kernels on the whole graph, and racecheck on a few 'hub-subwarp' CUDA tests
# (all 64 did not finish within call32's limit under racecheck).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m pytest -q \
  tests/test_spmm_ops.py -k "cuda-hub-subwarp3-f32 or cuda-hub-subwarp0-f32" -p no:cacheprovider \
  > /tmp/san.log 2>&1; echo "racecheck rc=$?" | tee $OUT/racecheck_spmm.log
tail -1 /tmp/san.log | tee -a $OUT/racecheck_spmm.log; grep -m2 "RACECHECK SUMMARY" /tmp/san.log | tee -a $OUT/racecheck_spmm.log
timeout 360 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log | grep "F=\(16\|32\|64\) \|GCN"
