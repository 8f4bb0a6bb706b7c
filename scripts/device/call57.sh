#!/usr/bin/env bash
# Device call: profile_step_amp.py (the bf16 arxiv-like steps of call56).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 400 python3 scripts/device/profile_step_amp.py > $OUT/profile_step_amp.log 2>&1
head -16 $OUT/profile_step_amp.log
grep -A22 "^--- " $OUT/profile_step_amp.log | cut -c1-60,100-200 | head -120
