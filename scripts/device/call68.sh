#!/usr/bin/env bash
# Device call: call67 with the halving reduction's level loop made affine
# (call67's bf16 rows ran 5x slower: acc in local memory); registers and
# local memory of the SpMM kernels from the built extension.
export QUIET_BUILD=1
source "$(dirname "$0")/prelude.sh"
cuobjdump --dump-resource-usage pyg_fusesample/_C*312*.so 2>/dev/null | python3 -c "
import re, sys
name = None
for line in sys.stdin:
    m = re.search(r'Function (\S+):', line)
    if m:
        name = m.group(1)
    elif name and ('spmm_rows_kernel' in name or 'spmm_hub_kernel' in name):
        r = re.search(r'REG:(\d+).*SHARED:(\d+).*LOCAL:(\d+)', line)
        if r:
            print(name[30:110], 'REG', r.group(1), 'SHARED', r.group(2), 'LOCAL', r.group(3))
        name = None
" > "$OUT/spmm_resources_call68.log"
cat "$OUT/spmm_resources_call68.log"
timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/test_spmm_ops.py \
  tests/test_auto_spmm_conv.py tests/test_autotune.py -x 2>&1 \
  | tee "$OUT/cuda_tests_spmm.log" | tail -3
python scripts/device/spmm_profile.py 2>&1 | grep -v "Warn\|_warn_once" > "$OUT/spmm_profile_call68.log"
cat "$OUT/spmm_profile_call68.log"
SPMM_F=16,32,128 timeout 300 python scripts/device/spmm_timing.py products hub \
  > "$OUT/spmm_variants_call68.log" 2>&1
cat "$OUT/spmm_variants_call68.log"
gzip -1 -c pyg_fusesample/_C*312*.so > "$OUT/_C.so.gz"
