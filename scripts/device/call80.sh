#!/usr/bin/env bash
# Device call: where the SpMM rows kernel's time goes on the cells short of
# a target (Nsight Compute: speed of light, memory tables, occupancy, warp
# stalls), products-like fp32 F=32 and Erdos-Renyi bf16 F=128 against fp32
# F=64 (the same 256 bytes per gather); then whether the model-only floor of
# the step benchmark is the model's own step time (floor_probe.py).
# Extension carried (call73 build; the kernels of HEAD).
export REBUILD=${REBUILD:-0}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
NCU="ncu --clock-control none --kernel-name regex:spmm_rows_kernel --launch-skip 2 --launch-count 1 \
 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
 --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats"
for cfg in "products float32 32 hub 538 0" "er bfloat16 128 warp 0 16" "er float32 64 subwarp 0 0" \
           "er bfloat16 128 warp 0 0"; do
  echo "=== $cfg"
  timeout 150 $NCU python3 scripts/device/spmm_ncu_target.py $cfg > "$OUT/ncu_${cfg// /_}.log" 2>&1
  echo "rc $?"
  grep -E "spmm_ncu|Duration|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Stall|Issued Warp|No Eligible|Active Warps Per" \
    "$OUT/ncu_${cfg// /_}.log" | head -40
done
timeout 240 python3 scripts/device/floor_probe.py 2>&1 | tee "$OUT/floor_probe.log"
