"""FusedGraphSAGE vs PyG GraphSAGE: training-step rows and learning curves.

``python -m pyg_fusesample.bench sage`` writes rows of the one CSV schema
(:mod:`.csv_schema`), one per (fan-out, batch size, AMP, variant[, workers]),
all variants in one process run on one graph:

* ``pyg``, ``fused-loader`` (and any other variant of :mod:`.runner`, e.g.
  ``model-only``): PyG GraphSAGE (hidden 256, AdamW) fed by NeighborLoader
  (once per ``--num-workers``) or by FusedNeighborLoader. These rows come
  from :func:`.runner.run_row` unchanged (``fused-loader`` is its ``fused``
  variant), so they mean what the ``step`` rows mean: ``step_ms`` = next
  batch + forward + backward + optimizer step, ``loader_ms`` = the part up to
  the batch being on the device, ``model_ms`` = the ``model-only`` step of
  the same setting when that variant is run, ``sampled_edges_per_s`` =
  subgraph (deduplicated) edges per second of loader time.
* ``fused-sage``: :class:`~pyg_fusesample.nn.FusedGraphSAGE` (hidden 256)
  on the whole graph on the device, features frozen; a step takes the next
  ``batch_size`` seeds of a shuffled permutation of the train nodes (full
  batches only) and runs forward (sampling is inside it) + cross-entropy +
  backward + AdamW (``fused=True`` on CUDA).
* ``fused-sage-emb``: the same with learnable node embeddings
  (``torch.nn.Embedding`` initialised from the features, passed as ``x``), so
  the backward to ``x`` and the AdamW update of the table are in the step.
* ``fused-sage-compiled``, ``fused-sage-compiled-graphs``: ``fused-sage``
  with the model under ``torch.compile(fullgraph=True)``, default mode and
  ``mode='reduce-overhead'`` (CUDA graphs by torch's cudagraph trees); the
  optimizer step stays eager. Compilation happens in the warm-up steps.
* ``compile-floor``, ``compile-floor-graphs``: the compiled step with
  :class:`GemmFloor` in place of the model (FusedGraphSAGE's parameters, its
  forward four GEMMs on ``x[seeds]``: no sampling, no op of ours): what
  ``torch.compile``'s runtime, the loss, autograd and AdamW cost a step on
  their own, the floor under any compiled model of these parameters.
* ``fused-sage-graph``, ``fused-sage-emb-graph``: the same steps captured
  once in a CUDA graph and replayed (:class:`~pyg_fusesample.nn.CapturedStep`,
  AdamW ``capturable=True``); every replay draws new neighbours (the op reads
  its RNG key from the CUDA generator inside the kernel). CUDA only.

For the fused-sage variants sampling cannot be separated from the model, so
``step_ms`` is the whole step and ``loader_ms`` / ``model_ms`` are left
empty; ``sampled_edges_per_s`` = sampled tree edges of one step (counted once,
outside the timed loop, from :meth:`FusedGraphSAGE.sample_tree` of one batch
with a fixed RNG key: the valid draws of every expanded level plus
``min(deg, k)`` per node of the last level) / median step time. Tree edges
count a node reached twice twice; the loader rows count deduplicated
subgraph edges, so the two edge rates are not the same quantity.
Timing: :func:`.timing.timed_calls` (synchronised), median of ``--steps``
steps after ``--warmup``; peak memory is reset before the timed loop and
transient = peak - allocated before it. For the ``-graph`` variants the
reset comes before the capture (after two eager steps that create the
optimizer state), so transient includes the graph's private memory pool and
one eager warm-up step on the capture stream.

``python -m pyg_fusesample.bench sage-curve`` trains each variant for
``--epochs`` epochs over the train split and writes, per epoch, the training
seconds since the start (evaluation excluded; epoch 0 = before training),
the mean train loss and the validation / test accuracy of exact full-neighbour
inference over the whole graph on the device: FusedGraphSAGE in eval mode
(one fused ``k = -1`` aggregation per layer), PyG GraphSAGE as one full-graph
forward over a ``torch.sparse`` CSR ``adj_t`` (SpMM, never an edge-by-feature
message tensor: a few GB on products-size graphs). The CSV (overwritten) gets
a PNG of accuracy against seconds next to it.
"""
import contextlib
import csv
import itertools
import os
import time
import warnings
from typing import Dict, List

