#!/usr/bin/env bash
# Device call, experiment build: the hub kernel takes its chunk's non-zeros
# in runs of 32 (coalesced index loads handed out by shuffles, 4 vectors in
# flight a lane), FUSESAMPLE_SPMM_HUB_RUNS=0 the strided slots as before.
# SpMM tests (runs); the A/B on every hub-split cell of the committed
# benchmark; the `spmm` benchmark on all four graphs with runs.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
cuobjdump --dump-resource-usage pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so \
  | python3 scripts/device/kernel_resources.py spmm_hub_kernel > $OUT/spmm_hub_resources_call110.log 2>&1
grep -c LOCAL $OUT/spmm_hub_resources_call110.log; grep -v "LOCAL 0" $OUT/spmm_hub_resources_call110.log | head -8
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -1
AB_ENV=FUSESAMPLE_SPMM_HUB_RUNS AB_MODES=runs=1,strided=0 timeout 200 python3 scripts/device/spmm_kernel_ab.py 2>&1 | tee $OUT/spmm_hub_runs_call110.log
timeout 200 python3 -m pyg_fusesample.bench spmm --graphs products hub reddit er \
  --steps 20 --no-gcn --out $OUT/spmm_h200_call110.csv 2>&1 | grep -v "^|\|^<\|^$" > $OUT/spmm_bench_call110.log
grep -c "F=" $OUT/spmm_bench_call110.log
