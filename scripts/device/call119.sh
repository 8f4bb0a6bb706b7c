#!/usr/bin/env bash
# Device call, no build (call118's build, carried gzipped in .c_so/): the
# whole suite; memcheck and racecheck on the one-vector SpMM tests of the
# packed variants (rows of 8, 16 and 32 lanes).
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1 | tee $OUT/all_tests_h200.log
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_spmm_ops.py -k "one_vector and subwarp" > /tmp/san.log 2>&1
  { echo "$tool rc=$? (3 = errors, 124 = timeout)"; grep -E "passed|failed" /tmp/san.log | tail -1
    grep -m2 "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/san.log; } | tee -a "$OUT/sanitizer_packed_one_vector.log"
done
