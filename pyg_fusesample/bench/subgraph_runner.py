"""The subgraph and layer-wise loaders in a training step, against the same
model on pre-sampled batches.

``python -m pyg_fusesample.bench subgraph --graphs products reddit`` writes
one row per (graph, loader, variant):

* loaders: ``saint`` (:class:`~pyg_fusesample.FusedGraphSAINTRandomWalkSampler`,
  PyG's example settings: 6000 walks of 2 steps a batch, no normalisation
  pass), ``shadow`` (:class:`~pyg_fusesample.FusedShaDowKHopSampler`, depth
  2, 5 neighbours, 2000 roots), ``ladies`` and ``fastgcn``
  (:class:`~pyg_fusesample.LayerWiseLoader`, 512 nodes a layer, 512 seeds);
* variants: ``loader`` (each step takes the loader's next batch; the graph
  and features on ``--device``, where the loaders sample),
  ``loader-prefetch`` (the same loader with ``prefetch=True``: its batches
  assembled on a background thread, the same batches), and
  ``pre-sampled`` (the same model on ``--cached`` batches drawn before
  timing and kept on the device: the floor);
* models (hidden 256, Adam): a 2-layer GraphSAGE on the subgraph (saint,
  with the loss on the batch's training nodes; shadow, read out at its
  root nodes), a 2-layer GraphConv over the batch's ``adjs`` with their
  edge weights (ladies, fastgcn).

A step is next batch, forward, backward, optimizer step; eager. Each row
has two timings of the same steps: ``step_ms``, synchronised (``perf_counter``
around a synchronisation of the whole device, which also waits for the
prefetch threads' sampling on their own streams), and ``pipelined_ms``, the
period between the training stream's step completions in a loop that never
waits (``timing.pipelined_periods``: a training loop without ``.item()``;
with it, the wait is the training stream's, not the device's). The three
variants of a loader take turns: ``--rounds`` rounds of ``--steps /
--rounds`` timed steps each, every round after ``--warmup`` untimed ones,
so that the machine's drift falls on all of them. The issue's target is
``loader`` within 1.2x of ``pre-sampled``.
"""
import itertools
import os
import time
from typing import Dict, Iterator, List

import torch
import torch.nn.functional as F

from ..environment import device_name, versions
from .csv_schema import read_rows
from .graph_runs import rows_per_graph
from .timing import median, pipelined_periods

COLUMNS = ['device', 'torch', 'cuda', 'graph', 'num_nodes', 'num_edges',
           'loader', 'variant', 'batch_size', 'step_ms', 'pipelined_ms',
           'steps',
           'batch_nodes', 'batch_edges', 'note']
LOADERS = ('saint', 'shadow', 'ladies', 'fastgcn')
HIDDEN = 256


def make_loader(name: str, data, seed: int, prefetch: bool = False):
    """The loader ``name`` over ``data`` (sampling where data lives), with
    its batch size; ``prefetch``: the loaders' background thread."""
    from ..loader import (FusedGraphSAINTRandomWalkSampler,
                          FusedShaDowKHopSampler, LayerWiseLoader)
    train = data.train_mask if 'train_mask' in data else None
    if name == 'saint':
        return FusedGraphSAINTRandomWalkSampler(
            data, batch_size=6000, walk_length=2, num_steps=1 << 20,
            sample_coverage=0, log=False, seed=seed, prefetch=prefetch), 6000
    if name == 'shadow':
        return FusedShaDowKHopSampler(
            data, depth=2, num_neighbors=5, node_idx=train, batch_size=2000,
            shuffle=True, seed=seed, prefetch=prefetch), 2000
    if name in ('ladies', 'fastgcn'):
        return LayerWiseLoader(data, num_samples=[512, 512], method=name,
                               input_nodes=train, batch_size=512,
                               shuffle=True, seed=seed,
                               prefetch=prefetch), 512
    raise ValueError(f"unknown loader {name!r}, expected one of {LOADERS}")


class SubgraphModel(torch.nn.Module):
    """The model a loader's batches train: see the module docstring."""
    def __init__(self, loader: str, in_channels: int, num_classes: int):
        super().__init__()
        from torch_geometric.nn import GraphConv
        from torch_geometric.nn.models import GraphSAGE
        self.kind = loader
        if loader in ('ladies', 'fastgcn'):
            self.convs = torch.nn.ModuleList([
                GraphConv(in_channels, HIDDEN),
                GraphConv(HIDDEN, num_classes)])
        else:
            out = None if loader == 'shadow' else num_classes
            self.gnn = GraphSAGE(in_channels, HIDDEN, 2, out_channels=out)
            if loader == 'shadow':
                self.head = torch.nn.Linear(HIDDEN, num_classes)

    def loss(self, batch) -> torch.Tensor:
        if self.kind in ('ladies', 'fastgcn'):
            x = batch.x
            for i, (conv, (edge_index, weight, size)) in enumerate(
                    zip(self.convs, batch.adjs)):
                x = conv((x, x[:size[1]]), edge_index, weight)
                if i + 1 < len(self.convs):
                    x = F.relu(x)
            return F.cross_entropy(x, batch.y[:batch.batch_size])
        h = self.gnn(batch.x, batch.edge_index)
        if self.kind == 'shadow':  # (a ShaDow batch's y is its roots')
            return F.cross_entropy(self.head(h[batch.root_n_id]), batch.y)
        mask = batch.train_mask if 'train_mask' in batch else None
        return (F.cross_entropy(h[mask], batch.y[mask]) if mask is not None
                else F.cross_entropy(h, batch.y))


