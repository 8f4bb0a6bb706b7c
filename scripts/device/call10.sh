#!/usr/bin/env bash
# Device call: profile a loader batch (see profile_loader.py).
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
REBUILD=1 bash scripts/device/build.sh > /dev/null || exit 1
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
python3 scripts/device/profile_loader.py 2>&1 | tee $OUT/profile.log | cut -c1-170
