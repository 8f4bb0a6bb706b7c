"""Device smoke check of the SpMM variants: each against cuSPARSE
(torch.sparse.mm) for correctness, then their times on the generated graphs
at several F (median of 20, synchronised), no scheduler involved.

    python scripts/device/spmm_timing.py products hub
    SPMM_F=16,32,64 python scripts/device/spmm_timing.py products
    SPMM_PACKED_P99=1 ...   # 'hub-subwarp' also at the p99 threshold
    SPMM_COL32=1 ...        # int32 column indices (call35: no faster than int64)
    SPMM_LANES=1,2,4,8 ...  # also 'hub' (first threshold) and 'warp' at these
                            # lane layouts (lanes across the feature vectors)
    SPMM_DTYPES=bfloat16 ...  # only these dtypes (default: float32,bfloat16)

('hub-subwarp' joined after call17, at its own, lower thresholds.)
"""
import os
import sys

import torch

from pyg_fusesample.autotune.candidates import packed_hub_thresholds
from pyg_fusesample.bench import timing
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops.spmm import spmm, spmm_cusparse
from pyg_fusesample.sparse import CSRGraph


def median_ms(fn, reps=20):
    return timing.median_ms(fn, reps, 3, torch.device('cuda'))


for name in sys.argv[1:] or ['products']:
    data = get_dataset(name)
    g = CSRGraph.from_edge_index(data.edge_index.cuda(), data.num_nodes)
    if os.environ.get('SPMM_COL32'):
        g = CSRGraph(g.rowptr, g.col.int(), None, g.num_cols)
    st = g.stats()
    print(f'{name}: {g.num_rows:,} rows, {g.nnz:,} nnz, {g.col.dtype} columns, p99 {st["p99"]:.0f}, '
          f'max {st["max_degree"]:.0f}', flush=True)
    thresholds = sorted({int(st['p99']), int(32 * max(st['mean_degree'], 1))})
    packed = packed_hub_thresholds(st)
    if os.environ.get('SPMM_PACKED_P99'):  # also try the p99 for 'hub-subwarp'
        packed = sorted(set(packed) | {int(st['p99'])})
    features = [int(f) for f in os.environ.get('SPMM_F', '16,32,64,128,256,512').split(',')]
    lane_sets = [int(v) for v in os.environ.get('SPMM_LANES', '').split(',') if v]
    dtypes = os.environ.get('SPMM_DTYPES', 'float32,bfloat16').split(',')
    for dtype in (getattr(torch, d) for d in dtypes):
        for f in features:
            x = torch.randn(g.num_cols, f, device='cuda', dtype=dtype)
            ref = spmm_cusparse(g, x.float())  # float32 reference
            cus_err = ((spmm_cusparse(g, x).float() - ref).abs().max() /
                       ref.abs().max().clamp_min(1)).item()
            res = {'cusparse': median_ms(lambda: spmm_cusparse(g, x))}
            runs = ([('warp', -1, 0), ('subwarp', -1, 0)] + [('hub', t, 0) for t in thresholds]
                    + [('hub-subwarp', t, 0) for t in packed]
                    + [(v, t, n) for n in lane_sets
                       for v, t in (('warp', -1), ('hub', thresholds[0]))])
            for variant, th, lanes in runs:
                out = spmm(g, x, variant=variant, hub_threshold=th, lanes=lanes)
                err = ((out.float() - ref.float()).abs().max() /
                       ref.float().abs().max().clamp_min(1)).item()
                assert err < (1e-4 if dtype == torch.float32 else max(2e-2, 2 * cus_err)), \
                    (variant, err, cus_err)
                res[f'{variant}{th if th >= 0 else ""}{f"@{lanes}" if lanes else ""}'] = median_ms(
                    lambda: spmm(g, x, variant=variant, hub_threshold=th, lanes=lanes))
            floor = g.nnz * f * x.element_size() / 4.2e12 * 1e3
            best = min((v, k) for k, v in res.items() if k != 'cusparse')
            print(f'  {str(dtype)[6:]} F={f}: ' + ', '.join(f'{k} {v:.3f}' for k, v in res.items())
                  + f' | best/cusparse {best[0] / res["cusparse"]:.2f} floor(4.2TB/s) {floor:.3f}'
                  + f' | cuSPARSE rel. error {cus_err:.1e}',
                  flush=True)
            del x, ref
