#!/usr/bin/env bash
# Device call: step_sync_probe.py (three interleaved rounds).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 200 python3 scripts/device/step_sync_probe.py > $OUT/step_sync_probe_rounds.log 2>&1
grep -v "^  File.*site-packages/torch/" $OUT/step_sync_probe_rounds.log | tail -60
