"""Opcode counts of the SpMM row kernel's machine code, per instantiation
(from `cuobjdump -sass` of the built extension on stdin): shows whether the
bfloat16 path converts with integer ops or F2F/cvt, and its load widths.

    cuobjdump -sass pyg_fusesample/_C*.so | python3 scripts/device/sass_summary.py spmm_rows_kernel
"""
import collections
import re
import sys

want = sys.argv[1] if len(sys.argv) > 1 else 'spmm_rows_kernel'
text = sys.stdin.read()
for chunk in text.split('Function : ')[1:]:
    name = chunk.split('\n', 1)[0].strip()
    if want not in name:
        continue
    ops = collections.Counter(
        m.group(1) for m in re.finditer(r'/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)', chunk))
    keep = {k: v for k, v in ops.items()
            if k.split('.')[0] in ('LDG', 'STG', 'F2F', 'F2FP', 'PRMT', 'SHF', 'IMAD', 'LOP3',
                                   'FADD', 'FFMA', 'HADD2', 'SHL', 'IMAD.U32')}
    print(name[:120])
    print('   ', ', '.join(f'{k} {v}' for k, v in sorted(keep.items())))
