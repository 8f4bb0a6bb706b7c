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

# The three parts of a prefetching next(), timed one by one behind a busy
# GPU: enqueue the next batch, wait for this one's sizes, filter.
it = iter(FusedNeighborLoader(data, num_neighbors=[15, 10], batch_size=1024,
                              input_nodes=data.train_mask, shuffle=True,
                              seed=0))
parts = {'launch': [], 'wait': [], 'filter': []}
for _ in range(60):
    torch.cuda._sleep(20_000_000)
    t0 = time.perf_counter()
    pending, it.pending = it.pending, it._launch()
    t1 = time.perf_counter()
    out = pending.wait()
    t2 = time.perf_counter()
    it.loader.filter_fn(out)
    t3 = time.perf_counter()
    for name, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2)):
        parts[name].append(dt)
    torch.cuda.synchronize()
print('prefetching next() by part: ' + ', '.join(
    f'{name} {median_ms(ts):.3f} ms' for name, ts in parts.items()))
print('batch keys:', sorted(it.loader.filter_fn(out).keys()))

it = loader([15, 10], True)
prof = cProfile.Profile()
prof.enable()
for _ in range(200):
    next(it)
prof.disable()
torch.cuda.synchronize()
print('cProfile, [15, 10] prefetch, 200 batches, by own time:')
pstats.Stats(prof).sort_stats('tottime').print_stats(30)
