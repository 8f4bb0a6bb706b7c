#!/usr/bin/env bash
# Device call: memset_probe.py.
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 scripts/device/memset_probe.py 2>&1 | tee $OUT/memset_probe.log | tail -12
