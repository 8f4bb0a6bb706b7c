"""Random-walk benchmark: walk throughput against a memory bound, and a
Node2Vec training step, fused against torch_cluster.

``python -m pyg_fusesample.bench walk --graphs products reddit`` runs, on one
device in one process, for every graph (SYNTHETIC, :mod:`..datasets`):

**Walk throughput** (``task=walk``): one walk per node (or ``--walks N``
random starts; or, with ``--hub-starts K``, as many walks split evenly over
the K nodes of highest out-degree: many walkers on few nodes, the case
NextDoor's load balancing is for) of ``--walk-length`` steps, per variant:

* ``fused-uniform``: :func:`~pyg_fusesample.ops.random_walk` with p = q = 1;
* ``fused-node2vec``: the same with ``--p``/``--q`` (default 1 and 0.5);
* ``fused-weighted``: first-order walks on random edge weights
  (``torch.rand(E)``);
* ``torch-cluster-uniform``, ``torch-cluster-node2vec``:
  ``torch.ops.torch_cluster.random_walk(rowptr, col, start, walk_length, p,
  q)`` on the same CSR (int64, on the device), when torch_cluster is
  importable (and has CUDA kernels on a GPU); otherwise the row is written
  with ``note = 'skipped: <why>'`` and the reason is printed.

torch_cluster 1.6.3's CUDA node2vec kernel (``csrc/cuda/rw_cuda.cu``) is
timed as it is, though it is not a correct sampler: every thread calls
``curand_init(seed, 0, 0)``, so all walks draw one random sequence, and its
neighbour test overwrites ``row_start``/``row_end`` with the proposed node's
row, from which the next trial then proposes after a rejection.

The fused variants walk a :class:`~pyg_fusesample.sparse.WalkGraph` built
once by ``WalkGraph.from_edge_index`` (as a user who walks a graph
repeatedly would), with ``check_start=False`` (the starts are valid node
ids; the check costs a host synchronisation on a GPU) and an explicit
``rng_seed`` per pass. A pass is timed by CUDA events around the call (GPU)
or ``time.perf_counter`` (CPU), ``--warmup`` passes first, then the median of
``--repeats`` passes (column ``steps``), unless a variant would pass
``--variant-seconds`` (default 30: torch_cluster's node2vec kernel scans a
neighbour's row per step, which on power-law graphs of products' size may
take seconds per pass): then it gets as many timed passes as fit, at least
one, and its note says so. ``walk_steps_per_s`` (also in the generic
``sampled_edges_per_s``) = walks * walk steps / median pass time.

**The bound.** A uniform step from ``v`` must read ``rowptr[v]`` and
``rowptr[v + 1]`` (two int64 in one memory granule -- a 32-byte sector on a
GPU, a 64-byte cache line on a CPU -- except when the pair straddles a
granule boundary: expected 1 + 8 / granule granules) and ``col[slot]`` (one
granule), and write what the variant returns, contiguous per walk and merged
in L2 / cache: the node (8 bytes) for the fused variants, which are called
as Node2Vec calls them (``return_edge_indices=False``: nodes only), the node
and the edge id (16 bytes) for torch_cluster, which always returns both.
That is ``sectors_per_step`` = 2.5 (fused) and 2.75 (torch_cluster) on a
GPU, 2.25 and 2.375 on a CPU. The device's rate of random granule reads,
``sectors_per_s``, is measured in the same run by a gather
(``torch.index_select``) of int64 at uniformly random indices over a buffer
far larger than the last-level cache (2 GiB on a GPU, 256 MiB on a CPU;
int32 indices, so the streamed index and output add 12 bytes per read);
``bound_steps_per_s`` = sectors_per_s / sectors_per_step. Every variant
reads at least what a uniform step reads, so the bound holds for all rows;
it is tight only for the uniform ones (a node2vec step adds a binary search
of the previous node's row -- torch_cluster's a scan of the proposed node's
row -- and a weighted one a binary search of prefix sums).
``graph_read_steps_per_s`` (:func:`graph_read_rate`) is the rate of a
uniform step's reads on the graph itself, where walkers make them (``col``
at random slots, then ``rowptr`` at the nodes found there): the H100 run
without it had torch_cluster's uniform walks at 1.3-1.65x the bound above,
because a walk's reads hit hubs' rows, which stay in L2.
Caveats: the bound is for a graph far larger than the last-level cache; a
row whose CSR is within 4x of it (a small ``--scale``) says so in its note,
and may beat the bound. Where ``rowptr`` alone (8 bytes per node) fits in L2
(products: 19.6 MB, H100/H200 L2: 50 MB), its reads may hit L2 and the
true DRAM traffic is lower than counted.

**Node2Vec step** (``task=node2vec``): PyG's ``examples/node2vec.py`` loop
(embedding_dim 128, walk_length 20, context_size 10, walks_per_node 10,
num_negative_samples 1, p = q = 1 unless ``--n2v-p/--n2v-q``, ``sparse=True``,
``SparseAdam(lr=0.01)``, ``loader(batch_size, shuffle=True)``) with
``--n2v-batch-size`` seeds per step (default 4096; PyG's example uses 128
on Cora), per variant:

* ``FusedNode2Vec``: :class:`~pyg_fusesample.nn.FusedNode2Vec` on the device
  (walks on the device, ``num_workers=0``);
* ``FusedNode2Vec+FusedSparseAdam``: the same with
  :class:`~pyg_fusesample.optim.FusedSparseAdam` (SparseAdam's update in one
  op a parameter) instead of ``torch.optim.SparseAdam``;
* ``pyg-node2vec-torch-cluster``: the same model and loop with
  ``random_walk_fn`` replaced by ``torch.ops.torch_cluster.random_walk`` on
  a copy of the CSR on the device (skipped, with the reason, without
  torch_cluster);
* ``pyg-node2vec``: PyG's own ``Node2Vec`` as shipped (walks by pyg-lib on
  the CPU, ``--n2v-workers`` loader workers, batches moved to the device;
  skipped, with the reason, without pyg-lib).

A step = next batch from the loader (+ ``.to(device)``) + ``model.loss`` +
backward + ``SparseAdam.step``, synchronised; ``step_ms`` is the median of
``--n2v-steps`` steps after ``--n2v-warmup``, ``loader_ms`` the median of
its part up to the batch being on the device, ``epoch_s`` = ``epoch_steps``
(ceil(num_nodes / batch size)) * step_ms. ``walk_steps`` is the steps per
walk (walk_length - 1 = 19); ``walk_steps_per_s`` = the step's walk steps
(batch * walks_per_node * 19) / step_ms, ``sampled_edges_per_s`` the same
over loader_ms.

Rows use :data:`.csv_schema.WALK_COLUMNS` (the shared columns, then the
walk ones); a markdown table is written next to the CSV.
"""
import glob
import importlib
import math
import os
import statistics
import time
import types
from typing import Callable, Dict, List, Optional, Tuple

