#!/usr/bin/env bash
# Device call: the full `spmm` benchmark with the scheduler's whole-graph
# confirmation of close probes, then the sampler op timing at several
# cooperative-grid sizes (FUSESAMPLE_BLOCKS_PER_SM; the default is the
# occupancy maximum): fewer resident blocks make every grid barrier cheaper.
export REBUILD=${REBUILD:-1}
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
timeout 330 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --out $OUT/spmm_h200.csv 2>&1 | grep -v "^|\|^<\|^$" | tee $OUT/spmm_bench.log | tail -3
for b in default 1 2 4; do
  echo "== FUSESAMPLE_BLOCKS_PER_SM=$b"
  if [ $b = default ]; then timeout 60 python3 scripts/device/op_timing.py
  else FUSESAMPLE_BLOCKS_PER_SM=$b timeout 60 python3 scripts/device/op_timing.py; fi
done 2>&1 | tee $OUT/op_timing_blocks.log
timeout 90 python3 scripts/device/captured_memory.py 2>&1 | head -8 | tee $OUT/captured_memory.log