import torch
import torch.nn.functional as F

from .csv_schema import append_rows
from ..environment import device_name, versions
from .report import write_report
from .runner import (STEP_VARIANTS, Bench, _cycle, _setting, _sync,
                     fill_model_ms, run_row)
from .timing import median, timed_calls

SAGE_VARIANTS = ('fused-sage', 'fused-sage-emb', 'fused-sage-graph',
                 'fused-sage-emb-graph', 'fused-sage-compiled',
                 'fused-sage-compiled-graphs', 'compile-floor',
                 'compile-floor-graphs')
# torch.compile modes of the compiled variants (fullgraph=True)
COMPILE_MODES = {'fused-sage-compiled': 'default',
                 'fused-sage-compiled-graphs': 'reduce-overhead',
                 'compile-floor': 'default',
                 'compile-floor-graphs': 'reduce-overhead'}
ALIASES = {'fused-loader': 'fused'}  # sage name -> runner.py variant
CURVE_COLUMNS = ['device', 'torch', 'graph', 'fanout', 'batch_size', 'amp',
                 'variant', 'num_workers', 'epoch', 'seconds', 'loss',
                 'val_acc', 'test_acc']


def _autocast(device: torch.device, amp: bool, cache: bool = True):
    # The weight-cast cache must be off inside a CUDA graph capture.
    return (torch.autocast(device.type, dtype=torch.bfloat16,
                           cache_enabled=cache) if amp
            else contextlib.nullcontext())


