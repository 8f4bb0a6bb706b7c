#!/usr/bin/env bash
# Device call, build: call102's light-row order with the row looked up again
# instead of carried (call102's one-vector kernels ran 25-40% slower than
# the committed run in both orders: registers?). Resources of this build and
# of call90's; the SpMM tests; the length/index-order A/B again.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
{ echo "== this build"; cuobjdump --dump-resource-usage pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so \
    | python3 scripts/device/kernel_resources.py spmm_rows_kernel
  echo "== call90's build"; gunzip -c .base_so/_C312.so.gz > /tmp/old.so
  cuobjdump --dump-resource-usage /tmp/old.so | python3 scripts/device/kernel_resources.py spmm_rows_kernel
} > $OUT/spmm_resources_call103.log 2>&1
grep -c LOCAL $OUT/spmm_resources_call103.log; grep -v "LOCAL 0" $OUT/spmm_resources_call103.log | head -20
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -3
timeout 280 python3 scripts/device/spmm_light_order.py 2>&1 | tee $OUT/spmm_light_order_call103.log
