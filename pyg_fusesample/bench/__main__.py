"""Benchmark harness CLI (one CSV schema: bench/csv_schema.py).

    python -m pyg_fusesample.bench loader --graph power_law_1m --device cpu \\
        --variants pyg fused --fanouts 15,10 15,10,5 --batch-sizes 1024
    python -m pyg_fusesample.bench step --graph products --device cuda \\
        --variants pyg fused per-hop torch-gpu model-only --amp off on
    python -m pyg_fusesample.bench step --graph products --device cuda \\
        --variants fused fused-thread model-only --rounds 3  # interleaved
    python -m pyg_fusesample.bench epoch --graph products --variants fused
    python -m pyg_fusesample.bench step --graph mag --device cuda \\
        --variants pyg fused fused-sync model-only --num-workers 8
    python -m pyg_fusesample.bench step --task link --graph products \\
        --variants pyg fused model-only --num-workers 8
    python -m pyg_fusesample.bench sage --graph products --fanouts 15,10 \\
        --variants pyg fused-loader fused-sage fused-sage-emb --amp off on \\
        --num-workers 0 8
    python -m pyg_fusesample.bench sage-curve --graph products \\
        --fanouts 15,10 --epochs 10 --num-workers 8
    python -m pyg_fusesample.bench spmm --graphs products reddit hub er
    python -m pyg_fusesample.bench walk --graphs products reddit
    python -m pyg_fusesample.bench gather --features 128 256 --rows 200000
    python -m pyg_fusesample.bench layers --graphs products mag \\
        --dtypes float32 bfloat16 --rounds 2
    python -m pyg_fusesample.bench report benchmarks/results/x.csv

Graphs are pyg_fusesample.datasets names: SYNTHETIC graphs with real
graphs' statistics (no data set can be downloaded here).

Heterogeneous graphs (--graph mag: mag_like, built with features='all' as
PyG's to_hetero_mag.py takes metapath2vec features for the featureless
types) go through loader/step/epoch like homogeneous ones: seeds are the
train nodes of the labelled type (paper), the model is to_hetero(GraphSAGE),
sampled edges count every edge type (bench/runner.py). --task link (loader,
step, epoch) predicts links instead: 10% of the edges as seeds, binary
negatives 1:1, GraphSAGE encoder + dot product, BCE; rows name the graph
'<name>/link' (bench/link.py; a HeteroData such as user_item predicts its
one non-'rev_' relation).
"""
import argparse
import itertools
import os
import sys

import torch

from .layer_runner import add_parser as add_layers_parser
from .link import LINK_VARIANTS
from .runner import SAMPLING_KWARGS
from .walk_runner import N2V_VARIANTS, WALK_VARIANTS


def _fanout(text: str):
    return [int(k) for k in text.split(',')]


def _walk_scale(text: str) -> str:
    # 'small' (bench/walk_runner.py sizes it per graph) or a factor in (0, 1]
    if text != 'small':
        try:
            ok = 0.0 < float(text) <= 1.0
        except ValueError:
            ok = False
        if not ok:
            raise argparse.ArgumentTypeError(
                f"expected 'small' or a number in (0, 1], got {text!r}")
    return text


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1, got {value}')
    return value


def _common(p, variants, out):
    p.add_argument('--graph', default='power_law_1m')
    p.add_argument('--scale', type=float, default=1.0)
    p.add_argument('--fanouts', type=_fanout, nargs='+',
                   default=[[15, 10], [15, 10, 5]])
    p.add_argument('--batch-sizes', type=int, nargs='+', default=[1024])
    p.add_argument('--variants', nargs='+', default=variants)
    p.add_argument('--num-workers', type=int, nargs='+', default=[0],
                   help="worker counts tried for the 'pyg' variant")
    p.add_argument('--amp', nargs='+', default=['off'], choices=['off', 'on'])
    p.add_argument('--steps', type=int, default=30)
    p.add_argument('--warmup', type=int, default=5)
    p.add_argument('--settle-steps', type=int, default=20,
                   help='untimed steps (fused loader, prefetch off) before '
                        'the first variant of each setting; 0: none')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--device', default='cuda' if torch.cuda.is_available()
                   else 'cpu')
    p.add_argument('--threads', type=int, default=None)
    p.add_argument('--out', default=out)