def _cycle(loader) -> Iterator:
    return itertools.chain.from_iterable(itertools.repeat(loader))


def _sync(device: torch.device):
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def _stepper(batches: Iterator, model: SubgraphModel, device):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def step():
        batch = next(batches).to(device)
        opt.zero_grad(set_to_none=True)
        model.loss(batch).backward()
        opt.step()
    return step


def time_steps(batches: Iterator, model: SubgraphModel, device, steps: int,
               warmup: int) -> List[float]:
    """Synchronised step times (ms) of ``steps`` steps after ``warmup``."""
    step = _stepper(batches, model, device)
    times = []
    for i in range(warmup + steps):
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def pipelined_steps(batches: Iterator, model: SubgraphModel, device,
                    steps: int, warmup: int) -> List[float]:
    """The periods (ms) of ``steps`` steps after ``warmup`` in a loop that
    never waits (:func:`~.timing.pipelined_periods`)."""
    return pipelined_periods(_stepper(batches, model, device), steps, warmup,
                             device)


def _size(batch) -> Dict[str, int]:
    edges = (sum(a[0].size(1) for a in batch.adjs) if 'adjs' in batch
             else batch.edge_index.size(1))
    return {'batch_nodes': batch.num_nodes, 'batch_edges': edges}


def loader_rows(graph_name: str, data, device: torch.device,
                loaders: List[str], steps: int, warmup: int, cached: int,
                seed: int = 0, rounds: int = 5) -> List[Dict]:
    """Per loader, its three variants timed in ``rounds`` interleaved rounds
    of ``steps / rounds`` steps (each after ``warmup`` untimed ones: a
    prefetching loader idle during the others' rounds has batches queued),
    synchronised then pipelined; the medians pool the rounds. Interleaving
    keeps a drift of the machine (clocks, neighbours) out of the ratios,
    which a run of 30 steps per variant, one variant after the other, had
    moved by up to 0.3."""
    data = data.to(device)
    num_classes = int(data.y.max()) + 1
    base = {'device': device_name(device), **versions(), 'graph': graph_name,
            'num_nodes': data.num_nodes, 'num_edges': data.num_edges}
    rows = []
    per_round = max(1, steps // rounds)
    for name in loaders:
        loader, batch_size = make_loader(name, data, seed)
        # The floor's batches: drawn first, kept on the device.
        it = iter(_cycle(loader))
        fixed = [next(it).to(device) for _ in range(cached)]
        sizes = _size(fixed[0])
        ahead = make_loader(name, data, seed, prefetch=True)[0]
        variants = {'loader': it, 'loader-prefetch': iter(_cycle(ahead)),
                    'pre-sampled': iter(_cycle(fixed))}
        models = {}
        for variant in variants:
            torch.manual_seed(seed)
            models[variant] = SubgraphModel(name, data.num_features,
                                            num_classes).to(device)
        synced = {v: [] for v in variants}
        pipelined = {v: [] for v in variants}
        for _ in range(rounds):
            for variant, batches in variants.items():
                model = models[variant]
                synced[variant] += time_steps(batches, model, device,
                                              per_round, warmup)
                pipelined[variant] += pipelined_steps(batches, model, device,
                                                      per_round, warmup)
        for variant in variants:
            ms, pipe = median(synced[variant]), median(pipelined[variant])
            row = dict(base, loader=name, variant=variant,
                       batch_size=batch_size, step_ms=f'{ms:.3f}',
                       pipelined_ms=f'{pipe:.3f}',
                       steps=per_round * rounds, **sizes)
            row['note'] = f'{rounds} interleaved rounds' + (
                f'; {cached} batches cycled' if variant == 'pre-sampled'
                else '')
            rows.append(row)
            print(f"{graph_name} {name} {variant}: {ms:.3f} ms a step, "
                  f"{pipe:.3f} ms pipelined "
                  f"({sizes['batch_nodes']:,} nodes, {sizes['batch_edges']:,} "
                  f"edges a batch)", flush=True)
        del loader, it, fixed, variants, models
    return rows


def markdown(path: str) -> str:
    rows = read_rows(path)
    floors = {(r['graph'], r['loader']): r for r in rows
              if r['variant'] == 'pre-sampled'}
    lines = [f'<!-- generated from {os.path.basename(path)}; do not edit -->',
             '', '| device | graph | loader | batch | nodes / batch | '
             'edges / batch | loader step ms | pre-sampled step ms | loader '
             '/ pre-sampled | pipelined: loader ms | pre-sampled ms | loader '
             '/ pre-sampled |', '|' + '---|' * 12]

    def cells(r, floor, column):
        if floor is None or not r.get(column) or not floor.get(column):
            return [r.get(column) or '-', '-', '-']
        ratio = float(r[column]) / float(floor[column])
        return [r[column], floor[column], f'{ratio:.2f}']
    for r in rows:
        if r['variant'] == 'pre-sampled':
            continue
        floor = floors.get((r['graph'], r['loader']))
        label = r['loader'] + (' (prefetch)' if r['variant'] ==
                               'loader-prefetch' else '')
        lines.append('| ' + ' | '.join(
            [r['device'], r['graph'], label, r['batch_size'],
             r['batch_nodes'], r['batch_edges']]
            + cells(r, floor, 'step_ms') + cells(r, floor, 'pipelined_ms'))
            + ' |')
    return '\n'.join(lines) + '\n'


def main(args) -> int:
    device = torch.device(args.device)
    rows_per_graph(args, device, 'subgraph', lambda label, data: loader_rows(
        label, data, device, args.loaders, args.steps, args.warmup,
        args.cached, args.seed, args.rounds), COLUMNS, markdown)
    return 0
