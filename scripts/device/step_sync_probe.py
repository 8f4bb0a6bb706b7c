"""Which calls of a bf16 training step synchronise with the GPU (arxiv-like,
[15, 10, 5], batch 1024, prefetching FusedNeighborLoader): PyTorch's sync
debug mode, each warning printed once with the Python frames that led to
it; then the step's host time split by part with and without prefetch,
three rounds interleaved (call61: is the gap an order effect?)."""
import contextlib
import statistics
import time
import traceback
import warnings

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import warm_up_device
from pyg_fusesample.datasets import get_dataset

dev = torch.device('cuda')
bench = Bench(get_dataset('arxiv'), dev, 0)
warm_up_device(dev)
seen = set()


def show(message, category, filename, lineno, file=None, line=None):
    key = (str(message)[:80], filename, lineno)
    if key in seen:
        return
    seen.add(key)
    stack = ''.join(traceback.format_stack(limit=12)[:-2])
    print(f'SYNC: {message}\n{stack}', flush=True)


warnings.showwarning = show
for variant in ('fused', 'fused-sync', 'fused', 'fused-sync', 'fused',
                'fused-sync'):
    batches = bench.batches(variant, [15, 10, 5], 1024, 0)
    model, opt = bench.model(3)
    parts = {'next': [], 'forward': [], 'backward': [], 'step': []}
    for i in range(40):
        if i == 30 and not seen:
            torch.cuda.set_sync_debug_mode('warn')
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        b = next(batches)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast('cuda', dtype=torch.bfloat16):
            out = model(b.x, b.edge_index)[:b.batch_size]
            loss = F.cross_entropy(out.float(), b.y[:b.batch_size])
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        torch.cuda.synchronize()
        if i >= 10:
            for name, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                parts[name].append(dt * 1e3)
    torch.cuda.set_sync_debug_mode(0)
    print(f'{variant}: host ms by part (median): ' + ', '.join(
        f'{k} {statistics.median(v):.3f}' for k, v in parts.items()),
        flush=True)
    batches.close()