def _variants(args, parser, supported):
    """The variants to run: all of those asked for, or, where --variants was
    left at its default, those of the default that this graph and task have
    (torch-gpu: homogeneous node classification only)."""
    unknown = [v for v in args.variants if v not in supported]
    if not unknown:
        return args.variants
    if args.variants == parser.get_default('variants'):
        print(f'(default variants {unknown} do not apply here, skipped)')
        return [v for v in args.variants if v in supported]
    raise SystemExit(f'variant(s) {unknown} do not apply to this graph and '
                     f'task; expected some of {list(supported)}')


def _measure(args, parser, bench, name, emit):
    """The rows of every setting x round x variant of one Bench: each
    setting's rows (model-only floors filled) are passed to :obj:`emit` as
    soon as they are measured, so that a run stopped later (a time limit,
    a crash) keeps them."""
    from .runner import fill_model_ms, run_row, time_epoch
    from .timing import warm_up_device
    if getattr(bench, 'sampling', 'uniform') != 'uniform':
        # (a variant this sampling rule rules out was reported by Bench)
        variants = [v for v in args.variants if v in bench.VARIANTS]
    else:
        variants = _variants(args, parser, bench.VARIANTS)
    warm_up_device(bench.device)
    for fanout, bs, amp in itertools.product(args.fanouts, args.batch_sizes,
                                             args.amp):
        rows = []
        if (args.cmd in ('loader', 'step') and args.settle_steps > 0
                and bench.device.type == 'cuda'):
            # On host-bound GPU rows (a small model, call56/call62) the first
            # variant measured in a setting ran up to 1.7x slower, whatever
            # it was; untimed steps with the setting's shapes come first.
            run_row(bench, name, fanout, bs, amp == 'on',
                    bench.SETTLE_VARIANT, 0, args.settle_steps, 0,
                    train=args.cmd == 'step')
        # Variants in turn, round after round: a drift of the machine
        # (clocks, another tenant) then touches every variant alike, and the
        # spread over rounds says how far one run can be trusted.
        for rnd, variant in itertools.product(range(args.rounds),
                                              variants):
            for nw in (args.num_workers if variant == 'pyg' else [0]):
                if args.cmd == 'epoch':
                    row = time_epoch(bench, name, fanout, bs, variant)
                else:
                    row = run_row(bench, name, fanout, bs, amp == 'on',
                                  variant, nw, args.steps, args.warmup,
                                  train=args.cmd == 'step')
                row['round'] = rnd
                print(f"{name} [{row['fanout']}] b={bs} amp={row['amp']} "
                      f"{row['variant']:>10} layers={row.get('layers', '-')} "
                      f"w={nw} round {rnd}: step "
                      f"{row['step_ms']} ms, pipelined "
                      f"{row.get('pipelined_step_ms') or '-'} ms, loader "
                      f"{row['loader_ms']} ms, "
                      f"{row['sampled_edges_per_s']} edges/s", flush=True)
                rows.append(row)
        fill_model_ms(rows)
        emit(rows)


