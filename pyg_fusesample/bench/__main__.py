"""Benchmark harness CLI.

    python -m pyg_fusesample.bench loader --graph power_law_1m \
        --fanouts 15,10 15,10,5 --batch-sizes 1024 --out benchmarks/results/x.csv
    python -m pyg_fusesample.bench report benchmarks/results/x.csv
"""
import argparse
import os
import sys

import torch


def _fanout(text: str):
    return [int(k) for k in text.split(',')]


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m pyg_fusesample.bench')
    sub = parser.add_subparsers(dest='cmd', required=True)

    lo = sub.add_parser('loader', help='loader throughput per variant')
    lo.add_argument('--graph', default='power_law_1m',
                    help='a pyg_fusesample.datasets name (synthetic graphs)')
    lo.add_argument('--scale', type=float, default=1.0)
    lo.add_argument('--fanouts', type=_fanout, nargs='+',
                    default=[[15, 10], [15, 10, 5]])
    lo.add_argument('--batch-sizes', type=int, nargs='+', default=[1024])
    lo.add_argument('--variants', nargs='+', default=['pyg', 'fused'])
    lo.add_argument('--num-workers', type=int, nargs='+', default=[0])
    lo.add_argument('--steps', type=int, default=30)
    lo.add_argument('--warmup', type=int, default=3)
    lo.add_argument('--seed', type=int, default=0)
    lo.add_argument('--threads', type=int, default=None,
                    help='torch.set_num_threads (default: torch default)')
    lo.add_argument('--out', default='benchmarks/results/loader_cpu.csv')

    rp = sub.add_parser('report', help='markdown + PNG from a CSV')
    rp.add_argument('csv')

    args = parser.parse_args(argv)
    if args.cmd == 'loader':
        from ..datasets import get_dataset
        from .csv_schema import append_rows
        from .loader_bench import run
        from .report import write_report
        if args.threads:
            torch.set_num_threads(args.threads)
        data = get_dataset(args.graph, scale=args.scale, seed=args.seed)
        name = getattr(data, 'name', args.graph)
        print(f'graph {name}: {data.num_nodes:,} nodes, {data.num_edges:,} '
              f'edges (synthetic)', flush=True)
        rows = run(args, data, name)
        append_rows(args.out, rows)
        base = os.path.splitext(args.out)[0]
        print(write_report(args.out, base + '.md', base + '.png'))
    elif args.cmd == 'report':
        from .report import write_report
        base = os.path.splitext(args.csv)[0]
        print(write_report(args.csv, base + '.md', base + '.png'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
