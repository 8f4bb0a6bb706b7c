# Sourced by every callN.sh: repository root, unbuffered Python, the
# extension built by build.sh (REBUILD=0 reuses a carried .so; QUIET_BUILD=1
# hides its output), and the carried wheels on the Python path.
set -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONUNBUFFERED=1
if [ "${QUIET_BUILD:-0}" = 1 ]; then
  bash scripts/device/build.sh > /dev/null || exit 1
else
  bash scripts/device/build.sh || exit 1
fi
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
