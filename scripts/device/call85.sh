#!/usr/bin/env bash
# Device call: EXPERIMENT, the one-vector lane layouts (chosen by the
# scheduler for bf16 F=128 on the hub-skewed and Erdos-Renyi graphs) on a
# kernel that holds one vector a lane (the 2-vector kernel keeps a dead
# column's registers there), under caps of 4, 6, 8 blocks per SM
# (FUSESAMPLE_SPMM_ONE_VEC, read per call; 0: off).
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
cuobjdump --dump-resource-usage pyg_fusesample/_C*312*.so 2>/dev/null \
  | python3 scripts/device/kernel_resources.py spmm_rows | grep "Lb0E.*Li1ELi[468]E" > "$OUT/spmm_resources_call85.log"
cat "$OUT/spmm_resources_call85.log"
SPMM_KNOB=FUSESAMPLE_SPMM_ONE_VEC SPMM_SET=one_vector SPMM_BLOCKS=0,4,6,8 timeout 300 \
  python3 scripts/device/spmm_min_blocks.py 2>&1 | tee "$OUT/spmm_one_vector.log"
