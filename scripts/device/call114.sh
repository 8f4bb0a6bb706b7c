#!/usr/bin/env bash
# Device call, no build (call113's build, carried gzipped in .c_so/): the
# whole suite; memcheck and racecheck on the bf16 one-vector SpMM tests
# (the kernels that now gather 4 non-zeros a pass).
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1 | tee $OUT/all_tests_h200.log
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_spmm_ops.py -k "one_vector and (hub or warp) and bfloat16" \
    > /tmp/san.log 2>&1
  { echo "$tool rc=$? (3 = errors, 124 = timeout)"; tail -1 /tmp/san.log
    grep -m2 "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/san.log; } | tee -a "$OUT/sanitizer_one_vector.log"
done
