#!/usr/bin/env bash
# Device call: call70's `spmm` benchmark on the Reddit-like and Erdos-Renyi
# graphs (REBUILD=0: call70's build on the still-warm machine); racecheck and
# memcheck on the SpMM CUDA tests (the hub chunks now run on a second stream
# and combine in shared memory with every thread).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 300 python3 -m pyg_fusesample.bench spmm --graphs reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench_b.log \
  | grep "F=\(16\|32\|128\) \|GCN"
for tool in racecheck memcheck; do
  timeout 130 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m pytest -q -x \
    tests/test_spmm_ops.py -k "cuda and hub" -p no:cacheprovider > /tmp/san_$tool.log 2>&1
  echo "$tool rc=$?"; tail -1 /tmp/san_$tool.log; grep -m2 "ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/san_$tool.log
done 2>&1 | tee "$OUT/sanitizer_spmm.log"
