"""Where a training step's time goes with the fused loader vs pre-sampled
batches (products-like graph, [15, 10], batch 1024, fp32): per step, the
loader and the model timed separately between synchronisations; then the
CUDA kernels of a few steps of each under torch.profiler. Written because
call40's model part measured ~0.15-0.45 ms slower after a loader batch than
on pre-sampled batches."""
import statistics
import time

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import warm_up_device
from pyg_fusesample.datasets import get_dataset

dev = torch.device('cuda')
bench = Bench(get_dataset('products'), dev, 0)
warm_up_device(dev)


def step(model, opt, batch):
    opt.zero_grad(set_to_none=True)
    out = model(batch.x, batch.edge_index)[:batch.batch_size]
    F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
    opt.step()


for variant in ('model-only', 'fused', 'per-hop', 'model-only'):
    batches = bench.batches(variant, [15, 10], 1024, 0)
    model, opt = bench.model(2)
    load, run = [], []
    for i in range(45):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        b = next(batches)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        step(model, opt, b)
        torch.cuda.synchronize()
        if i >= 5:
            load.append((t1 - t0) * 1e3)
            run.append((time.perf_counter() - t1) * 1e3)
    print(f'{variant:>10}: loader {statistics.median(load):.3f} ms, model '
          f'{statistics.median(run):.3f} ms (min {min(run):.3f}), nodes/batch '
          f'{b.num_nodes}', flush=True)
    if variant in ('model-only', 'fused'):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                b = next(batches)
                step(model, opt, b)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by='self_cuda_time_total', row_limit=14,
                                        max_name_column_width=60), flush=True)

# Unsynchronised loading, as the epoch benchmark does: per-batch cost.
for variant in ('fused', 'per-hop', 'torch-gpu'):
    batches = bench.batches(variant, [15, 10, 5], 1024, 0)
    for _ in range(20):
        next(batches)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(150):
        next(batches)
    torch.cuda.synchronize()
    print(f'{variant:>10} unsynchronised [15,10,5]: {(time.perf_counter() - t0) / 150 * 1e3:.3f} ms/batch',
          flush=True)
