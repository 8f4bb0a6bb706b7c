"""Where a FusedGraphSAGE training step's transient memory goes on the GPU:
after every op of one eager step (products-like graph, batch 1024), the
allocator's allocated bytes and peak above the step's start, next to the
bytes of the tensors the op returned. A gap between the two is allocator
slack or memory an op allocates internally.

python scripts/device/memory_trace.py [--fanout 15,10] [--amp]
"""
import argparse

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.sage_runner import FusedSage
from pyg_fusesample.datasets import get_dataset

MB = 2 ** 20


class Trace(TorchDispatchMode):
    def __init__(self, base):
        super().__init__()
        self.base, self.rows = base, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else [out]
        nbytes = sum(t.untyped_storage().nbytes() for t in outs
                     if isinstance(t, torch.Tensor))
        self.rows.append((str(func), nbytes / MB,
                          (torch.cuda.memory_allocated() - self.base) / MB,
                          (torch.cuda.max_memory_allocated() - self.base) / MB))
        return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--fanout', default='15,10')
    p.add_argument('--amp', action='store_true')
    a = p.parse_args()
    fanout = [int(k) for k in a.fanout.split(',')]
    data = get_dataset('products')
    bench = Bench(data, torch.device('cuda'))
    run = FusedSage(bench, fanout)
    seeds = run.train_idx[torch.randperm(run.train_idx.numel(),
                                         device='cuda')[:1024]]
    autocast = torch.autocast('cuda', dtype=torch.bfloat16, enabled=a.amp)
    for _ in range(3):
        run.eager_step(seeds, autocast)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    trace = Trace(base)
    with trace:
        run.eager_step(seeds, autocast)
    torch.cuda.synchronize()
    print(f'fanout {fanout} amp {a.amp}: transient '
          f'{(torch.cuda.max_memory_allocated() - base) / MB:.1f} MB')
    print(f'{"op":46s} {"out MB":>8s} {"alloc":>8s} {"peak":>8s}')
    for name, out, alloc, peak in trace.rows:
        print(f'{name[:46]:46s} {out:8.2f} {alloc:8.2f} {peak:8.2f}')
    print(torch.cuda.memory_summary(abbreviated=True))


if __name__ == '__main__':
    main()
