"""Why the model's zero fills (cudaMemsetAsync) cost ~40 us more host time
each while a prefetched batch is in flight (call57): host time of 50
torch.zeros calls (memset-backed fills) while, on the same stream, (a)
nothing, (b) a long ordinary kernel, (c) the fused cooperative sampling
kernel behind it, (d) a device-to-pinned copy behind it, are queued."""
import time

import torch

from pyg_fusesample.datasets import arxiv_like
from pyg_fusesample.ops import neighbor_sample, neighbor_sample_async
from pyg_fusesample.sampler import build_csc

data = arxiv_like()
g = build_csc(data.edge_index.cuda(), data.num_nodes)
seed = torch.randperm(data.num_nodes, device='cuda')[:1024]
src = torch.empty(64, dtype=torch.long, device='cuda')
pinned = torch.empty(64, dtype=torch.long, pin_memory=True)


def zero_fills():
    t = time.perf_counter()
    for _ in range(50):
        torch.zeros(4096, device='cuda')
    return (time.perf_counter() - t) / 50 * 1e6


def queue(what):
    torch.cuda._sleep(50_000_000)  # ~25 ms, so everything below is pending
    if what == 'cooperative kernel':
        neighbor_sample_async(g.colptr, g.row, g.edge_id, seed, [15, 10, 5])
    elif what == 'pinned copy':
        pinned.copy_(src, non_blocking=True)
    elif what == 'sync op (done)':
        torch.cuda.synchronize()
        neighbor_sample(g.colptr, g.row, g.edge_id, seed, [15, 10, 5])


for rep in range(2):
    for what in ('nothing', 'sleep only', 'cooperative kernel', 'pinned copy',
                 'sync op (done)'):
        torch.cuda.synchronize()
        if what != 'nothing':
            queue(what)
        us = zero_fills()
        torch.cuda.synchronize()
        print(f'{what:>20}: {us:6.1f} us per zero fill', flush=True)
