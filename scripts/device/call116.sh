#!/usr/bin/env bash
# Device call, no build (call113's, carried in .c_so/): the re-timing
# scripts after their shared code moved to spmm_retime.py run as before
# (hub-skewed graph only; spmm_kernel_ab.py with a switch this build does
# not read, so both settings time the same kernel).
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
{
SPMM_PROFILE=hub:bfloat16:128:hub:640:16 timeout 100 python3 scripts/device/spmm_profile.py
SPMM_GRAPHS=hub_skewed ROUNDS=1 timeout 150 python3 scripts/device/spmm_light_order.py
AB_ENV=FUSESAMPLE_UNUSED AB_MODES=a=0,b=1 SPMM_GRAPHS=hub_skewed ROUNDS=1 \
  timeout 150 python3 scripts/device/spmm_kernel_ab.py
} 2>&1 | grep -v Warn | tee $OUT/spmm_retime_scripts_call116.log
