#!/usr/bin/env bash
# Device call: the final tree -- build, the whole suite on the GPU machine.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 240 python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/all_tests.log" | tail -3
