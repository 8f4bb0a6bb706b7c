#!/usr/bin/env bash
# Device call: build of HEAD (the .so saved for later calls); does a
# background thread take the loader's host time out of the host-bound
# [15, 10] step (thread_probe.py); the SpMM hub chunk size on the cells short
# of a target (spmm_chunk_sweep.py).
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
gzip -c pyg_fusesample/_C*312*.so > "$OUT/_C312.so.gz"
timeout 200 python3 scripts/device/thread_probe.py 2>&1 | tee "$OUT/thread_probe.log"
timeout 200 python3 scripts/device/spmm_chunk_sweep.py 2>&1 | tee "$OUT/spmm_chunk_sweep.log"
