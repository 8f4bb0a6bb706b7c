"""Why the prefetching loader's bf16 steps on the arxiv-like graph ran ~2 ms
slower than per-hop's in call56 (fp32 and products steps showed no such
gap): arxiv-like, [15, 10, 5], batch 1024, bf16 autocast; per variant, the
loader and the model timed apart between synchronisations (variants run
twice, interleaved, to separate order effects), then torch.profiler over a
few steps of the prefetching and the non-prefetching loader."""
import contextlib
import statistics
import time

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import warm_up_device
from pyg_fusesample.datasets import get_dataset

dev = torch.device('cuda')
bench = Bench(get_dataset('arxiv'), dev, 0)
warm_up_device(dev)
FANOUT, BATCH = [15, 10, 5], 1024


def step(model, opt, batch, amp):
    opt.zero_grad(set_to_none=True)
    ctx = (torch.autocast('cuda', dtype=torch.bfloat16) if amp
           else contextlib.nullcontext())
    with ctx:
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out.float(), batch.y[:batch.batch_size])
    loss.backward()
    opt.step()


for amp in (True, False):
    for variant in ('fused', 'fused-sync', 'per-hop', 'model-only') * 2:
        batches = bench.batches(variant, FANOUT, BATCH, 0)
        model, opt = bench.model(len(FANOUT))
        load, run = [], []
        for i in range(45):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            b = next(batches)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            step(model, opt, b, amp)
            torch.cuda.synchronize()
            if i >= 5:
                load.append((t1 - t0) * 1e3)
                run.append((time.perf_counter() - t1) * 1e3)
        print(f'amp={amp} {variant:>10}: loader {statistics.median(load):.3f} '
              f'ms, model {statistics.median(run):.3f} ms (min '
              f'{min(run):.3f})', flush=True)
        batches.close()

for variant in ('fused', 'fused-sync'):
    batches = bench.batches(variant, FANOUT, BATCH, 0)
    model, opt = bench.model(len(FANOUT))
    for _ in range(10):
        step(model, opt, next(batches), True)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU,
            torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(5):
            step(model, opt, next(batches), True)
            torch.cuda.synchronize()
    print(f'--- {variant}, bf16, 5 steps, by self CPU time')
    print(prof.key_averages().table(sort_by='self_cpu_time_total',
                                    row_limit=15, max_name_column_width=50))
    print(f'--- {variant}, bf16, 5 steps, by device time')
    print(prof.key_averages().table(sort_by='self_cuda_time_total',
                                    row_limit=10, max_name_column_width=50),
          flush=True)
    batches.close()
