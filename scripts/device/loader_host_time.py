"""Where a GPU FusedNeighborLoader batch spends host time, with and without
prefetch, on the products-like graph at batch 1024: the synchronised latency
of a batch, the host time of next() while the GPU is busy with other work
(what a training loop pays per step when it never waits), and a cProfile of
the prefetching loader's Python functions by own time."""
import copy
import cProfile
import pstats
import time

import torch

from pyg_fusesample import FusedNeighborLoader
from pyg_fusesample.datasets import products_like

data = copy.copy(products_like()).to('cuda')


def loader(fanout, prefetch):
    loader = FusedNeighborLoader(data, num_neighbors=fanout, batch_size=1024,
                                 input_nodes=data.train_mask, shuffle=True,
                                 seed=0, prefetch=prefetch)
    it = (batch for _ in range(100) for batch in loader)  # epochs on end
    for _ in range(10):
        next(it)
    torch.cuda.synchronize()
    return it


def median_ms(xs):
    return sorted(xs)[len(xs) // 2] * 1e3


for fanout in ([15, 10], [15, 10, 5]):
    for prefetch in (True, False):
        it = loader(fanout, prefetch)
        synced, busy = [], []
        for _ in range(40):
            torch.cuda.synchronize()
            t = time.perf_counter()
            next(it)
            torch.cuda.synchronize()
            synced.append(time.perf_counter() - t)
        for _ in range(40):
            torch.cuda._sleep(20_000_000)  # ~10 ms of queued GPU work
            t = time.perf_counter()
            next(it)
            busy.append(time.perf_counter() - t)
            torch.cuda.synchronize()
        print(f'{fanout} prefetch={prefetch}: synchronised batch '
              f'{median_ms(synced):.3f} ms; host time of next() behind '
              f'busy GPU {median_ms(busy):.3f} ms', flush=True)

it = loader([15, 10], True)
prof = cProfile.Profile()
prof.enable()
for _ in range(200):
    next(it)
prof.disable()
torch.cuda.synchronize()
print('cProfile, [15, 10] prefetch, 200 batches, by own time:')
pstats.Stats(prof).sort_stats('tottime').print_stats(25)
