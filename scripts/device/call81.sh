#!/usr/bin/env bash
# Device call: EXPERIMENT, the SpMM kernels' registers capped by
# __launch_bounds__ minimum blocks per SM (call80's Nsight Compute: the
# products-like fp32 F=32 rows kernel at 80 registers, 37.5% theoretical
# occupancy, DRAM 34% busy). Registers and local memory per instantiation,
# then the times per cap.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
export PATH=$PATH:/usr/local/cuda/bin
cuobjdump --dump-resource-usage pyg_fusesample/_C*.so | python3 scripts/device/kernel_resources.py spmm_ \
  | sort | uniq > "$OUT/spmm_min_blocks_resources.log"
grep -c . "$OUT/spmm_min_blocks_resources.log"; grep -E "LOCAL [1-9]" "$OUT/spmm_min_blocks_resources.log" | head -20
timeout 420 python3 scripts/device/spmm_min_blocks.py 2>&1 | tee "$OUT/spmm_min_blocks.log"
gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > "$OUT/_C.so.gz"
