#!/usr/bin/env bash
# Device call: compute-sanitizer memcheck and racecheck on the sparse CUDA
# tests of the 'hub-subwarp' variant, and 'hub-subwarp' at the p99 threshold
# too on the narrow-F cells (is a higher threshold better on products?).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_spmm_ops.py -k "cuda and hub-subwarp" -p no:cacheprovider > /tmp/san_$tool.log 2>&1
  echo "$tool rc=$?"; tail -1 /tmp/san_$tool.log; grep -m2 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san_$tool.log
done 2>&1 | tee "$OUT/sanitizer_spmm.log"
SPMM_F=16,32 SPMM_PACKED_P99=1 timeout 150 python3 scripts/device/spmm_timing.py products hub reddit \
  2>&1 | tee $OUT/spmm_variants_p99.log
