#!/usr/bin/env bash
# Device call, no build (call90's build, .base_so/; Python changes only): the
# whole suite; the [15, 10] step rows of call94 again (is prefetch='thread''s
# gain repeatable); the `spmm` benchmark on all four graphs with hub chunks of
# 4096.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 170 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -3 | tee $OUT/all_tests_h200.log
timeout 120 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 60 \
  --variants fused fused-thread fused-sync model-only --fanouts 15,10 --batch-sizes 1024 \
  --amp off on --out $OUT/step_products_thread_repeat.csv 2>&1 | grep -v "^|\|^<\|^$" | tail -9
timeout 280 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench.log
grep -c "F=" $OUT/spmm_bench.log
