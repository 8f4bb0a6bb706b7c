"""Hub chunk size of the 'hub' SpMM variants: the scheduler's choices where
a target is missed (hub-skewed fp32 F=16/32, bf16 F=128) and two that meet
theirs (products-like), timed with the hub rows cut into chunks of 512 ..
16384 non-zeros (the default is 2048), beside the light rows alone (the
hub chunks left out: what the call would cost if the hubs were free) and
cuSPARSE. Median of 20 synchronised calls.

    python scripts/device/spmm_chunk_sweep.py
    SWEEP_CHUNKS=2048,4096 python scripts/device/spmm_chunk_sweep.py
"""
import os

import torch

from pyg_fusesample.bench import timing
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops.spmm import spmm_cusparse
from pyg_fusesample.sparse import CSRGraph

_ops = torch.ops.fusesample
CHUNKS = [int(c) for c in os.environ.get('SWEEP_CHUNKS', '512,1024,2048,4096,8192,16384').split(',')]
# (graph, dtype, F, variant, threshold, lanes)
CONFIGS = [
    ('hub', torch.float32, 16, 'hub-subwarp', 80, 0),
    ('hub', torch.float32, 16, 'hub', 155, 0),
    ('hub', torch.float32, 32, 'hub-subwarp', 80, 0),
    ('hub', torch.bfloat16, 128, 'hub', 155, 16),
    ('hub', torch.bfloat16, 128, 'hub', 640, 16),
    ('hub', torch.bfloat16, 16, 'hub-subwarp', 80, 0),
    ('products', torch.float32, 32, 'hub-subwarp', 71, 0),
    ('products', torch.bfloat16, 128, 'hub', 538, 16),
]


def median_ms(fn, reps=20):
    return timing.median_ms(fn, reps, 3, torch.device('cuda'))


graphs = {}
for name, dtype, f, variant, th, lanes in CONFIGS:
    if name not in graphs:
        data = get_dataset(name)
        graphs[name] = CSRGraph.from_edge_index(data.edge_index.cuda(), data.num_nodes)
        del data
    g = graphs[name]
    x = torch.randn(g.num_cols, f, device='cuda', dtype=dtype)
    ref = spmm_cusparse(g, x.float())

    def call(chunks):
        return _ops.spmm(g.rowptr, g.col, None, x, 'sum', variant, th, chunks, lanes)

    none = torch.empty(0, 3, dtype=torch.long, device='cuda')
    parts = [f'cuSPARSE {median_ms(lambda: spmm_cusparse(g, x)):.3f}',
             f'light rows only {median_ms(lambda: call(none)):.3f}']
    for chunk in CHUNKS:
        chunks = g.hub_chunks(th, chunk)
        err = ((call(chunks).float() - ref).abs().max() / ref.abs().max()).item()
        assert err < (1e-4 if dtype == torch.float32 else 2e-2), (chunk, err)
        parts.append(f'{chunk}: {median_ms(lambda: call(chunks)):.3f} ({chunks.size(0)} chunks)')
    print(f'{name} {str(dtype)[6:]} F={f} {variant}@{th} lanes {lanes}: ' + ', '.join(parts),
          flush=True)
    del x, ref
