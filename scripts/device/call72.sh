#!/usr/bin/env bash
# Device call: the whole test suite on the tree of call70 (its extension
# carried, REBUILD=0); racecheck on the SpMM tests that take the concurrent
# hub launch (call71's racecheck over every hub test ran out of time).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -4 | tee $OUT/all_tests_h200.log
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_spmm_ops.py -k "raw_op_hub_chunks_cuda or (bf16_cuda and hub)" \
  > /tmp/san.log 2>&1
{ echo "racecheck rc=$? (3 = hazards, 124 = timeout)"; tail -1 /tmp/san.log
  grep -m2 "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/san.log; } | tee $OUT/racecheck_spmm.log
