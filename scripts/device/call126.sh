#!/usr/bin/env bash
# Device call, build: BatchPrefetcher takes `lookahead`. The whole suite;
# the A/B of the native thread with and without fused sampling enqueued a
# batch ahead (call125's [15, 10] rounds were slower than call122's, on
# another machine); few files under $OUT.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
timeout 170 python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -2 | tee $OUT/tests_call126.log
timeout 250 python3 scripts/device/lookahead_ab.py 2>&1 | tee $OUT/lookahead_ab.log | tail -8
