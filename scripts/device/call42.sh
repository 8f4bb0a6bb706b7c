#!/usr/bin/env bash
# Device call: profile_step.py (loader vs model time per step, kernels under
# the profiler, unsynchronised per-batch loading).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 300 python3 scripts/device/profile_step.py 2>&1 | tee $OUT/profile_step.log
