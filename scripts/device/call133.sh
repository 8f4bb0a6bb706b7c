#!/usr/bin/env bash
# Device call, no build (call129's .so, carried): does the fused sampling
# kernel, a cooperative launch that fills every SM to its occupancy limit,
# hold the training step's kernels back while the native thread samples in
# the background? The [15, 10] batch-1024 step (default loader against the
# floor, fp32 and bf16, 2 rounds each) in separate processes, alternating
# FUSESAMPLE_BLOCKS_PER_SM unset (occupancy limit) / 1 / 2, twice; then the
# loader alone (synchronised, sampling + gathers) under each setting.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
log=$OUT/blocks_per_sm_ab_call133.log
for pass in 1 2; do
  for bps in default 1 2; do
    if [ $bps = default ]; then unset FUSESAMPLE_BLOCKS_PER_SM; else export FUSESAMPLE_BLOCKS_PER_SM=$bps; fi
    timeout 90 python3 -m pyg_fusesample.bench step --graph products --device cuda --steps 100 \
      --variants fused model-only --fanouts 15,10 --batch-sizes 1024 --amp off on --rounds 2 \
      --out /tmp/ab_${bps}_${pass}.csv > /tmp/ab.log 2>&1
    echo "pass $pass blocks/SM $bps rc=$?" | tee -a $log
    grep -E "\| (fused|model-only) \|" /tmp/ab.log | tail -4 | tee -a $log
  done
done
for bps in default 1 2; do
  if [ $bps = default ]; then unset FUSESAMPLE_BLOCKS_PER_SM; else export FUSESAMPLE_BLOCKS_PER_SM=$bps; fi
  timeout 80 python3 -m pyg_fusesample.bench loader --graph products --device cuda --steps 60 \
    --variants fused --fanouts 15,10 15,10,5 --batch-sizes 512 1024 4096 --out /tmp/l_${bps}.csv > /tmp/l.log 2>&1
  echo "loader alone, blocks/SM $bps rc=$?" | tee -a $log
  python3 -c "
import csv; [print(r['fanout'], r['batch_size'], r['variant'], 'loader_ms', r['loader_ms'], 'edges/s', r['sampled_edges_per_s']) for r in csv.DictReader(open('/tmp/l_${bps}.csv'))]" | tee -a $log
done
