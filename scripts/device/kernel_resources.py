"""Registers, shared and local memory of an extension's kernels, from
`cuobjdump --dump-resource-usage` on stdin; the first argument filters the
(mangled) kernel names.

    cuobjdump --dump-resource-usage pyg_fusesample/_C*.so \\
        | python3 scripts/device/kernel_resources.py spmm_
"""
import re
import sys

want = sys.argv[1] if len(sys.argv) > 1 else ''
name = None
for line in sys.stdin:
    m = re.search(r'Function (\S+):', line)
    if m:
        name = m.group(1)
        continue
    r = re.search(r'REG:(\d+).*SHARED:(\d+).*LOCAL:(\d+)', line)
    if name and r and want in name:
        short = name[name.find(want):]  # from the filter on: the readable part
        print(f'{short[:80]:80s} REG {r.group(1):>3} SHARED {r.group(2):>5} LOCAL {r.group(3)}')
    name = None