import torch

from ..environment import device_name, versions
from ..optim import FusedSparseAdam
from .csv_schema import WALK_COLUMNS, append_rows, read_rows
from .graph_runs import for_each_graph, write_markdown
from .timing import (event_timed_calls, peak_memory_columns,
                     peak_memory_start)

WALK_VARIANTS = ('fused-uniform', 'fused-node2vec', 'fused-weighted',
                 'torch-cluster-uniform', 'torch-cluster-node2vec')
N2V_VARIANTS = ('FusedNode2Vec', 'FusedNode2Vec+FusedSparseAdam',
                'pyg-node2vec-torch-cluster', 'pyg-node2vec')
# The variant that trains with pyg_fusesample.optim.FusedSparseAdam (all
# others with torch.optim.SparseAdam).
FUSED_ADAM = '+FusedSparseAdam'
# PyG's examples/node2vec.py
N2V_CONFIG = dict(embedding_dim=128, walk_length=20, context_size=10,
                  walks_per_node=10, num_negative_samples=1, sparse=True)
N2V_LR = 0.01
# --scale small: about this many nodes per graph
SMALL_NODES = 2000
FULL_NODES = {'products': 2_449_029, 'products_like': 2_449_029,
              'reddit': 232_965, 'reddit_like': 232_965,
              'arxiv': 169_343, 'arxiv_like': 169_343,
              'power_law_1m': 1_000_000}