def _report(path: str) -> int:
    # The markdown (and, where there is one, the PNG) of a CSV, by its
    # schema: a training-step / loader CSV, or one of spmm, walk, gather.
    import csv
    base = os.path.splitext(path)[0]
    with open(path, newline='') as f:
        columns = set(next(csv.reader(f), []))
    if 'cusparse_ms' in columns:
        from . import spmm_runner as runner
        runner.plot(path, base + '.png')
    elif {'loader', 'batch_edges'} <= columns:
        from . import subgraph_runner as runner
    elif {'nnz', 'warm_ms'} <= columns:
        from . import conv_runner as runner
    elif 'walk_steps_per_s' in columns:
        from . import walk_runner as runner
    elif 'fraction_of_link' in columns:
        from . import gather_runner as runner
    elif {'floor_ms', 'model'} <= columns:
        from . import layer_runner as runner
    else:
        from .report import write_report
        print(write_report(path, base + '.md', base + '.png'))
        return 0
    md = runner.markdown(path)
    with open(base + '.md', 'w') as f:
        f.write(md)
    print(md)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m pyg_fusesample.bench',
                                     description=__doc__)
    sub = parser.add_subparsers(dest='cmd', required=True)
    _common(sub.add_parser('loader', help='loader alone'), ['pyg', 'fused'],
            'benchmarks/results/loader.csv')
    _common(sub.add_parser('step', help='training steps'),
            ['pyg', 'fused', 'per-hop', 'torch-gpu', 'model-only'],
            'benchmarks/results/step.csv')
    _common(sub.add_parser('epoch', help='one epoch of loading'),
            ['fused'], 'benchmarks/results/epoch.csv')
    sub.choices['step'].add_argument(
        '--layers', nargs='+', choices=['pyg', 'fused'], default=['pyg'],
        help="the model's convs: PyG's, or ours (fused: to_fused of the same "
             "model, called with the batch's per-hop counts, so trimmed; "
             "node classification); every variant runs with each (column "
             "layers)")
    for cmd in ('loader', 'step', 'epoch'):
        sub.choices[cmd].add_argument(
            '--rounds', type=_positive, default=1,
            help='measure every variant of a setting this many times, in '
                 'interleaved rounds (column round); each row is compared '
                 'with the floor of its own round')
        sub.choices[cmd].add_argument(
            '--sampling', choices=list(SAMPLING_KWARGS),
            nargs='+', default=['uniform'],
            help="weighted: random edge weights (weight_attr); temporal: "
                 "random node times (time_attr), seeds bounded by their own "
                 "time; disjoint: uniform, disjoint=True; weighted-temporal: "
                 "both attributes; induced: subgraph_type='induced' "
                 "(runner.SAMPLING_KWARGS)")
        sub.choices[cmd].add_argument(
            '--task', choices=['node', 'link'], default='node',
            help="node: node classification (a HeteroData's labelled type); "
                 "link: link prediction, variants "
                 f"{' '.join(LINK_VARIANTS)} (bench/link.py)")
    _common(sub.add_parser('sage', help='FusedGraphSAGE vs PyG GraphSAGE '
                           'training steps (bench/sage_runner.py)'),
            ['pyg', 'fused-loader', 'fused-sage', 'fused-sage-emb'],
            'benchmarks/results/sage.csv')
    sub.choices['sage'].add_argument(
        '--rounds', type=_positive, default=1,
        help='measure every variant of a setting this many times, in '
             'interleaved rounds (column round)')
    cp = sub.add_parser('sage-curve', help='accuracy vs wall-clock, PyG '
                        'GraphSAGE vs FusedGraphSAGE (no --steps/--warmup)')
    _common(cp, ['pyg', 'fused-sage'], 'benchmarks/results/sage_curve.csv')
    cp.add_argument('--epochs', type=int, default=10)
    sp = sub.add_parser('spmm', help='scheduler choice vs cuSPARSE and the '
                        'gather floor; GCN step vs GCNConv (bench/spmm_runner.py)')
    sp.add_argument('--graphs', nargs='+', default=['products', 'reddit', 'hub', 'er'])
    sp.add_argument('--features', type=int, nargs='+',
                    default=[16, 32, 64, 128, 256, 512])
    sp.add_argument('--dtypes', nargs='+', default=['float32', 'bfloat16'])
    sp.add_argument('--scale', type=float, default=1.0)
    sp.add_argument('--seed', type=int, default=0)
    sp.add_argument('--steps', type=int, default=30)
    sp.add_argument('--no-gcn', action='store_true')
    sp.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    sp.add_argument('--out', default='benchmarks/results/spmm.csv')
    cp = sub.add_parser('conv', help='one GCN layer, forward + backward, '
                        'AutoSpMMConv vs GCNConv (edge_index and CSR adj_t), '
                        'per graph x F x dtype (bench/conv_runner.py)')
    cp.add_argument('--graphs', nargs='+', default=['products', 'reddit', 'hub'])
    cp.add_argument('--features', type=int, nargs='+',
                    default=[16, 32, 64, 128, 256])
    cp.add_argument('--dtypes', nargs='+',
                    default=['float32', 'float16', 'bfloat16'],
                    choices=['float32', 'float16', 'bfloat16'])
    cp.add_argument('--scale', type=float, default=1.0)
    cp.add_argument('--seed', type=int, default=0)
    cp.add_argument('--steps', type=_positive, default=10)
    cp.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    cp.add_argument('--quality', action='store_true',
                    help="also time each SpMM's fresh decision and every "
                         "candidate on the whole graph (chosen / best)")
    cp.add_argument('--out', default='benchmarks/results/conv.csv')
    gp2 = sub.add_parser('subgraph', help='GraphSAINT / ShaDow / LADIES / '
                         'FastGCN loaders in a training step vs the model on '
                         'pre-sampled batches (bench/subgraph_runner.py)')
    gp2.add_argument('--graphs', nargs='+', default=['products', 'reddit'])
    gp2.add_argument('--loaders', nargs='+',
                     default=['saint', 'shadow', 'ladies', 'fastgcn'],
                     choices=['saint', 'shadow', 'ladies', 'fastgcn'])
    gp2.add_argument('--scale', type=float, default=1.0)
    gp2.add_argument('--seed', type=int, default=0)
    gp2.add_argument('--steps', type=_positive, default=60)
    gp2.add_argument('--rounds', type=_positive, default=5,
                     help='interleaved rounds the steps of each variant are '
                     'split into')
    gp2.add_argument('--warmup', type=int, default=6,
                     help='untimed steps before each round')
    gp2.add_argument('--cached', type=_positive, default=8,
                     help="batches the 'pre-sampled' floor cycles through")
    gp2.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    gp2.add_argument('--out', default='benchmarks/results/subgraph.csv')
    wp = sub.add_parser('walk', help='random-walk throughput vs a memory '
                        'bound, and Node2Vec training steps, fused vs '
                        'torch_cluster (bench/walk_runner.py)')
    wp.add_argument('--graphs', nargs='+', default=['products', 'reddit'])
    wp.add_argument('--scale', type=_walk_scale, default='1.0',
                    help="node-count factor of the graphs, or 'small' (about "
                         "2,000 nodes each)")
    wp.add_argument('--seed', type=int, default=0)
    wp.add_argument('--variants', nargs='*', default=list(WALK_VARIANTS),
                    help='walk-throughput variants (none: skip that part)')
    wp.add_argument('--walks', type=int, default=0,
                    help='walks per pass from random starts (0: one walk '
                         'from every node)')
    wp.add_argument('--hub-starts', type=int, default=0,
                    help='start the walks (--walks, or one per node) from '
                         'this many highest out-degree nodes in equal '
                         'shares instead (0: random / every node)')
    wp.add_argument('--walk-length', type=_positive, default=80,
                    help='steps per walk')
    wp.add_argument('--p', type=float, default=1.0,
                    help='node2vec p of the *-node2vec walk variants')
    wp.add_argument('--q', type=float, default=0.5,
                    help='node2vec q of the *-node2vec walk variants')
    wp.add_argument('--repeats', type=_positive, default=10,
                    help='timed passes per walk variant (median)')
    wp.add_argument('--warmup', type=int, default=2)
    wp.add_argument('--variant-seconds', type=float, default=30.0,
                    help='time cap per walk variant (warm-up + timed '
                         'passes): slower variants get fewer timed passes, '
                         'at least one, recorded in steps and note; 0: no '
                         'cap')
    wp.add_argument('--n2v-variants', nargs='*', default=list(N2V_VARIANTS))
    wp.add_argument('--n2v-steps', type=int, default=50,
                    help='timed Node2Vec training steps (0: skip that part)')
    wp.add_argument('--n2v-warmup', type=int, default=5)
    wp.add_argument('--n2v-batch-size', type=_positive, default=4096,
                    help="seeds per Node2Vec step (PyG's example: 128 on "
                         "Cora)")
    wp.add_argument('--n2v-p', type=float, default=1.0)
    wp.add_argument('--n2v-q', type=float, default=1.0)
    wp.add_argument('--n2v-workers', type=int, default=0,
                    help="loader workers of the 'pyg-node2vec' variant (CPU "
                         "walks); the others walk on the device with 0")
    wp.add_argument('--threads', type=int, default=None)
    wp.add_argument('--device', default='cuda' if torch.cuda.is_available()
                    else 'cpu')
    wp.add_argument('--out', default='benchmarks/results/walk.csv')
    gp = sub.add_parser('gather', help='feature rows from pinned host '
                        'memory (zero-copy, through the GPU cache) against '
                        "the link's bandwidth (bench/gather_runner.py)")
    gp.add_argument('--scale', type=float, default=1.0,
                    help='products-like node-count factor')
    gp.add_argument('--features', type=int, nargs='+', default=[128, 256])
    gp.add_argument('--dtypes', nargs='+', default=['float32'])
    gp.add_argument('--rows', type=_positive, default=200_000,
                    help='distinct rows per batch (drawn by out-degree)')
    gp.add_argument('--cache-fractions', type=float, nargs='*',
                    default=[0.05, 0.2], help='cached share of the rows')
    gp.add_argument('--repeats', type=_positive, default=20)
    gp.add_argument('--seed', type=int, default=0)
    gp.add_argument('--device', default='cuda' if torch.cuda.is_available()
                    else 'cpu')
    gp.add_argument('--out', default='benchmarks/results/gather.csv')
    add_layers_parser(sub, _positive)
    rp = sub.add_parser('report', help='markdown + PNG from a CSV')
    rp.add_argument('csv')
    args = parser.parse_args(argv)

    from .report import write_report
    if args.cmd == 'report':
        return _report(args.csv)

    if args.cmd == 'spmm':
        from . import spmm_runner
        return spmm_runner.main(args)
    if args.cmd == 'conv':
        from . import conv_runner
        return conv_runner.main(args)
    if args.cmd == 'subgraph':
        from . import subgraph_runner
        return subgraph_runner.main(args)
    if args.cmd == 'walk':
        from . import walk_runner
        return walk_runner.main(args)
    if args.cmd == 'gather':
        from . import gather_runner
        return gather_runner.main(args)
    if args.cmd == 'layers':
        from . import layer_runner
        return layer_runner.main(args)
    from ..datasets import get_dataset
    from .csv_schema import append_rows
    from .graph_runs import dataset_kwargs
    from .link import LinkBench
    from .runner import Bench
    from .timing import warm_up_device
    if args.threads:
        torch.set_num_threads(args.threads)
    # mag_like with features for every node type (module docstring)
    data = get_dataset(args.graph, scale=args.scale, seed=args.seed,
                       **dataset_kwargs(args.graph))
    name = getattr(data, 'name', args.graph)
    print(f'SYNTHETIC graph {name}: {data.num_nodes:,} nodes, '
          f'{data.num_edges:,} edges', flush=True)
    task = getattr(args, 'task', 'node')
    samplings = getattr(args, 'sampling', ['uniform'])
    if task == 'link' and samplings != ['uniform']:
        raise SystemExit('--sampling weighted/temporal is measured for node '
                         'classification (--task node)')
    if args.cmd in ('sage', 'sage-curve'):
        bench = Bench(data, torch.device(args.device), args.seed)
        if bench.hetero:
            raise SystemExit(f'{args.cmd} trains FusedGraphSAGE on a '
                             f'homogeneous graph; {name} is heterogeneous')
        warm_up_device(bench.device)
        from . import sage_runner
        return sage_runner.main(bench, name, args)
    layer_kinds = getattr(args, 'layers', ['pyg'])
    if task == 'link' and layer_kinds != ['pyg']:
        raise SystemExit('--layers fused is measured for node classification '
                         '(--task node)')
    for sampling in samplings:  # one graph, several sampling rules
        bench = (LinkBench if task == 'link' else Bench)(
            data, torch.device(args.device), args.seed,
            **({'sampling': sampling} if sampling != 'uniform' else {}))
        for layers in layer_kinds:
            bench.layers = layers
            # (each setting's rows written as soon as they are measured)
            _measure(args, sub.choices[args.cmd], bench,
                     name + ('/link' if task == 'link' else '')
                     + ('' if sampling == 'uniform' else f'/{sampling}'),
                     emit=lambda rows: append_rows(args.out, rows))
    base = os.path.splitext(args.out)[0]
    print(write_report(args.out, base + '.md', base + '.png'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
