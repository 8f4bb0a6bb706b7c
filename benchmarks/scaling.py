"""The multi-GPU scaling run: ``examples/multi_gpu_sage.py`` under
``torchrun`` at several world sizes, with FusedNeighborLoader and with PyG's
NeighborLoader (``--num-workers`` workers per rank), in fp32 and bf16; then
one summary row per setting.

    python benchmarks/scaling.py --graphs products papers100m --synthetic \\
        --gpus 1 2 4 8 --amp none bf16 --epochs 3 \\
        --out benchmarks/results/h100/scaling.csv

writes, next to ``--out``: ``<out>_epochs.csv`` (the example's own rows, one
per epoch and setting), ``<out>.csv`` (the summary), ``<out>.md`` and
``<out>.png``. A summary row: graph, loader, amp, trim, world size; the median
epoch time and seeds/s over the epochs after the first (the first pays
start-up: CUDA context, the loader's first sort, NCCL set-up; a run of one
epoch uses it); the last epoch's test accuracy; the largest per-rank peak
memory; the scaling efficiency, seeds/s at N / (N x seeds/s at 1) for the
same graph, loader, amp and trim; and the speed-up over the PyG row of the
same graph, amp, trim and N. Epochs are synchronised wall-clock training
time (the example's ``Time``), eager; evaluation is not in it.

``--device cpu`` runs the same on gloo processes (the test does, on a tiny
graph); ``--extra`` passes further arguments to the example (e.g.
``--extra=--scale=0.1``, ``--extra=--host-memory=features``, or
``--extra=--no-trim``: the example trims (PyG's trim_to_layer) by default
where the batches carry per-hop counts; trimmed and untrimmed runs are
settings of their own).
"""
import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, '..', 'examples', 'multi_gpu_sage.py')

SUMMARY = ['device_name', 'graph', 'data', 'loader', 'num_workers', 'amp',
           'trim', 'world_size', 'epochs', 'epoch_time_s', 'seeds_per_s',
           'efficiency', 'speedup_vs_pyg', 'test_acc', 'peak_mem_mib_max',
           'torch']


def run(args, graph: str, world_size: int, loader: str, amp: str,
        epochs_csv: str) -> int:
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone',
           f'--nproc_per_node={world_size}', EXAMPLE, '--graph', graph,
           '--device', args.device, '--batch-size', str(args.batch_size),
           '--num-neighbors', *map(str, args.num_neighbors),
           '--epochs', str(args.epochs), '--amp', amp, '--loader', loader,
           '--num-workers', str(args.num_workers), '--seed', str(args.seed),
           '--csv', epochs_csv]
    if args.synthetic:
        cmd.append('--synthetic')
    if args.graph_cache:
        cmd += ['--graph-cache', args.graph_cache]
    if args.eval_last:
        cmd += ['--eval-every', str(args.epochs)]
    if args.max_steps:
        cmd += ['--max-steps', str(args.max_steps)]
    cmd += args.extra
    print('$', ' '.join(cmd), flush=True)
    # The example imports pyg_fusesample: the repository on the path for a
    # package built in place (python setup.py build_ext --inplace).
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (os.path.dirname(HERE), env.get('PYTHONPATH')) if p)
    return subprocess.call(cmd, env=env)


def summarise(rows: List[Dict[str, str]]) -> List[Dict]:
    """One row per (graph, loader, amp, trim, world size) of the example's
    per-epoch rows (see the module docstring); rows written before the
    example had ``--trim`` count as untrimmed."""
    runs = defaultdict(list)
    for r in rows:
        runs[(r['graph'], r['loader'], r['amp'], r.get('trim') or 'off',
              int(r['world_size']))].append(r)
    out = {}
    for key, rs in runs.items():
        rs = sorted(rs, key=lambda r: int(r['epoch']))
        timed = rs[1:] or rs
        out[key] = {
            'device_name': rs[0]['device_name'], 'graph': key[0],
            'data': rs[0]['data'], 'loader': key[1],
            'num_workers': rs[0]['num_workers'], 'amp': key[2],
            'trim': key[3], 'world_size': key[4], 'epochs': len(rs),
            'epoch_time_s': statistics.median(float(r['epoch_time_s'])
                                              for r in timed),
            'seeds_per_s': statistics.median(float(r['seeds_per_s'])
                                             for r in timed),
            'test_acc': float(rs[-1]['test_acc']),
            'peak_mem_mib_max': max(float(r['peak_mem_mib_max']) for r in rs),
            'torch': rs[0]['torch']}
    for (graph, loader, amp, trim, n), s in out.items():
        one = out.get((graph, loader, amp, trim, 1))
        s['efficiency'] = (s['seeds_per_s'] / (n * one['seeds_per_s'])
                           if one else None)
        pyg = out.get((graph, 'pyg', amp, trim, n))
        s['speedup_vs_pyg'] = (s['seeds_per_s'] / pyg['seeds_per_s']
                               if pyg and loader != 'pyg' else None)
    return [out[k] for k in sorted(out)]


def _fmt(v) -> str:
    if v is None:
        return ''
    return f'{v:.4g}' if isinstance(v, float) else str(v)


