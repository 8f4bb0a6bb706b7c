"""``python -m pyg_fusesample.bench loader``: loader throughput per variant.

A measured step is one ``next(iterator)`` of the loader -- sampling,
relabelling and slicing the node/edge attributes, as a training loop sees
it. The loaders cycle (a new epoch starts when one runs out) so long runs
never time an epoch start more than once per epoch, like a real loop.
"""
import itertools
from typing import Dict, List

import torch

from .env_info import device_name, versions
from .timing import median, timed_calls

LOADER_VARIANTS = ('pyg', 'fused')


def _make_loader(variant: str, data, fanout, batch_size, num_workers, seed):
    common = dict(num_neighbors=fanout, batch_size=batch_size,
                  input_nodes=data.train_mask, shuffle=True,
                  num_workers=num_workers,
                  persistent_workers=num_workers > 0)
    if variant == 'pyg':
        from torch_geometric.loader import NeighborLoader
        return NeighborLoader(data, **common)
    if variant == 'fused':
        from ..loader import FusedNeighborLoader
        return FusedNeighborLoader(data, seed=seed, **common)
    raise ValueError(f"unknown loader variant '{variant}', expected one of "
                     f"{LOADER_VARIANTS}")


def _cycle(loader):
    while True:
        yield from loader


def bench_loader(data, graph_name: str, fanout: List[int], batch_size: int,
                 variant: str, num_workers: int, steps: int, warmup: int,
                 seed: int = 0) -> Dict:
    device = torch.device('cpu')
    loader = _make_loader(variant, data, fanout, batch_size, num_workers, seed)
    it = _cycle(loader)
    edges = []

    def step():
        batch = next(it)
        edges.append(batch.edge_index.size(1))

    times = timed_calls(step, steps, warmup, device)
    timed_edges = sum(edges[warmup:])
    ms = median(times)
    return {
        'device': device_name(device), **versions(), 'graph': graph_name,
        'num_nodes': data.num_nodes, 'num_edges': data.num_edges,
        'fanout': '-'.join(map(str, fanout)), 'batch_size': batch_size,
        'amp': 'off', 'variant': variant, 'num_workers': num_workers,
        'step_ms': f'{ms:.3f}', 'loader_ms': f'{ms:.3f}',
        'batches_per_s': f'{1e3 / ms:.2f}',
        'sampled_edges_per_s': f'{timed_edges / (sum(times) / 1e3):.4g}',
        'steps': steps,
    }


def run(args, data, graph_name: str):
    rows = []
    for fanout, batch_size, variant, nw in itertools.product(
            args.fanouts, args.batch_sizes, args.variants, args.num_workers):
        row = bench_loader(data, graph_name, fanout, batch_size, variant, nw,
                           args.steps, args.warmup, args.seed)
        print(f"{graph_name} fanout={row['fanout']} batch={batch_size} "
              f"{variant:>6} workers={nw}: {row['loader_ms']} ms/batch, "
              f"{row['batches_per_s']} batches/s", flush=True)
        rows.append(row)
    return rows
