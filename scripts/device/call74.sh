#!/usr/bin/env bash
# Device call: call73's build carried (REBUILD=0): the `spmm` benchmark on the
# Reddit-like and Erdos-Renyi graphs; the whole suite; racecheck on the tests
# that take the concurrent hub launch.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 300 python3 -m pyg_fusesample.bench spmm --graphs reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench_b.log \
  | grep "F=\(16\|32\|128\|256\) \|GCN"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -2 | tee $OUT/all_tests_h200.log
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_spmm_ops.py -k "raw_op_hub_chunks_cuda or (bf16_cuda and hub)" \
  > /tmp/san.log 2>&1
{ echo "racecheck rc=$? (3 = hazards, 124 = timeout)"; tail -1 /tmp/san.log
  grep -m2 "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/san.log; } | tee $OUT/racecheck_spmm.log