# Helpers ####################################################################

def _sync(device: torch.device):
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def sector_bytes(device: torch.device) -> int:
    """The granule of a random read: a 32-byte sector on a GPU, a 64-byte
    cache line on a CPU."""
    return 32 if device.type == 'cuda' else 64


def uniform_step_sectors(granule: int, out_bytes: int = 8) -> float:
    """Granules a uniform walk step moves at the least (module docstring):
    rowptr[v], rowptr[v + 1] (1 + 8 / granule expected), col[slot] (1), and
    the ``out_bytes`` it writes (8: the node; 16: node and edge id), merged
    with the walk's next ones (out_bytes / granule)."""
    return 1.0 + 8.0 / granule + 1.0 + out_bytes / granule


def out_bytes(variant: str) -> int:
    """Bytes a step of ``variant`` writes: torch_cluster returns nodes and
    edge ids, the fused variants (return_edge_indices=False) nodes."""
    return 16 if variant.startswith('torch-cluster-') else 8


def random_sector_rate(device: torch.device,
                       buffer_bytes: Optional[int] = None,
                       count: Optional[int] = None, repeats: int = 10,
                       seed: int = 0) -> float:
    """Random granule reads per second: ``torch.index_select`` of int64 at
    ``count`` uniformly random indices (int32) over a ``buffer_bytes``
    buffer far larger than the last-level cache; one index = one granule
    (median of ``repeats`` timed gathers after 2 warm-up ones)."""
    cuda = device.type == 'cuda'
    if buffer_bytes is None:
        buffer_bytes = (2 << 30) if cuda else (256 << 20)
    if count is None:
        count = (1 << 26) if cuda else (1 << 22)
    n = buffer_bytes // 8
    # Filled: untouched host pages would all map the one zero page.
    buf = torch.ones(n, dtype=torch.long, device=device)
    g = torch.Generator(device=device).manual_seed(seed)
    idx = torch.randint(n, (count, ), generator=g, device=device,
                        dtype=torch.long).to(torch.int32 if n < 2**31
                                              else torch.long)
    out = torch.empty(count, dtype=torch.long, device=device)
    ms = statistics.median(event_timed_calls(
        lambda: torch.index_select(buf, 0, idx, out=out), repeats, 2, device))
    del buf, idx, out
    if cuda:
        torch.cuda.empty_cache()
    return count / (ms / 1e3)


def torch_cluster_status(device: torch.device) -> Tuple[str, str]:
    """(version, '') when ``torch.ops.torch_cluster.random_walk`` can run on
    ``device``, else ('', the reason)."""
    try:
        tc = importlib.import_module('torch_cluster')
        torch.ops.torch_cluster.random_walk  # noqa: B018
    except Exception as e:  # ImportError, OSError of a broken build, ...
        return '', f'torch_cluster not importable ({type(e).__name__}: {e})'
    version = getattr(tc, '__version__', '?')
    if device.type == 'cuda':
        try:
            cuda = int(torch.ops.torch_cluster.cuda_version())
        except Exception as e:
            return '', (f'torch_cluster {version}: cuda_version() failed '
                        f'({type(e).__name__}: {e})')
        if cuda == -1:
            return '', (f'torch_cluster {version} was built without CUDA '
                        f'(benchmarks/device/build_torch_cluster.sh builds it '
                        f'with)')
    return version, ''


def pyg_lib_status() -> Tuple[str, str]:
    """(version, '') when PyG's Node2Vec can be built (it needs pyg-lib),
    else ('', the reason)."""
    import torch_geometric.typing as t
    if not t.WITH_PYG_LIB:
        return '', ("PyG's Node2Vec needs pyg-lib, which is not importable "
                    "(benchmarks/device/build_pyg_lib.sh builds it)")
    import pyg_lib
    return getattr(pyg_lib, '__version__', '?'), ''


