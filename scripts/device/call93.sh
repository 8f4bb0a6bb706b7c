#!/usr/bin/env bash
# Device call, no build: A = call90's build of HEAD (.base_so/), B = call92's
# build (both gzipped) (hub rows of one chunk written by the hub kernel; .b_so/). Where does
# B lose 8% at float32 F=32: each kernel's device time (spmm_profile.py) in
# both. Then the background-thread loader probe again, 5 rounds.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .b_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && cp -r pyg_fusesample /tmp/base/ \
  && gunzip -c .base_so/_C312.so.gz > /tmp/base/pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
export SPMM_PROFILE=hub:float32:32:hub-subwarp:80:0,products:float32:32:hub-subwarp:71:0,hub:bfloat16:16:hub-subwarp:80:0
for round in 1 2; do
  echo "--- A, round $round"
  PYTHONPATH=/tmp/base:$PYTHONPATH timeout 100 python3 scripts/device/spmm_profile.py 2>&1 | tee -a "$OUT/spmm_profile_a.log"
  echo "--- B, round $round"
  timeout 100 python3 scripts/device/spmm_profile.py 2>&1 | tee -a "$OUT/spmm_profile_b.log"
done
THREAD_ROUNDS=5 timeout 250 python3 scripts/device/thread_probe.py 2>&1 | tee "$OUT/thread_probe.log"
