"""Is the model-only floor (8 pre-sampled batches, cycled) the model's own
step time, or does cycling a few batches make it cheaper than training on
fresh ones? Times, per precision, the pipelined step period of the fused
loader, of the model on the 8 cycled batches, and of the model on as many
distinct pre-sampled batches as the loop uses (none seen twice), in
alternating order, with the host's time per step beside each.

    python scripts/device/floor_probe.py   # products-like, [15, 10], batch 1024
"""
import contextlib
import itertools
import statistics
import time

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import pipelined_periods, warm_up_device
from pyg_fusesample.datasets import get_dataset

FANOUT, BATCH, WARMUP, STEPS, ROUNDS = [15, 10], 1024, 20, 60, 3

data = get_dataset('products')
bench = Bench(data, torch.device('cuda'), 0)
warm_up_device(bench.device)


def source(variant):
    it = bench.batches('fused', FANOUT, BATCH, 0)
    if variant == 'fused':
        return it
    n = 8 if variant == 'model-only-8' else WARMUP + STEPS + 1
    fixed = [next(it) for _ in range(n)]
    it.close()
    return itertools.cycle(fixed)


def row(variant, amp):
    batches = source(variant)
    model, opt = bench.model(len(FANOUT))
    autocast = (torch.autocast('cuda', dtype=torch.bfloat16) if amp
                else contextlib.nullcontext())

    def step():
        batch = next(batches)
        opt.zero_grad(set_to_none=True)
        with autocast:
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out.float(), batch.y[:batch.batch_size])
        loss.backward()
        opt.step()

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    periods = pipelined_periods(step, STEPS, WARMUP, bench.device)
    host = (time.perf_counter() - t0) * 1e3 / (WARMUP + STEPS + 1)
    return statistics.median(periods), host


for amp in (True, False):
    row('fused', amp)  # settle
    res = {}
    for r in range(ROUNDS):
        for v in ('fused', 'model-only-8', 'model-only-distinct'):
            ms, host = row(v, amp)
            res.setdefault(v, []).append(ms)
            print(f'amp={amp} round {r} {v:20s} period {ms:.3f} ms  '
                  f'(wall per step incl. final sync {host:.3f} ms)', flush=True)
    med = {v: statistics.median(x) for v, x in res.items()}
    print(f'amp={amp} medians: ' + ', '.join(f'{v} {m:.3f}' for v, m in med.items())
          + f'; fused/8 {med["fused"] / med["model-only-8"]:.3f}, '
          f'fused/distinct {med["fused"] / med["model-only-distinct"]:.3f}', flush=True)
