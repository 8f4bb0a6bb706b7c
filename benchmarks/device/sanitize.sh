#!/usr/bin/env bash
# On the GPU machine, after build.sh: compute-sanitizer memcheck and racecheck
# over a set of CUDA tests. Arguments go to pytest (default: the sampler's CUDA
# tests without the >2^31-edge test, which needs 13 GB under instrumentation).
# Logs: $OUT/sanitizer_<tool>.log; exit status non-zero if either tool fails.
#   bash benchmarks/device/sanitize.sh tests/test_spmm_ops.py -k hub
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
OUT=${OUT:-/tmp}
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(tests/test_cuda_sampler.py -k "not 2_31")
status=0
for tool in memcheck racecheck; do
  log=$OUT/sanitizer_$tool.log
  timeout ${SANITIZE_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 3 \
    python3 -m pytest -q -p no:cacheprovider "${args[@]}" > "$log" 2>&1
  rc=$?
  echo "$tool rc=$rc: $(grep -E 'passed|failed' "$log" | tail -1); $(grep -m1 'SUMMARY' "$log")"
  [ $rc -ne 0 ] && status=$rc
done
exit $status
