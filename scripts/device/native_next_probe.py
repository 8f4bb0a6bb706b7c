"""Where a synchronised next() of the native prefetch thread (the GPU
default) spends its time, products-like [15, 10], batch 1024: the C++ hand-
over (fusesample.BatchPrefetcher.next), building the Data in Python, and the
wait for the consumer's stream; between batches a ~2.5 ms kernel stands in
for the training step, so the thread has had time to prepare the batch."""
import copy
import statistics
import time

import torch

from pyg_fusesample import FusedNeighborLoader
from pyg_fusesample.datasets import products_like

data = copy.copy(products_like()).to('cuda')
loader = FusedNeighborLoader(data, num_neighbors=[15, 10], batch_size=1024,
                             input_nodes=data.train_mask, shuffle=True, seed=0)
assert loader.prefetch == 'thread'


def ms(xs):
    return f'{statistics.median(xs) * 1e3:.3f} (p90 {sorted(xs)[int(0.9 * len(xs))] * 1e3:.3f})'


for step_cycles in (5_000_000, 0):
    it = iter(loader)
    for _ in range(10):
        next(it)
    parts = {'pop': [], 'data': [], 'sync': [], 'next()+sync': []}
    for _ in range(60):
        torch.cuda._sleep(step_cycles)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tensors = it.prefetcher.next()
        t1 = time.perf_counter()
        node, edge_index, edge, batch, nsn, nse, *rows = tensors
        out = loader._assemble(it.plan, node, edge, edge_index, None,
                               nsn.tolist(), nse.tolist(),
                               loader._input_id(next(it.positions)), None,
                               dict(zip(it.rows, rows)))
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        parts['pop'].append(t1 - t0)
        parts['data'].append(t2 - t1)
        parts['sync'].append(t3 - t2)
        parts['next()+sync'].append(t3 - t0)
    it.close()
    print(f'step stand-in {step_cycles} cycles: ' +
          ', '.join(f'{k} {ms(v)} ms' for k, v in parts.items()), flush=True)
