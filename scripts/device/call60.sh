#!/usr/bin/env bash
# Device call: forward_host_probe.py (what in flight slows the bf16 step's host work).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 scripts/device/forward_host_probe.py > $OUT/forward_host_probe.log 2>&1
grep -v "^  File.*site-packages/torch/" $OUT/forward_host_probe.log | tail -60
