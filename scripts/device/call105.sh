#!/usr/bin/env bash
# Device call, build: the light-row order as a template flag of the rows
# kernel (kOrdered, hub-split variants only; the unordered kernels back to
# their code before orders). call104's benchmark had Erdos-Renyi's 'subwarp'
# 8-24% slower at F=16/32, and hub cells ~70 us slower through the public
# call than the raw op in call103: per-kernel device times of those cells
# with this build, and with call90's build and package (.base_so/.base_pkg,
# the tree before the order) on the same machine; the SpMM tests.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
mkdir -p $OUT/so && gzip -c pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so > $OUT/so/_C312.so.gz
export SPMM_PROFILE=er:bfloat16:16:subwarp:-1:0,er:float32:32:subwarp:-1:0,hub:float32:16:hub-subwarp:80:0,hub:bfloat16:16:hub-subwarp:80:0,hub:float32:32:hub-subwarp:80:0
timeout 150 python3 scripts/device/spmm_profile.py 2>&1 | grep -v "Warn\|warn" > $OUT/spmm_profile_call105_new.log
mkdir -p /tmp/base && cp -r .base_pkg/pyg_fusesample /tmp/base/
gunzip -c .base_so/_C312.so.gz > /tmp/base/pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
PYTHONPATH=/tmp/base:$PYTHONPATH timeout 150 python3 scripts/device/spmm_profile.py 2>&1 \
  | grep -v "Warn\|warn" > $OUT/spmm_profile_call105_old.log
echo "== new"; cat $OUT/spmm_profile_call105_new.log; echo "== old (call90)"; cat $OUT/spmm_profile_call105_old.log
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_spmm_ops.py tests/test_autotune.py \
  tests/test_auto_spmm_conv.py 2>&1 | tee $OUT/cuda_tests_spmm.log | tail -2
