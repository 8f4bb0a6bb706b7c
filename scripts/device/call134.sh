#!/usr/bin/env bash
# Device call, no build (call129's .so, carried; the tree's C++ is call129's):
# the whole test suite at the closing commit of issue 3, with faulthandler.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 400 python3 -m pytest -q -p no:cacheprovider -o faulthandler_timeout=120 tests > /tmp/suite.log 2>&1
echo "suite rc=$?" | tee $OUT/all_tests_h200_call134.log
grep -E "^FAILED|^ERROR|Timeout" /tmp/suite.log | head -20 | tee -a $OUT/all_tests_h200_call134.log
tail -1 /tmp/suite.log | tee -a $OUT/all_tests_h200_call134.log
