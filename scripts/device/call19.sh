#!/usr/bin/env bash
# Device call: the final tree -- build, then the whole test suite on the GPU
# machine (CUDA tests included; the Cora tests skip there: shared/ is not
# carried).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 420 python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/all_tests.log" | tail -12
