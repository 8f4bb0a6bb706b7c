#!/usr/bin/env bash
# Device call: build with the chunk kernels instantiated only for the
# hub-split variants (if constexpr on the family); SpMM / autotune /
# AutoSpMMConv tests; the extension's size and SpMM kernel count.
export QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
source "$(dirname "$0")/prelude.sh"
ls -la pyg_fusesample/_C*312*.so
cuobjdump --dump-resource-usage pyg_fusesample/_C*312*.so 2>/dev/null \
  | python3 scripts/device/kernel_resources.py spmm_ | awk '{print $1}' | sed 's/ILb.*//' | sort | uniq -c
timeout 150 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -2
