"""Where an SpMM variant's time goes: its kernels' device time per call
(torch.profiler), beside the synchronised median of the whole call and
cuSPARSE's, with the hub split of the graph (rows and chunks over the
threshold, their share of the non-zeros).

    python scripts/device/spmm_profile.py   # the configurations below
    SPMM_PROFILE=products:float32:32:hub-subwarp:71:0,... python ...  # these instead
"""
import os

import torch

from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops.spmm import spmm, spmm_cusparse
from pyg_fusesample.sparse import CSRGraph
from spmm_retime import kernel_times, median_ms

# (graph, dtype, F, variant, threshold, lanes): the scheduler's choices in
# spmm_h200.csv where a target is missed, and their neighbours.
CONFIGS = [
    ('hub', torch.bfloat16, 16, 'hub-subwarp', 80, 0),
    ('hub', torch.bfloat16, 32, 'hub-subwarp', 80, 0),
    ('hub', torch.float32, 16, 'hub-subwarp', 80, 0),
    ('hub', torch.float32, 32, 'hub-subwarp', 80, 0),
    ('hub', torch.float32, 128, 'hub', 155, 0),
    ('hub', torch.bfloat16, 128, 'hub', 155, 8),
    ('products', torch.float32, 32, 'hub', 538, 0),
    ('products', torch.bfloat16, 128, 'hub', 538, 8),
]


if os.environ.get('SPMM_PROFILE'):
    CONFIGS = [(n, getattr(torch, d), int(f), v, int(t), int(l)) for n, d, f, v, t, l in
               (c.split(':') for c in os.environ['SPMM_PROFILE'].split(','))]


graphs = {}
for name, dtype, f, variant, th, lanes in CONFIGS:
    if name not in graphs:
        data = get_dataset(name)
        graphs[name] = CSRGraph.from_edge_index(data.edge_index.cuda(), data.num_nodes)
        del data
    g = graphs[name]
    deg = g.rowptr.diff()
    heavy = deg > th
    chunks = g.hub_chunks(th)
    print(f'== {name} {str(dtype)[6:]} F={f} {variant} threshold {th} lanes {lanes}: '
          f'{g.num_rows:,} rows, {g.nnz:,} nnz; {int(heavy.sum()):,} hub rows '
          f'({float(deg[heavy].sum()) / g.nnz:.1%} of nnz) in {chunks.size(0):,} chunks',
          flush=True)
    x = torch.randn(g.num_cols, f, device='cuda', dtype=dtype)
    run = lambda: spmm(g, x, variant=variant, hub_threshold=th, lanes=lanes)  # noqa: E731
    print(f'   call {median_ms(run):.3f} ms, cuSPARSE {median_ms(lambda: spmm_cusparse(g, x)):.3f} ms,'
          f' floor(4.2TB/s) {g.nnz * f * x.element_size() / 4.2e12 * 1e3:.3f} ms')
    for ms, count, key in kernel_times(run):
        print(f'   {ms:8.3f} ms x{count}  {key}')
    del x
