#!/usr/bin/env bash
# Device call: build; the CUDA tests of the sparse ops, the scheduler and
# AutoSpMMConv; compute-sanitizer on the spmm op tests; variant timing
# against cuSPARSE (products, hub-skewed).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
T=$(ls tests/test_spmm_ops.py tests/test_auto_spmm_conv.py tests/test_autotune.py 2>/dev/null)
python3 -m pytest $T -q -x -ra 2>&1 | tee "$OUT/cuda_tests_spmm.log" | tail -4
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_spmm_ops.py -k "cuda and not opcheck" > /tmp/san_$tool.log 2>&1
  echo "$tool rc=$?"; grep -m2 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san_$tool.log; tail -1 /tmp/san_$tool.log
done
python3 scripts/device/spmm_timing.py products hub 2>&1 | tee $OUT/spmm_timing.log
