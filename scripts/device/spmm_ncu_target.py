"""One SpMM configuration called three times, for Nsight Compute to profile
the last call's kernels (ncu --launch-skip 2 --kernel-name regex:spmm_...).

    ncu ... python scripts/device/spmm_ncu_target.py GRAPH DTYPE F VARIANT THRESHOLD LANES
"""
import sys

import torch

from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops.spmm import spmm
from pyg_fusesample.sparse import CSRGraph

name, dtype, f, variant, th, lanes = sys.argv[1:7]
data = get_dataset(name)
g = CSRGraph.from_edge_index(data.edge_index.cuda(), data.num_nodes)
del data
x = torch.randn(g.num_cols, int(f), device='cuda', dtype=getattr(torch, dtype))
for _ in range(3):
    spmm(g, x, variant=variant, hub_threshold=int(th), lanes=int(lanes))
torch.cuda.synchronize()
print(f'{name} {dtype} F={f} {variant} threshold {th} lanes {lanes}: '
      f'{g.num_rows:,} rows, {g.nnz:,} nnz', flush=True)
