#!/usr/bin/env bash
# On the GPU machine, after build.sh: compute-sanitizer memcheck and racecheck
# over a set of CUDA tests. Arguments go to pytest (default: the sampler's CUDA
# tests without the >2^31-edge test, which needs 13 GB under instrumentation).
# Logs: $OUT/sanitizer_<tool><SANITIZE_TAG>.log; exit status non-zero if a
# tool fails. SANITIZE_TOOLS picks the tools (default "memcheck racecheck").
# Child processes (tests that run cases in subprocesses) are checked too.
#   bash benchmarks/device/sanitize.sh tests/test_spmm_ops.py -k hub
#   SANITIZE_TOOLS=memcheck SANITIZE_TAG=_walks bash benchmarks/device/sanitize.sh tests/test_random_walk_op.py -m cuda
set -o pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
OUT=${OUT:-/tmp}
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(tests/test_cuda_sampler.py -k "not 2_31")
status=0
for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
  log=$OUT/sanitizer_$tool${SANITIZE_TAG:-}.log
  timeout ${SANITIZE_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 3 \
    --target-processes all \
    python3 -m pytest -q -p no:cacheprovider "${args[@]}" > "$log" 2>&1
  rc=$?
  # One SUMMARY line per process checked (the pytest process and its children).
  checked=$(grep -c 'SUMMARY' "$log"); bad=$(grep 'SUMMARY' "$log" | grep -vc ': 0 ')
  echo "$tool rc=$rc: $(grep -E 'passed|failed' "$log" | tail -1); $checked processes, $bad with errors; $(grep -m1 'SUMMARY' "$log")"
  [ "$bad" -ne 0 ] && [ $rc -eq 0 ] && rc=3
  [ $rc -ne 0 ] && status=$rc
done
exit $status
