"""Quick op-level timing of the CUDA sampler (fused vs per-hop vs CPU) on a
synthetic power-law graph; prints a table. Used as a smoke check on the
device before the full harness."""
import sys
import time

import torch

from pyg_fusesample.datasets import power_law_graph
from pyg_fusesample.ops import neighbor_sample
from pyg_fusesample.sampler import build_csc

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
data = power_law_graph(n, 50.0, num_features=8, num_classes=4, seed=0)
g = build_csc(data.edge_index.cuda(), data.num_nodes)
print(f'graph {n:,} nodes {data.num_edges:,} edges, row {g.row.dtype}')
for fan in ([15, 10], [15, 10, 5], [10, 10, 10]):
    for bs in (512, 1024, 4096):
        seeds = torch.randperm(n, device='cuda')[:bs]
        res = {}
        for fused in (True, False):
            for _ in range(3):
                neighbor_sample(g.colptr, g.row, g.edge_id, seeds, fan, rng_seed=1, fused=fused)
            torch.cuda.synchronize()
            ts = []
            for i in range(30):
                t = time.perf_counter()
                out = neighbor_sample(g.colptr, g.row, g.edge_id, seeds, fan,
                                      rng_seed=i, fused=fused)
                torch.cuda.synchronize()
                ts.append(time.perf_counter() - t)
            ts.sort()
            res[fused] = ts[15] * 1e3
        e = out.edge.numel()
        print(f'fanout {fan} batch {bs}: fused {res[True]:.3f} ms, per-hop '
              f'{res[False]:.3f} ms, ratio {res[False] / res[True]:.2f}, '
              f'{e:,} edges, {e / res[True] / 1e6:.2f}e9 edges/s fused',
              flush=True)

# Overhead probe: one seed, one neighbour per hop -- no work, only launches,
# barriers and the host sync.
seeds = torch.randperm(n, device='cuda')[:1]
for fused in (True, False):
    ts = []
    for i in range(60):
        torch.cuda.synchronize()
        t = time.perf_counter()
        neighbor_sample(g.colptr, g.row, g.edge_id, seeds, [1, 1, 1], rng_seed=i,
                        fused=fused)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    ts.sort()
    print(f'overhead probe (batch 1, [1,1,1]) fused={fused}: {ts[30] * 1e6:.0f} us')
