#!/usr/bin/env bash
# Device call: profile a loader batch (see profile_loader.py).
export REBUILD=1
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
python3 scripts/device/profile_loader.py 2>&1 | tee $OUT/profile.log | cut -c1-170
