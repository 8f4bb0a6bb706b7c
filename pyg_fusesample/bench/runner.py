"""Benchmark runner: loader throughput and training-step time per variant.

``python -m pyg_fusesample.bench loader`` times the loader alone (a step is
one batch on the device); ``... step`` times training steps.

Every variant trains the same PyG GraphSAGE (hidden 256, AdamW) on the same
graph; a step is next batch + forward + backward + optimizer step. One loop
gives both numbers of a row: the time to the batch being on the device
(loader_ms) and to the optimizer step finishing (step_ms); the device is
synchronised at both points, so asynchronous work is charged where it runs.
Medians over >= 30 timed steps after warm-up; peak memory is reset before
the timed loop and transient = peak - allocated before the loop.
A second, pipelined pass of as many steps gives pipelined_step_ms: no host
synchronisation inside the loop, the period between consecutive steps'
completions timed with CUDA events -- the step time of a training loop that
never waits for the GPU, where a loader's host work can hide behind the
previous step's kernels (the synchronised step_ms exposes all of it). The
peak memory covers both passes.

Variants: pyg (NeighborLoader, CPU data, torch_sparse), fused / per-hop
(FusedNeighborLoader on GPU data with its defaults, one launch vs one
launch per phase; fused's default is prefetch='thread', per-hop's no
prefetch), fused-thread (fused with prefetch='thread' spelled out),
fused-prefetch (fused with prefetch=True: the next batch's sampling is
enqueued as a batch is handed out), fused-sync (fused with prefetch=False),
torch-gpu (plain PyTorch per-hop GPU sampler), model-only (pre-sampled
batches already on the GPU: the floor for the step). With a prefetch
thread a batch is assembled ahead, during the previous step: in step mode
loader_ms and sampled edges/s then count only its hand-over (compare step
times), in loader mode (no step to hide behind) the thread's own pace.
Synchronisation is of the stream the step runs on: work a loader overlaps
on another stream is charged only where the step has to wait for it.
"""
import contextlib
import copy
import statistics
import time
import warnings
from typing import Dict, List

import torch
import torch.nn.functional as F

from ..environment import device_name, versions
from .timing import pipelined_periods
from .torch_gpu_sampler import TorchGPUSampler

STEP_VARIANTS = ('pyg', 'fused', 'fused-prefetch', 'fused-sync',
                 'fused-thread', 'per-hop', 'torch-gpu', 'model-only')
# FusedNeighborLoader's `prefetch` per variant that sets it; fused and
# per-hop take the loader's default ('thread' for fused GPU sampling, off
# for per-hop).
_PREFETCH = {'fused-prefetch': True, 'fused-sync': False,
             'fused-thread': 'thread'}


def _cycle(make):
    while True:
        yield from make()