def last_level_cache_bytes(device: torch.device) -> int:
    """L2 of a GPU; the largest CPU cache sysfs lists (32 MiB if none)."""
    if device.type == 'cuda':
        return int(torch.cuda.get_device_properties(device).L2_cache_size)
    sizes = []
    for path in glob.glob('/sys/devices/system/cpu/cpu0/cache/index*/size'):
        try:
            text = open(path).read().strip().upper()
            unit = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}.get(text[-1], 1)
            sizes.append(int(text.rstrip('KMG')) * unit)
        except (OSError, ValueError):
            pass
    return max(sizes, default=32 << 20)


def _f(x: float, fmt: str = '.4g') -> str:
    return format(x, fmt) if x == x else ''


def _resolve_scale(scale: str, graph: str) -> float:
    if scale == 'small':
        key = graph.lower().replace('-', '_')
        return min(1.0, SMALL_NODES / FULL_NODES.get(key, 1_000_000))
    return float(scale)


# Walk throughput ############################################################

def graph_read_rate(rowptr: torch.Tensor, col: torch.Tensor,
                    device: torch.device, count: Optional[int] = None,
                    repeats: int = 5, seed: int = 0) -> float:
    """Steps per second of a uniform step's reads on this graph, at the
    places a walk makes them: ``col`` at a random slot, then ``rowptr`` at
    that node and the next -- so a node comes up as often as edges point at
    it (a walk's stationary law on an undirected graph), and hubs' rows are
    as hot in the cache as they are for walkers. Three ``index_select``
    calls over ``count`` independent steps (none waits for the one before);
    median of ``repeats`` passes after 2 warm-up ones. Uniformly random
    reads (``random_sector_rate``) leave out what the cache serves; this is
    the rate to hold a walk against."""
    if count is None:
        count = (1 << 26) if device.type == 'cuda' else (1 << 22)
    g = torch.Generator(device=device).manual_seed(seed)
    slot = torch.randint(col.numel(), (count, ), generator=g, device=device)
    node = torch.empty(count, dtype=col.dtype, device=device)
    lo = torch.empty(count, dtype=rowptr.dtype, device=device)
    hi = torch.empty_like(lo)

    def reads():
        torch.index_select(col, 0, slot, out=node)
        torch.index_select(rowptr, 0, node, out=lo)
        torch.index_select(rowptr, 0, node + 1, out=hi)
    ms = statistics.median(event_timed_calls(reads, repeats, 2, device))
    return count / (ms / 1e3)


