"""A/B on one machine: the native prefetch thread with and without fused
sampling enqueued one batch ahead (_NativeIterator.lookahead), products-like
[15, 10], batch 1024, fp32 and bf16, in 3 interleaved rounds against the
floor, with the harness's run_row (60 steps, synchronised and pipelined)."""
import statistics

import torch

from pyg_fusesample.bench.runner import Bench, run_row
from pyg_fusesample.bench.timing import warm_up_device
from pyg_fusesample.datasets import products_like
from pyg_fusesample.loader.fused_neighbor_loader import _NativeIterator

dev = torch.device('cuda')
bench = Bench(products_like(), dev)
warm_up_device(dev)
arms = (('lookahead', 'fused', True), ('no-lookahead', 'fused', False),
        ('floor', 'model-only', True))
ratios = {}
for r in range(3):
    for amp in (False, True):
        times = {}
        for name, variant, lookahead in arms:
            _NativeIterator.lookahead = lookahead
            row = run_row(bench, 'products_like', [15, 10], 1024, amp, variant,
                          0, 60, 10)
            times[name] = (float(row['step_ms']),
                           float(row['pipelined_step_ms']))
        for name, (s, p) in times.items():
            fs, fp = times['floor']
            ratios.setdefault((amp, name), []).append((s / fs, p / fp))
            print(f'round {r} amp={amp} {name:13s} step {s:.3f} ms '
                  f'({s / fs:.2f}x floor), pipelined {p:.3f} ms '
                  f'({p / fp:.2f}x)', flush=True)
for (amp, name), xs in ratios.items():
    print(f'amp={amp} {name:13s} median step/floor '
          f'{statistics.median(x[0] for x in xs):.2f}, pipelined/floor '
          f'{statistics.median(x[1] for x in xs):.2f}')
