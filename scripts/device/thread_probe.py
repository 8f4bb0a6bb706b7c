"""Does assembling batches on a background thread take the loader's host
time out of a host-bound training step? The [15, 10] step of the products-
like graph is bound by the host's launch rate, so the prefetching loader's
~0.25 ms of host work per batch adds to it one for one. PyTorch's bindings
release the GIL inside every op and during backward(), so a thread that
samples and gathers the next batches could run in those gaps.

Times, per precision, the pipelined step period of: the fused loader as the
harness runs it, the same loader iterated on a background thread (batches on
the consumer's stream, handed over by a queue of depth 2), the same with the
loader's own lookahead off, and the model on 8 pre-sampled batches (the
harness's floor); interleaved rounds, medians.

    python scripts/device/thread_probe.py   # products-like, [15, 10], batch 1024
    THREAD_ROUNDS=5 python scripts/device/thread_probe.py
"""
import contextlib
import itertools
import os
import queue
import statistics
import threading
import time

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import pipelined_periods, warm_up_device
from pyg_fusesample.datasets import get_dataset

FANOUT, BATCH, WARMUP, STEPS = [15, 10], 1024, 20, 60
ROUNDS = int(os.environ.get("THREAD_ROUNDS", 3))

data = get_dataset('products')
bench = Bench(data, torch.device('cuda'), 0)
warm_up_device(bench.device)


class Threaded:
    """Iterates `it` on a daemon thread, on the caller's current stream."""
    def __init__(self, it, depth=2):
        self.q = queue.Queue(maxsize=depth)
        self.stop = False
        stream = torch.cuda.current_stream()

        def run():
            torch.cuda.set_stream(stream)
            for b in it:
                if self.stop:
                    return
                self.q.put(b)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def __next__(self):
        return self.q.get()

    def close(self):
        self.stop = True
        with contextlib.suppress(queue.Empty):
            while True:
                self.q.get_nowait()
        self.thread.join()


def source(variant):
    if variant == 'fused':
        return bench.batches('fused', FANOUT, BATCH, 0)
    if variant == 'fused-thread':
        return Threaded(bench.batches('fused', FANOUT, BATCH, 0))
    if variant == 'fused-sync-thread':
        return Threaded(bench.batches('fused-sync', FANOUT, BATCH, 0))
    it = bench.batches('fused', FANOUT, BATCH, 0)
    fixed = [next(it) for _ in range(8)]
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
    if isinstance(batches, Threaded):
        batches.close()
    return statistics.median(periods), host


VARIANTS = ('fused', 'fused-thread', 'fused-sync-thread', 'model-only-8')
for amp in (True, False):
    row('fused', amp)  # settle
    res = {}
    for r in range(ROUNDS):
        for v in VARIANTS:
            ms, host = row(v, amp)
            res.setdefault(v, []).append(ms)
            print(f'amp={amp} round {r} {v:20s} period {ms:.3f} ms  '
                  f'(wall per step incl. final sync {host:.3f} ms)', flush=True)
    med = {v: statistics.median(x) for v, x in res.items()}
    floor = med['model-only-8']
    print(f'amp={amp} medians: ' + ', '.join(f'{v} {m:.3f} ({m / floor:.3f}x floor)'
                                             for v, m in med.items()), flush=True)