class WalkBench:
    """One graph on one device: the WalkGraphs and CSR the variants walk,
    the starts, and the measured random-read rate."""
    def __init__(self, data, name: str, device: torch.device, walks: int,
                 walk_length: int, p: float, q: float, seed: int,
                 sectors_per_s: float, hubs: int = 0):
        from ..sparse import WalkGraph
        self.name, self.device = name, device
        self.num_nodes, self.num_edges = data.num_nodes, data.num_edges
        self.walk_length, self.p, self.q, self.seed = walk_length, p, q, seed
        self.sectors_per_s = sectors_per_s
        ei = data.edge_index.to(device)
        self.graph = WalkGraph.from_edge_index(ei, data.num_nodes)
        # what a step reads at random: rowptr and col
        col = self.graph.col
        self.csr_bytes = (self.graph.rowptr.numel() * 8
                          + col.numel() * col.element_size())
        self.cache_bytes = last_level_cache_bytes(device)
        self.graph_steps_per_s = graph_read_rate(self.graph.rowptr, col,
                                                 device, seed=seed)
        self._weighted = None
        self._edge_index = ei
        g = torch.Generator(device=device).manual_seed(seed)
        count = walks or data.num_nodes
        self.hubs = min(hubs, data.num_nodes)
        if self.hubs:
            # Many walkers on few nodes (NextDoor's load-balancing case):
            # the walks start, in equal shares, from the `hubs` nodes of
            # highest out-degree, whose rows they all read first.
            top = torch.topk(self.graph.rowptr.diff(), self.hubs).indices
            self.start = top.repeat_interleave(
                -(-count // self.hubs))[:count].contiguous()
        elif walks:
            self.start = torch.randint(data.num_nodes, (walks, ),
                                       generator=g, device=device)
        else:
            self.start = torch.arange(data.num_nodes, device=device)

    def weighted_graph(self):
        if self._weighted is None:
            from ..sparse import WalkGraph
            g = torch.Generator().manual_seed(self.seed + 1)
            weight = torch.rand(self.num_edges, generator=g).to(self.device)
            self._weighted = WalkGraph.from_edge_index(
                self._edge_index, self.num_nodes, weight)
        return self._weighted

    def csr64(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """torch_cluster's input: the same sorted CSR, int64."""
        return self.graph.rowptr, self.graph.col.long()

    def walk_fn(self, variant: str
                ) -> Tuple[Callable[[], object], float, float]:
        """(one pass of ``variant``, its p, its q)."""
        from ..ops import random_walk
        L, start = self.walk_length, self.start
        p, q = (self.p, self.q) if variant.endswith('node2vec') else (1.0, 1.0)
        counter = [self.seed]

        def key():
            counter[0] += 1
            return counter[0]

        if variant in ('fused-uniform', 'fused-node2vec'):
            graph = self.graph
            return (lambda: random_walk(graph, start, L, p, q, rng_seed=key(),
                                        check_start=False)), p, q
        if variant == 'fused-weighted':
            graph = self.weighted_graph()
            return (lambda: random_walk(graph, start, L, rng_seed=key(),
                                        check_start=False)), p, q
        if variant.startswith('torch-cluster-'):
            rowptr, col = self.csr64()
            return (lambda: torch.ops.torch_cluster.random_walk(
                rowptr, col, start, L, p, q)), p, q
        raise ValueError(f'unknown walk variant {variant!r}')

    def row(self, variant: str, p: float, q: float) -> Dict:
        granule = sector_bytes(self.device)
        per_step = uniform_step_sectors(granule, out_bytes(variant))
        return {
            'device': device_name(self.device), **versions(),
            'graph': self.name, 'num_nodes': self.num_nodes,
            'num_edges': self.num_edges, 'batch_size': self.start.numel(),
            'amp': 'off', 'variant': variant, 'num_workers': 0, 'round': 0,
            'task': 'walk', 'walk_steps': self.walk_length, 'p': p, 'q': q,
            'sector_bytes': granule,
            'sectors_per_s': _f(self.sectors_per_s),
            'sectors_per_step': _f(per_step),
            'bound_steps_per_s': _f(self.sectors_per_s / per_step),
            'graph_read_steps_per_s': _f(self.graph_steps_per_s),
        }


def walk_row(bench: WalkBench, variant: str, repeats: int, warmup: int,
             skip: str = '', budget_s: float = 0.0) -> Dict:
    """One ``task=walk`` row (``note='skipped: ...'`` when ``skip``).

    ``budget_s`` > 0 caps the variant's time: warm-up stops once it has
    used a quarter of it, and the timed passes are cut to what the rest
    allows (at least one); the row's ``steps`` is the count timed and its
    note says it was cut."""
    dev = bench.device
    if skip:
        p, q = ((bench.p, bench.q) if variant.endswith('node2vec')
                else (1.0, 1.0))
        # (nothing measured: no rate, no bound)
        return {**bench.row(variant, p, q), 'sector_bytes': '',
                'sectors_per_s': '', 'sectors_per_step': '',
                'graph_read_steps_per_s': '',
                'bound_steps_per_s': '', 'note': f'skipped: {skip}'}
    fn, p, q = bench.walk_fn(variant)
    t0 = time.perf_counter()
    last = 0.0
    for _ in range(max(warmup, 1)):  # (one untimed pass at least: its time)
        t = time.perf_counter()
        fn()
        _sync(dev)
        last = time.perf_counter() - t
        if budget_s and time.perf_counter() - t0 > budget_s / 4:
            break
    note = ['timer=cuda-events' if dev.type == 'cuda'
            else 'timer=perf_counter']
    if bench.hubs:
        note.append(f'starts: the {bench.hubs} highest out-degree nodes, '
                    f'{bench.start.numel() // bench.hubs} walks each')
    if bench.csr_bytes < 4 * bench.cache_bytes:
        note.append(f'CSR ({bench.csr_bytes / 2**20:.1f} MiB) within 4x the '
                    f'last-level cache ({bench.cache_bytes / 2**20:.0f} MiB): '
                    f'steps hit the cache, the DRAM bound does not hold')
    count = repeats
    if budget_s:
        left = budget_s - (time.perf_counter() - t0)
        count = max(1, min(repeats, int(left / max(last, 1e-9))))
        if count < repeats:
            note.append(f'passes cut from {repeats} to {count} by '
                        f'--variant-seconds {budget_s:g} '
                        f'(one pass ~{last:.1f} s)')
    before = peak_memory_start(dev)
    ms = statistics.median(event_timed_calls(fn, count, 0, dev))
    steps = bench.start.numel() * bench.walk_length
    rate = steps / (ms / 1e3)
    row = bench.row(variant, p, q)
    row.update({
        'step_ms': f'{ms:.3f}', 'batches_per_s': f'{1e3 / ms:.3f}',
        'sampled_edges_per_s': _f(rate), 'walk_steps_per_s': _f(rate),
        'steps': count, **peak_memory_columns(dev, before),
        'note': '; '.join(note),
    })
    return row


# Node2Vec step ##############################################################

def _cycle_loader(loader):
    while True:
        yield from loader


def _n2v_model(variant: str, data, device: torch.device, p: float, q: float,
               note: List[str]):
    """The model of a Node2Vec variant on ``device``."""
    if variant == 'pyg-node2vec':
        from torch_geometric.nn import Node2Vec
        model = Node2Vec(data.edge_index, num_nodes=data.num_nodes, p=p, q=q,
                         **N2V_CONFIG).to(device)
        note.append('walks by pyg-lib on the CPU (PyG Node2Vec as shipped)')
        return model
    from ..nn import FusedNode2Vec
    model = FusedNode2Vec(data.edge_index, num_nodes=data.num_nodes, p=p,
                          q=q, **N2V_CONFIG).to(device)
    if variant == 'pyg-node2vec-torch-cluster':
        rowptr = model.rowptr.to(device)
        col = model.col.to(device).long()

        def torch_cluster_walk(_rowptr, _col, start, walk_length, p, q):
            return torch.ops.torch_cluster.random_walk(
                rowptr, col, start.to(device), walk_length, p, q)

        model.random_walk_fn = torch_cluster_walk
        # PyG's model as shipped but for its walks: PyG's loss too.
        from torch_geometric.nn import Node2Vec
        model.loss = types.MethodType(Node2Vec.loss, model)
        note.append(f'walks by torch_cluster on the {device.type} CSR, '
                    f"PyG's loss")
    else:
        note.append(f'walks by fusesample on the {device.type}, loss by '
                    f'ops.skipgram_loss')
    return model


def n2v_row(data, name: str, device: torch.device, variant: str,
            batch_size: int, steps: int, warmup: int, p: float, q: float,
            num_workers: int, seed: int, skip: str = '') -> Dict:
    """One ``task=node2vec`` row: median synchronised training step."""
    walk_steps = N2V_CONFIG['walk_length'] - 1
    epoch_steps = math.ceil(data.num_nodes / batch_size)
    row = {
        'device': device_name(device), **versions(), 'graph': name,
        'num_nodes': data.num_nodes, 'num_edges': data.num_edges,
        'batch_size': batch_size, 'amp': 'off', 'variant': variant,
        'num_workers': num_workers, 'round': 0, 'task': 'node2vec',
        'walk_steps': walk_steps, 'p': p, 'q': q, 'epoch_steps': epoch_steps,
    }
    cfg = (f"dim={N2V_CONFIG['embedding_dim']} "
           f"walk_length={N2V_CONFIG['walk_length']} "
           f"context={N2V_CONFIG['context_size']} "
           f"walks_per_node={N2V_CONFIG['walks_per_node']} "
           f"neg={N2V_CONFIG['num_negative_samples']} SparseAdam lr={N2V_LR}")
    if skip:
        return {**row, 'note': f'skipped: {skip}; {cfg}'}
    note = []
    torch.manual_seed(seed)
    model = _n2v_model(variant, data, device, p, q, note)
    if variant.endswith(FUSED_ADAM):
        note.append('optimizer FusedSparseAdam')
        opt = FusedSparseAdam(list(model.parameters()), lr=N2V_LR)
    else:
        opt = torch.optim.SparseAdam(list(model.parameters()), lr=N2V_LR)
    loader = model.loader(batch_size=batch_size, shuffle=True,
                          num_workers=num_workers,
                          persistent_workers=num_workers > 0)
    batches = _cycle_loader(loader)
    model.train()
    loader_ms, step_ms = [], []
    before = float('nan')
    for i in range(warmup + steps):
        if i == warmup:
            before = peak_memory_start(device)
        _sync(device)
        t0 = time.perf_counter()
        pos_rw, neg_rw = next(batches)
        pos_rw, neg_rw = pos_rw.to(device), neg_rw.to(device)
        _sync(device)
        t1 = time.perf_counter()
        opt.zero_grad()
        loss = model.loss(pos_rw, neg_rw)
        loss.backward()
        opt.step()
        _sync(device)
        t2 = time.perf_counter()
        if i >= warmup:
            loader_ms.append((t1 - t0) * 1e3)
            step_ms.append((t2 - t0) * 1e3)
    mem = peak_memory_columns(device, before)
    last_loss = float(loss.detach())
    if not math.isfinite(last_loss):
        raise RuntimeError(f'{variant}: loss is {last_loss}')
    del batches, loader, opt, model
    if device.type == 'cuda':
        torch.cuda.empty_cache()
    sm, lm = statistics.median(step_ms), statistics.median(loader_ms)
    walk_steps_per_step = (batch_size * N2V_CONFIG['walks_per_node']
                           * walk_steps)
    row.update({
        'step_ms': f'{sm:.3f}', 'loader_ms': f'{lm:.3f}',
        'batches_per_s': f'{1e3 / sm:.3f}',
        'sampled_edges_per_s': _f(walk_steps_per_step / (lm / 1e3)),
        'walk_steps_per_s': _f(walk_steps_per_step / (sm / 1e3)),
        'steps': steps, 'epoch_s': f'{epoch_steps * sm / 1e3:.2f}',
        'note': '; '.join(note + [cfg, 'timer=synchronised perf_counter']),
        **mem,
    })
    return row


# Driver #####################################################################

def _print_row(r: Dict):
    if r.get('note', '').startswith(('skipped', 'error')):
        print(f"{r['graph']} {r['task']} {r['variant']}: {r['note']}",
              flush=True)
    elif r['task'] == 'walk':
        print(f"{r['graph']} walk {r['variant']:>22} p={r['p']} q={r['q']} "
              f"L={r['walk_steps']} x{r['batch_size']}: {r['step_ms']} ms, "
              f"{r['walk_steps_per_s']} steps/s (bound "
              f"{r['bound_steps_per_s']}: {r['sectors_per_s']} sectors/s / "
              f"{r['sectors_per_step']} per step; this graph's reads: "
              f"{r['graph_read_steps_per_s']} steps/s)", flush=True)
    else:
        print(f"{r['graph']} node2vec {r['variant']:>26} b={r['batch_size']}: "
              f"step {r['step_ms']} ms (loader {r['loader_ms']} ms), epoch "
              f"~{r['epoch_s']} s ({r['epoch_steps']} steps)", flush=True)


def _guarded(fn, base: Dict) -> Tuple[Dict, bool]:
    """fn() or, when it raises, an 'error: ...' row (printed, run goes
    on)."""
    try:
        return fn(), True
    except (RuntimeError, ValueError, MemoryError) as e:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        msg = str(e).splitlines()[0][:300] if str(e) else ''
        return {**base, 'note': f'error: {type(e).__name__}: {msg}'}, False


def markdown(path: str) -> str:
    rows = read_rows(path)
    lines = [f'<!-- generated from {os.path.basename(path)}; do not edit -->',
             '', '| graph | task | variant | p | q | steps/walk | walks / '
             'batch | ms | walk steps/s | bound steps/s | of bound | '
             'graph-read steps/s | of graph-read | epoch s | note |',
             '|' + '---|' * 15]
    for r in rows:
        try:
            ratio = (float(r['walk_steps_per_s'])
                     / float(r['bound_steps_per_s']))
            frac = f'{ratio:.2f}'
        except (ValueError, ZeroDivisionError):
            frac = '-'
        try:
            of_read = (f"{float(r['walk_steps_per_s']) / float(r['graph_read_steps_per_s']):.2f}")
        except (KeyError, ValueError, ZeroDivisionError):
            of_read = '-'
        if r['task'] != 'walk':
            frac = of_read = '-'
        lines.append(
            f"| {r['graph']} | {r['task']} | {r['variant']} | {r['p']} | "
            f"{r['q']} | {r['walk_steps']} | {r['batch_size']} | "
            f"{r['step_ms'] or '-'} | {r['walk_steps_per_s'] or '-'} | "
            f"{r['bound_steps_per_s'] or '-'} | {frac} | "
            f"{r.get('graph_read_steps_per_s') or '-'} | {of_read} | "
            f"{r['epoch_s'] or '-'} | {r['note']} |")
    return '\n'.join(lines) + '\n'


def main(args) -> int:
    from .timing import warm_up_device
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    bad = [v for v in args.variants if v not in WALK_VARIANTS]
    bad += [v for v in args.n2v_variants if v not in N2V_VARIANTS]
    if bad:
        raise SystemExit(f'unknown variant(s) {bad}; walk variants: '
                         f'{list(WALK_VARIANTS)}, node2vec variants: '
                         f'{list(N2V_VARIANTS)}')
    p, q = args.p, args.q
    tc_version, tc_skip = torch_cluster_status(device)
    print(f'torch_cluster: {tc_version or tc_skip}', flush=True)
    warm_up_device(device)
    sectors_per_s = random_sector_rate(device, seed=args.seed)
    granule = sector_bytes(device)
    print(f'random {granule}-byte reads: {sectors_per_s:.4g}/s '
          f'(index_select of int64 at random indices); uniform step: '
          f'{uniform_step_sectors(granule):.3g} granules (nodes only) -> '
          f'bound {sectors_per_s / uniform_step_sectors(granule):.4g} '
          f'steps/s',
          flush=True)
    ok = True

    def measure(name, data):
        nonlocal ok
        # (each row is appended as soon as it is measured: a run cut short
        # keeps what it measured)
        if args.variants:
            bench = WalkBench(data, name, device, args.walks,
                              args.walk_length, p, q, args.seed,
                              sectors_per_s, hubs=args.hub_starts)
            for variant in args.variants:
                skip = (tc_skip if variant.startswith('torch-cluster-')
                        else '')
                row, good = _guarded(
                    lambda: walk_row(bench, variant, args.repeats,
                                     args.warmup, skip,
                                     args.variant_seconds),
                    bench.row(variant, *((p, q) if variant.endswith(
                        'node2vec') else (1.0, 1.0))))
                ok &= good
                append_rows(args.out, [row], columns=WALK_COLUMNS)
                _print_row(row)
            del bench
            if device.type == 'cuda':
                torch.cuda.empty_cache()
        if args.n2v_steps > 0:
            pl_version, pl_skip = pyg_lib_status()
            print(f'pyg-lib: {pl_version or pl_skip}', flush=True)
            for variant in args.n2v_variants:
                skip = {'pyg-node2vec-torch-cluster': tc_skip,
                        'pyg-node2vec': pl_skip}.get(variant, '')
                workers = args.n2v_workers if variant == 'pyg-node2vec' else 0

                def run(variant=variant, skip=skip, workers=workers):
                    return n2v_row(data, name, device, variant,
                                   args.n2v_batch_size, args.n2v_steps,
                                   args.n2v_warmup, args.n2v_p, args.n2v_q,
                                   workers, args.seed, skip)
                row, good = _guarded(run, {
                    'device': device_name(device), **versions(),
                    'graph': name, 'num_nodes': data.num_nodes,
                    'num_edges': data.num_edges, 'variant': variant,
                    'task': 'node2vec', 'batch_size': args.n2v_batch_size})
                ok &= good
                append_rows(args.out, [row], columns=WALK_COLUMNS)
                _print_row(row)
    for_each_graph(args.graphs,
                   lambda graph: _resolve_scale(args.scale, graph),
                   args.seed, device, 'walk', measure)
    write_markdown(args.out, markdown)
    return 0 if ok else 1