class Bench:
    """Graph on both devices, loaders per variant, one model per row."""
    def __init__(self, data, device: torch.device, seed: int = 0):
        self.data_cpu = data
        self.device = device
        # Data.to() moves tensors in place; a shallow copy keeps `data` (the
        # NeighborLoader baseline's CPU data) where it is without copying it.
        self.data_dev = copy.copy(data).to(device)
        self.seed = seed
        self.num_classes = int(data.y.max()) + 1
        # NeighborLoader re-sorts the whole graph on construction (seconds on
        # a 100M-edge graph); rows that differ only in AMP share one.
        self._pyg_loaders = {}

    def batches(self, variant: str, fanout: List[int], batch_size: int,
                num_workers: int):
        d = self.data_dev
        if variant == 'pyg':
            from torch_geometric.loader import NeighborLoader
            key = (tuple(fanout), batch_size, num_workers)
            if key not in self._pyg_loaders:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    self._pyg_loaders[key] = NeighborLoader(
                        self.data_cpu, num_neighbors=fanout,
                        batch_size=batch_size,
                        input_nodes=self.data_cpu.train_mask, shuffle=True,
                        num_workers=num_workers)
            loader = self._pyg_loaders[key]
            return (b.to(self.device, non_blocking=True)
                    for b in _cycle(lambda: loader))
        if variant in ('fused', 'per-hop') or variant in _PREFETCH:
            from ..loader import FusedNeighborLoader
            loader = FusedNeighborLoader(
                d, num_neighbors=fanout, batch_size=batch_size,
                input_nodes=d.train_mask, shuffle=True, seed=self.seed,
                fused=variant != 'per-hop', prefetch=_PREFETCH.get(variant))
            return _cycle(lambda: loader)
        if variant == 'torch-gpu':
            from ..sampler import build_csc
            g = build_csc(d.edge_index, d.num_nodes)
            s = TorchGPUSampler(g.colptr, g.row, d.x, d.y,
                                d.train_mask.nonzero().view(-1), fanout,
                                batch_size, self.seed)
            return _cycle(lambda: s)
        if variant == 'model-only':
            it = self.batches('fused', fanout, batch_size, num_workers)
            fixed = [next(it) for _ in range(8)]
            return _cycle(lambda: fixed)
        raise ValueError(f"unknown variant '{variant}', expected one of "
                         f"{STEP_VARIANTS}")

    def model(self, num_layers: int, hidden: int = 256):
        from torch_geometric.nn.models import GraphSAGE
        torch.manual_seed(self.seed)
        model = GraphSAGE(self.data_cpu.num_features, hidden, num_layers,
                          out_channels=self.num_classes).to(self.device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        return model, opt


def _setting(bench: Bench, graph: str, fanout: List[int],
             batch_size: int) -> Dict:
    # The columns that say where and on what a row was measured.
    return {
        'device': device_name(bench.device), **versions(), 'graph': graph,
        'num_nodes': bench.data_cpu.num_nodes,
        'num_edges': bench.data_cpu.num_edges,
        'fanout': '-'.join(map(str, fanout)), 'batch_size': batch_size,
    }


def _sync(device):
    if device.type == 'cuda':
        torch.cuda.current_stream(device).synchronize()


def run_row(bench: Bench, graph: str, fanout: List[int], batch_size: int,
            amp: bool, variant: str, num_workers: int, steps: int,
            warmup: int, train: bool = True) -> Dict:
    dev = bench.device
    batches = bench.batches(variant, fanout, batch_size, num_workers)
    if train:
        model, opt = bench.model(len(fanout))
    autocast = (torch.autocast(dev.type, dtype=torch.bfloat16) if amp
                else contextlib.nullcontext())

    def train_step(batch):
        if train:
            opt.zero_grad(set_to_none=True)
            with autocast:
                out = model(batch.x, batch.edge_index)[:batch.batch_size]
                loss = F.cross_entropy(out.float(),
                                       batch.y[:batch.batch_size])
            loss.backward()
            opt.step()

    # Synchronised pass: the loader's and the step's latency.
    loader_ms, step_ms, edges = [], [], []
    peak = transient = float('nan')
    for i in range(warmup + steps):
        if i == warmup and dev.type == 'cuda':
            _sync(dev)
            torch.cuda.reset_peak_memory_stats(dev)
            before = torch.cuda.memory_allocated(dev)
        _sync(dev)
        t0 = time.perf_counter()
        batch = next(batches)
        _sync(dev)
        t1 = time.perf_counter()
        train_step(batch)
        _sync(dev)
        t2 = time.perf_counter()
        if i >= warmup:
            loader_ms.append((t1 - t0) * 1e3)
            step_ms.append((t2 - t0) * 1e3)
            edges.append(batch.edge_index.size(1))
    # Pipelined pass: the period per step of a loop that never waits.
    periods = pipelined_periods(lambda: train_step(next(batches)), steps,
                                warmup, dev)
    if dev.type == 'cuda':
        peak = torch.cuda.max_memory_allocated(dev) / 2**20
        transient = peak - before / 2**20
    # Ends the row's iteration now: NeighborLoader's workers (not
    # persistent) exit instead of prefetching on into the next row's timing
    # (call51: a fused row right after an 8-worker row ran up to 1.3x slower).
    batches.close()
    lm = statistics.median(loader_ms)
    sm = statistics.median(step_ms)
    loader_total_s = sum(loader_ms) / 1e3
    return {
        **_setting(bench, graph, fanout, batch_size),
        'amp': 'bf16' if amp else 'off', 'variant': variant,
        'num_workers': num_workers, 'step_ms': f'{sm:.3f}',
        'pipelined_step_ms': f'{statistics.median(periods):.3f}',
        'loader_ms': f'{lm:.3f}' if variant != 'model-only' else '0',
        'batches_per_s': f'{1e3 / sm:.2f}',
        'sampled_edges_per_s': (f'{sum(edges) / loader_total_s:.4g}'
                                if variant != 'model-only' else ''),
        'peak_mem_mb': f'{peak:.1f}', 'transient_mem_mb': f'{transient:.1f}',
        'steps': steps,
    }


def time_epoch(bench: Bench, graph: str, fanout: List[int], batch_size: int,
               variant: str) -> Dict:
    """One full epoch of loading over the training seeds (after one warm
    epoch), as a row with step_ms = epoch ms and steps = batches."""
    dev = bench.device
    batches = bench.batches(variant, fanout, batch_size, 0)
    n = -(-int(bench.data_cpu.train_mask.sum()) // batch_size)
    for _ in range(n):
        next(batches)
    _sync(dev)
    t0 = time.perf_counter()
    edges = 0
    for _ in range(n):
        edges += next(batches).edge_index.size(1)
    _sync(dev)
    ms = (time.perf_counter() - t0) * 1e3
    return {
        **_setting(bench, graph, fanout, batch_size),
        'amp': 'off', 'variant': f'{variant}-epoch', 'num_workers': 0,
        'step_ms': f'{ms:.3f}', 'loader_ms': f'{ms:.3f}',
        'batches_per_s': f'{n / ms * 1e3:.2f}',
        'sampled_edges_per_s': f'{edges / ms * 1e3:.4g}', 'steps': n,
    }


def fill_model_ms(rows: List[Dict]):
    """model_ms (pipelined_model_ms) of every row = the model-only step_ms
    (pipelined_step_ms) of the same setting and round."""
    def key(r):
        return (r['graph'], r['fanout'], r['batch_size'], r['amp'],
                r.get('round', ''))
    for column, model_column in (('step_ms', 'model_ms'),
                                 ('pipelined_step_ms', 'pipelined_model_ms')):
        floor = {key(r): r.get(column, '') for r in rows
                 if r['variant'] == 'model-only'}
        for r in rows:
            r[model_column] = floor.get(key(r), '')
