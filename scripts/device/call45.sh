#!/usr/bin/env bash
# Device call: the whole test suite on the final tree.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -4 | tee $OUT/all_tests_h200.log
