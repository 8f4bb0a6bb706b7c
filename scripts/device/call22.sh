#!/usr/bin/env bash
# Device call: first of the session -- build (shared headers changed since the
# last CUDA build), the whole suite, then the `spmm` benchmark again (the
# cuSPARSE baseline no longer casts its values per call). The built .so comes
# back so later calls can carry it (REBUILD=0).
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
cp pyg_fusesample/_C*.so "$OUT/" 2>/dev/null
timeout 200 python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/all_tests.log" | tail -4
timeout ${BENCH_S:-300} python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log | tail -5
