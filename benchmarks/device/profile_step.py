"""Where a training step's time goes: the harness's batches for a variant,
loader and model timed apart between synchronisations, then the CUDA kernels
of a few steps under torch.profiler. Run on the GPU machine after build.sh:

    python benchmarks/device/profile_step.py --graph products \\
        --variants model-only fused per-hop --fanout 15,10 --batch-size 1024
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.timing import warm_up_device
from pyg_fusesample.datasets import get_dataset


def step(model, opt, batch):
    opt.zero_grad(set_to_none=True)
    out = model(batch.x, batch.edge_index)[:batch.batch_size]
    F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
    opt.step()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--graph', default='products')
    p.add_argument('--variants', nargs='+', default=['model-only', 'fused'])
    p.add_argument('--fanout', default='15,10')
    p.add_argument('--batch-size', type=int, default=1024)
    p.add_argument('--steps', type=int, default=40)
    p.add_argument('--profile-steps', type=int, default=5)
    p.add_argument('--rows', type=int, default=14, help='kernels listed')
    args = p.parse_args()
    fanout = [int(k) for k in args.fanout.split(',')]
    dev = torch.device('cuda')
    bench = Bench(get_dataset(args.graph), dev, 0)
    warm_up_device(dev)
    for variant in args.variants:
        batches = bench.batches(variant, fanout, args.batch_size, 0)
        model, opt = bench.model(len(fanout))
        load, run = [], []
        for i in range(args.steps + 5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            b = next(batches)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            step(model, opt, b)
            torch.cuda.synchronize()
            if i >= 5:  # warm-up
                load.append((t1 - t0) * 1e3)
                run.append((time.perf_counter() - t1) * 1e3)
        print(f'{variant:>12}: loader {statistics.median(load):.3f} ms, model '
              f'{statistics.median(run):.3f} ms (min {min(run):.3f}), '
              f'nodes/batch {b.num_nodes}', flush=True)
        cuda = torch.profiler.ProfilerActivity.CUDA
        with torch.profiler.profile(activities=[cuda]) as prof:
            for _ in range(args.profile_steps):
                step(model, opt, next(batches))
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by='self_cuda_time_total',
                                        row_limit=args.rows,
                                        max_name_column_width=60), flush=True)


if __name__ == '__main__':
    main()