def seed_batches(train_idx: torch.Tensor, batch_size: int,
                 drop_last: bool = False):
    """One epoch of seeds: the train nodes in a fresh random order (drawn on
    their device, no host sync), ``batch_size`` at a time."""
    perm = train_idx[torch.randperm(train_idx.numel(),
                                    device=train_idx.device)]
    batches = perm.split(batch_size)
    if drop_last and train_idx.numel() >= batch_size:
        batches = batches[:train_idx.numel() // batch_size]
    return batches


class GemmFloor(torch.nn.Module):
    """FusedGraphSAGE's parameters (``lin_l``/``lin_r`` per layer) with a
    forward of GEMMs only: ``h = x[seeds]`` (every node's row without
    ``seeds``, as FusedGraphSAGE's full inference), then per layer
    ``lin_l(h) + lin_r(h)`` (ReLU between layers). No sampling, no
    aggregation: the ``compile-floor`` variants' model."""
    def __init__(self, in_channels: int, hidden: int, out_channels: int,
                 num_layers: int):
        super().__init__()
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.lin_l = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.lin_r = torch.nn.ModuleList(
            torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

    def forward(self, x, edge_index, seeds=None):
        h = x if seeds is None else x[seeds]
        for i, (l, r) in enumerate(zip(self.lin_l, self.lin_r)):
            h = l(h) + r(h)
            if i < len(self.lin_l) - 1:
                h = h.relu()
        return h


class FusedSage:
    """FusedGraphSAGE training on a :class:`.runner.Bench`'s device graph,
    with frozen features or (``emb=True``) learnable node embeddings, eager
    or (``captured=True``) replayed from a CUDA graph."""
    def __init__(self, bench: Bench, fanout: List[int], emb: bool = False,
                 hidden: int = 256, captured: bool = False,
                 compile_mode: str = '', floor: bool = False):
        from ..nn import FusedGraphSAGE
        d = bench.data_dev
        torch.manual_seed(bench.seed)
        self.floor = floor
        if floor:
            self.model = GemmFloor(d.num_features, hidden, bench.num_classes,
                                   len(fanout)).to(bench.device)
        else:
            self.model = FusedGraphSAGE(
                d.num_features, hidden, bench.num_classes,
                num_layers=len(fanout), num_neighbors=fanout).to(bench.device)
        params = list(self.model.parameters())
        self.x = d.x  # requires_grad False: no backward to the features
        if emb:
            # clone: from_pretrained would train the shared features in place
            table = torch.nn.Embedding.from_pretrained(d.x.clone(),
                                                       freeze=False)
            self.x = table.weight
            params += list(table.parameters())
        if captured and bench.device.type != 'cuda':
            raise SystemExit('the *-graph variants need a CUDA device')
        self.captured, self.graphed = captured, None
        self.opt = torch.optim.AdamW(params, lr=1e-3,
                                     fused=bench.device.type == 'cuda',
                                     capturable=captured)
        self.edge_index, self.y = d.edge_index, d.y
        self.train_idx = d.train_mask.nonzero().view(-1)
        self.forward = self.model
        if compile_mode:
            # PyTorch's recipe for large inputs that never change: CUDA
            # graphs (reduce-overhead) would otherwise copy the features and
            # the edge list into static buffers on every replay, and the
            # model's CSC memo would miss on the copies.
            for t in (self.x, self.edge_index):
                torch._dynamo.mark_static_address(t)
            self.forward = torch.compile(self.model, fullgraph=True,
                                         mode=compile_mode)

    def _body(self, seeds: torch.Tensor, autocast) -> torch.Tensor:
        with autocast:
            out = self.forward(self.x, self.edge_index, seeds)
            loss = F.cross_entropy(out.float(), self.y[seeds])
        loss.backward()
        self.opt.step()
        return loss.detach()

    def eager_step(self, seeds: torch.Tensor, autocast) -> torch.Tensor:
        self.opt.zero_grad(set_to_none=True)
        return self._body(seeds, autocast)

    def step(self, seeds: torch.Tensor, autocast) -> torch.Tensor:
        if not self.captured:
            return self.eager_step(seeds, autocast)
        if self.graphed is None:
            from ..nn import CapturedStep
            self.graphed = CapturedStep(lambda s: self._body(s, autocast),
                                        self.opt, seeds.numel(), seeds.device,
                                        warmup=1, example_seeds=seeds)
        return self.graphed(seeds).clone()  # the graph's loss is overwritten

    @torch.no_grad()
    def logits(self) -> torch.Tensor:
        """Exact full-neighbour inference of every node."""
        self.model.eval()
        out = self.model(self.x, self.edge_index)
        self.model.train()
        return out

    @torch.no_grad()
    def tree_edges(self, seeds: torch.Tensor, rng_seed: int = 0) -> int:
        """Sampled tree edges of one step on ``seeds`` (host syncs: call it
        outside timed loops); 0 for the floor model, which samples none."""
        from ..nn.graph_input import as_csc
        if self.floor:
            return 0
        m = self.model
        levels, _ = m.sample_tree(self.x, self.edge_index, seeds,
                                  rng_seed=rng_seed)
        edges = sum(int((lv >= 0).sum()) for lv in levels[1:])
        # The last level's draws are never materialised: count them.
        colptr, _ = as_csc(self.edge_index, self.x.size(0), self.x.size(0))
        last = levels[-1][levels[-1] >= 0]
        deg, k = colptr[last + 1] - colptr[last], m.num_neighbors[-1]
        if k >= 0:
            deg = (deg > 0) * k if m.replace else deg.clamp(max=k)
        return edges + int(deg.sum())


def _fused_sage(bench: Bench, fanout: List[int], variant: str) -> FusedSage:
    return FusedSage(bench, fanout, emb='-emb' in variant,
                     captured=variant.endswith('-graph'),
                     compile_mode=COMPILE_MODES.get(variant, ''),
                     floor=variant.startswith('compile-floor'))


def sage_row(bench: Bench, graph: str, fanout: List[int], batch_size: int,
             amp: bool, variant: str, steps: int, warmup: int) -> Dict:
    """One timed row of a fused-sage variant (see the module docstring)."""
    dev = bench.device
    run = _fused_sage(bench, fanout, variant)
    batches = _cycle(lambda: seed_batches(run.train_idx, batch_size, True))
    edges = run.tree_edges(next(batches))
    autocast = _autocast(dev, amp, cache=not run.captured)

    def step():
        run.step(next(batches), autocast)

    if run.captured:
        # Optimizer state first (persistent), then the capture itself counts
        # as transient: the graph's private pool holds the step's buffers.
        for _ in range(2):
            run.eager_step(next(batches), autocast)
    else:
        timed_calls(step, 0, warmup, dev)
    peak = transient = float('nan')
    if dev.type == 'cuda':
        _sync(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        before = torch.cuda.memory_allocated(dev)
    if run.captured:
        timed_calls(step, 0, warmup, dev)  # capture + warm replays
    ms = median(timed_calls(step, steps, 0, dev))
    if dev.type == 'cuda':
        peak = torch.cuda.max_memory_allocated(dev) / 2**20
        transient = peak - before / 2**20
    return {
        **_setting(bench, graph, fanout, batch_size),
        'amp': 'bf16' if amp else 'off', 'variant': variant,
        'num_workers': 0, 'step_ms': f'{ms:.3f}', 'loader_ms': '',
        'model_ms': '', 'batches_per_s': f'{1e3 / ms:.2f}',
        'sampled_edges_per_s': f'{edges / ms * 1e3:.4g}',
        'peak_mem_mb': f'{peak:.1f}', 'transient_mem_mb': f'{transient:.1f}',
        'steps': steps,
    }


def _settings(args):
    """(fanout, batch size, amp, variant, runner variant, workers) to run,
    after checking every variant name before anything is timed."""
    known = set(STEP_VARIANTS) | set(ALIASES) | set(SAGE_VARIANTS)
    bad = [v for v in args.variants if v not in known]
    if bad:
        raise SystemExit(f'unknown variant(s) {bad}; expected one of '
                         f'{sorted(known)}')
    for fanout, bs, amp, variant in itertools.product(
            args.fanouts, args.batch_sizes, args.amp, args.variants):
        base = ALIASES.get(variant, variant)
        for nw in args.num_workers if base == 'pyg' else [0]:
            yield fanout, bs, amp == 'on', variant, base, nw


def run_sage(bench: Bench, graph: str, args) -> List[Dict]:
    """The ``sage`` sub-command: rows appended to ``args.out`` + report.
    With ``--rounds`` the variants of a setting run in turn, round after
    round (column ``round``), so a drift of the machine touches them alike."""
    rows, loader_rows = [], []
    settings = list(_settings(args))
    for _, group in itertools.groupby(settings, key=lambda s: s[:3]):
        group = list(group)
        for rnd, (fanout, bs, amp, variant, base, nw) in itertools.product(
                range(getattr(args, 'rounds', 1)), group):
            if variant in SAGE_VARIANTS:
                row = sage_row(bench, graph, fanout, bs, amp, variant,
                               args.steps, args.warmup)
            else:
                row = run_row(bench, graph, fanout, bs, amp, base, nw,
                              args.steps, args.warmup)
                row['variant'] = variant
                loader_rows.append(row)
            row['round'] = rnd
            print(f"{graph} [{row['fanout']}] b={bs} amp={row['amp']} "
                  f"{variant:>14} w={nw} round {rnd}: step {row['step_ms']} ms, "
                  f"loader {row['loader_ms'] or '-'} ms, "
                  f"{row['sampled_edges_per_s']} edges/s", flush=True)
            rows.append(row)
    fill_model_ms(loader_rows)  # the model-only floor is PyG GraphSAGE's
    append_rows(args.out, rows)
    base = os.path.splitext(args.out)[0]
    print(write_report(args.out, base + '.md', base + '.png'))
    return rows


# Learning curves ############################################################

class PygSage:
    """PyG GraphSAGE fed by one of :mod:`.runner`'s loaders, trained and
    evaluated the way :class:`FusedSage` is."""
    def __init__(self, bench: Bench, fanout: List[int], batch_size: int,
                 variant: str, num_workers: int):
        from ..nn.graph_input import as_csc
        d = bench.data_dev
        self.model, self.opt = bench.model(len(fanout))
        self.batches = bench.batches(variant, fanout, batch_size, num_workers)
        self.per_epoch = -(-int(d.train_mask.sum()) // batch_size)
        # adj_t for full-graph inference: the CSC of edge_index is the CSR
        # of adj_t (rows = targets); SpMM aggregates without an [E, F] tensor.
        colptr, row = as_csc(d.edge_index, d.num_nodes, d.num_nodes)
        with warnings.catch_warnings():  # "CSR support is in beta state"
            warnings.simplefilter('ignore')
            self.adj_t = torch.sparse_csr_tensor(
                colptr, row.long(), torch.ones(row.numel(), device=row.device),
                (d.num_nodes, d.num_nodes), check_invariants=False)
        self.x = d.x

    def epoch(self, autocast) -> torch.Tensor:
        total = 0.
        for _ in range(self.per_epoch):  # the loader's batches of one pass
            b = next(self.batches)
            self.opt.zero_grad(set_to_none=True)
            with autocast:
                out = self.model(b.x, b.edge_index)[:b.batch_size]
                loss = F.cross_entropy(out.float(), b.y[:b.batch_size])
            loss.backward()
            self.opt.step()
            total = total + loss.detach()
        return total / self.per_epoch

    @torch.no_grad()
    def logits(self) -> torch.Tensor:
        self.model.eval()
        out = self.model(self.x, self.adj_t)
        self.model.train()
        return out


def _fused_epoch(run: FusedSage, batch_size: int, autocast) -> torch.Tensor:
    losses = [run.step(s, autocast)
              for s in seed_batches(run.train_idx, batch_size)]
    return torch.stack(losses).mean()


def _accuracy(logits: torch.Tensor, data, mask: str) -> str:
    m = getattr(data, mask)
    acc = (logits[m].argmax(-1) == data.y[m]).float().mean()
    return f'{float(acc):.4f}'


def run_curve(bench: Bench, graph: str, args) -> List[Dict]:
    """The ``sage-curve`` sub-command: CSV (overwritten) + PNG."""
    dev, d, rows = bench.device, bench.data_dev, []
    for fanout, bs, amp, variant, base, nw in _settings(args):
        if variant in SAGE_VARIANTS:
            run = _fused_sage(bench, fanout, variant)
            epoch = lambda ac: _fused_epoch(run, bs, ac)  # noqa: E731
        else:
            run = PygSage(bench, fanout, bs, base, nw)
            epoch = run.epoch
        autocast = _autocast(dev, amp, cache=not getattr(run, 'captured', False))
        seconds = 0.
        for ep in range(args.epochs + 1):
            loss = ''
            if ep > 0:
                _sync(dev)
                t0 = time.perf_counter()
                loss_t = epoch(autocast)
                _sync(dev)
                seconds += time.perf_counter() - t0
                loss = f'{float(loss_t):.4f}'
            logits = run.logits()
            rows.append({
                'device': device_name(dev), 'torch': versions()['torch'],
                'graph': graph, 'fanout': '-'.join(map(str, fanout)),
                'batch_size': bs, 'amp': 'bf16' if amp else 'off',
                'variant': variant, 'num_workers': nw, 'epoch': ep,
                'seconds': f'{seconds:.3f}', 'loss': loss,
                'val_acc': _accuracy(logits, d, 'val_mask'),
                'test_acc': _accuracy(logits, d, 'test_mask')})
            r = rows[-1]
            print(f"{graph} [{r['fanout']}] {variant} w={nw} epoch {ep}: "
                  f"{r['seconds']} s, loss {loss or '-'}, val "
                  f"{r['val_acc']}, test {r['test_acc']}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w', newline='') as f:
        writer = csv.DictWriter(f, fieldnames=CURVE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    plot_curve(rows, os.path.splitext(args.out)[0] + '.png')
    return rows


def plot_curve(rows: List[Dict], path: str) -> bool:
    """Validation (solid) and test (dashed) accuracy against training
    seconds, one colour per run; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    runs: Dict[tuple, List[Dict]] = {}
    for r in rows:
        runs.setdefault((r['variant'], r['num_workers'], r['fanout'],
                         r['batch_size'], r['amp']), []).append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, ((variant, nw, fan, bs, amp), rs) in enumerate(runs.items()):
        t = [float(r['seconds']) for r in rs]
        label = (f'{variant}' + (f' (w={nw})' if variant == 'pyg' else '')
                 + f' [{fan}] b={bs} amp={amp}')
        ax.plot(t, [float(r['val_acc']) for r in rs], '-o', ms=3,
                color=f'C{i}', label=f'{label} val')
        ax.plot(t, [float(r['test_acc']) for r in rs], '--', color=f'C{i}',
                label=f'{label} test')
    ax.set_xlabel('training wall-clock (s, evaluation excluded)')
    ax.set_ylabel('accuracy')
    ax.set_title(f"{rows[0]['graph']} on {rows[0]['device']}" if rows else '')
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(bench: Bench, graph: str, args) -> int:
    """Entry point of the ``sage`` and ``sage-curve`` sub-commands."""
    (run_sage if args.cmd == 'sage' else run_curve)(bench, graph, args)
    return 0