def _accuracy(acc: float) -> str:
    # nan: the run did not evaluate (--eval-every 0)
    return 'not evaluated' if math.isnan(acc) else f'{acc:.4f}'


def _loader(s: Dict) -> str:
    return s['loader'] + (', trimmed' if s['trim'] == 'on' else '')


def markdown(summary: List[Dict]) -> str:
    lines = ['| graph | loader | amp | GPUs | epoch s | seeds/s | efficiency '
             '| vs PyG | test acc | peak MiB per rank |',
             '|' + '---|' * 10]
    for s in summary:
        lines.append(
            f"| {s['data']} | {_loader(s)} | {s['amp']} | {s['world_size']} "
            f"| {s['epoch_time_s']:.2f} | {s['seeds_per_s']:,.0f} | "
            f"{_fmt(s['efficiency']) or '-'} | "
            f"{(_fmt(s['speedup_vs_pyg']) + 'x') if s['speedup_vs_pyg'] else '-'} "
            f"| {_accuracy(s['test_acc'])} | {s['peak_mem_mib_max']:.0f} |")
    device = summary[0]['device_name'] if summary else ''
    return (f'<!-- benchmarks/scaling.py on {device}; synchronised '
            f'training time per epoch, eager -->\n\n' + '\n'.join(lines) + '\n')


def plot(summary: List[Dict], png: str) -> bool:
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    graphs = sorted({s['graph'] for s in summary})
    fig, axes = plt.subplots(1, len(graphs), figsize=(4.5 * len(graphs), 3.6),
                             squeeze=False)
    for ax, graph in zip(axes[0], graphs):
        lines = defaultdict(list)
        for s in summary:
            if s['graph'] == graph:
                lines[(_loader(s), s['amp'])].append(s)
        for (loader, amp), ss in sorted(lines.items()):
            ss.sort(key=lambda s: s['world_size'])
            n = [s['world_size'] for s in ss]
            ax.plot(n, [s['seeds_per_s'] for s in ss], '-o',
                    label=f'{loader} {amp}')
            one = next((s for s in ss if s['world_size'] == 1), None)
            if one is not None:
                ax.plot(n, [k * one['seeds_per_s'] for k in n], ':',
                        color='gray', lw=0.8)
        ax.set_xscale('log', base=2)
        ax.set_yscale('log')
        ax.set_xlabel('GPUs (processes)')
        ax.set_ylabel('training seeds/s')
        synthetic = any(s['data'].startswith('SYNTHETIC') for s in summary
                        if s['graph'] == graph)
        ax.set_title(f'{graph}-like (SYNTHETIC)' if synthetic else graph)
        ax.legend(fontsize=7)
    fig.suptitle('Scaling (dotted: linear from 1 GPU)')
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--graphs', nargs='+', default=['products'])
    p.add_argument('--gpus', type=int, nargs='+', default=[1, 2],
                   help='world sizes (processes; GPUs with --device cuda)')
    p.add_argument('--loaders', nargs='+', default=['fused', 'pyg'],
                   choices=['fused', 'pyg'])
    p.add_argument('--amp', nargs='+', default=['none', 'bf16'],
                   choices=['none', 'bf16'])
    p.add_argument('--device', default='cuda', choices=['cuda', 'cpu'])
    p.add_argument('--synthetic', action='store_true')
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--max-steps', type=int, default=None)
    p.add_argument('--graph-cache', default=None,
                   help="the example's --graph-cache: generate each "
                        'synthetic graph once for all runs')
    p.add_argument('--eval-last', action='store_true',
                   help='evaluate after the last epoch only (the summary '
                        "reports the last epoch's accuracy either way)")
    p.add_argument('--batch-size', type=int, default=1024)
    p.add_argument('--num-neighbors', type=int, nargs='+', default=[15, 10, 5])
    p.add_argument('--num-workers', type=int, default=8)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--extra', action='append', default=[],
                   help='a further argument for the example (repeatable)')
    p.add_argument('--out', default='benchmarks/results/scaling.csv')
    p.add_argument('--summarise-only', action='store_true',
                   help='run nothing: rewrite the summary, markdown and plot '
                        'from an existing <out>_epochs.csv (e.g. one merged '
                        'from runs split over several calls)')
    args = p.parse_args(argv)
    base = os.path.splitext(args.out)[0]
    epochs_csv = base + '_epochs.csv'
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    failed = []
    for graph in args.graphs if not args.summarise_only else ():
        for loader in args.loaders:
            for amp in args.amp:
                for n in args.gpus:
                    if run(args, graph, n, loader, amp, epochs_csv) != 0:
                        failed.append((graph, loader, amp, n))
    if not os.path.exists(epochs_csv):
        print('no run finished', file=sys.stderr)
        return 1
    with open(epochs_csv, newline='') as f:
        summary = summarise(list(csv.DictReader(f)))
    with open(base + '.csv', 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY)
        w.writeheader()
        for s in summary:
            w.writerow({k: _fmt(s[k]) for k in SUMMARY})
    md = markdown(summary)
    with open(base + '.md', 'w') as f:
        f.write(md)
    plot(summary, base + '.png')
    print(md)
    for f in failed:
        print(f'failed: {f}', file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
