"""call59 found the bf16 forward's *host* time 1.7x longer with the
prefetching loader, with no synchronisation in the step. This isolates what
in flight slows the host: the forward + backward host time (arxiv-like,
[15, 10, 5], batch 1024, bf16, batches from the non-prefetching loader)
while each of these was enqueued just before it (and collected after the
step): nothing; a neighbor_sample_async (cooperative kernel + pinned copy +
event); a pinned device-to-host copy; a CUDA event; a 0.2 ms kernel."""
import statistics
import time

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import warm_up_device
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops import neighbor_sample_async
from pyg_fusesample.sampler import build_csc

dev = torch.device('cuda')
bench = Bench(get_dataset('arxiv'), dev, 0)
warm_up_device(dev)
d = bench.data_dev
g = build_csc(d.edge_index, d.num_nodes)
seed = torch.randperm(d.num_nodes, device=dev)[:1024]
src = torch.zeros(64, dtype=torch.long, device=dev)
pinned = torch.empty(64, dtype=torch.long, pin_memory=True)


def in_flight(what):
    if what == 'async sample':
        return neighbor_sample_async(g.colptr, g.row, g.edge_id, seed,
                                     [15, 10, 5], rng_seed=1)
    if what == 'pinned copy':
        pinned.copy_(src, non_blocking=True)
    elif what == 'event':
        e = torch.cuda.Event()
        e.record()
        return e
    elif what == 'sleep 0.2 ms':
        torch.cuda._sleep(400_000)
    return None


batches = bench.batches('fused-sync', [15, 10, 5], 1024, 0)
fixed = [next(batches) for _ in range(8)]
model, opt = bench.model(3)
for rep in range(2):
    for what in ('nothing', 'async sample', 'pinned copy', 'event',
                 'sleep 0.2 ms'):
        fwd, bwd = [], []
        for i in range(40):
            b = fixed[i % 8]
            torch.cuda.synchronize()
            pending = in_flight(what)
            t1 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with torch.autocast('cuda', dtype=torch.bfloat16):
                out = model(b.x, b.edge_index)[:b.batch_size]
                loss = F.cross_entropy(out.float(), b.y[:b.batch_size])
            t2 = time.perf_counter()
            loss.backward()
            opt.step()
            t3 = time.perf_counter()
            torch.cuda.synchronize()
            if hasattr(pending, 'wait'):
                pending.wait()
            if i >= 10:
                fwd.append((t2 - t1) * 1e3)
                bwd.append((t3 - t2) * 1e3)
        print(f'{what:>14}: forward host {statistics.median(fwd):.3f} ms, '
              f'backward + step host {statistics.median(bwd):.3f} ms',
              flush=True)
