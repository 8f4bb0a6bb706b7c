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
torch-gpu (plain PyTorch per-hop GPU sampler), model-only (8 pre-sampled
batches already on the GPU, cycled: the floor for the step), model-fresh
(as many distinct pre-sampled batches as the row's steps, each used once:
the floor of a model whose cost depends on seeing new shapes -- under bf16
autocast cuBLAS picks a kernel per new matrix shape, a host cost 8 cycled
batches stop paying after their first round and every real batch stream,
PyG's included, keeps paying). With a prefetch
thread a batch is assembled ahead, during the previous step: in step mode
loader_ms and sampled edges/s then count only its hand-over (compare step
times), in loader mode (no step to hide behind) the thread's own pace.
Synchronisation is of the stream the step runs on: work a loader overlaps
on another stream is charged only where the step has to wait for it.

Heterogeneous graphs (a HeteroData, e.g. --graph mag) run through the same
loops: the seeds are the train nodes of the one node type with labels and a
train mask (paper), the model is PyG's to_hetero_mag.py (lazy
SAGEConv((-1, -1)) layers with ReLU and a Linear head, to_hetero with
aggr='sum', initialised by one forward on a batch before the optimizer is
made), the loss is on that type's seeds, and sampled edges/s counts the
batch's edges over all edge types. Variants: those above but torch-gpu;
pyg is NeighborLoader on the CPU copy with the batch moved by .to(device).
Link prediction (--task link) is bench/link.py's LinkBench on these loops.
"""
import contextlib
import copy
import statistics
import time
import warnings
from typing import Dict, List

import torch
import torch.nn.functional as F
from torch.nn.parameter import is_lazy
from torch_geometric.data import HeteroData
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import Linear, SAGEConv, to_hetero
from torch_geometric.nn.models import GraphSAGE

from ..environment import device_name, versions
from ..loader import FusedNeighborLoader
from .timing import pipelined_periods
from .torch_gpu_sampler import TorchGPUSampler

STEP_VARIANTS = ('pyg', 'fused', 'fused-prefetch', 'fused-sync',
                 'fused-thread', 'fused-host', 'fused-host-x', 'per-hop',
                 'torch-gpu', 'model-only', 'model-fresh')
# fused-host: the graph (CSC) and the node features stay in pinned host
# memory and the GPU samples and gathers them in place
# (graph_in_host_memory=True): the path of graphs larger than the GPU.
# fused-host-x: the CSC on the GPU, the node features and labels in pinned
# host memory, read in place through a GPUFeatureCache holding the
# HOST_X_CACHE_FRACTION of x's rows with the most out-edges: the path of
# features larger than the GPU (papers100M's 57 GB of them).
HOST_X_CACHE_FRACTION = 0.1
# The floors: the model on pre-sampled batches already on the device.
FLOORS = ('model-only', 'model-fresh')
# FusedNeighborLoader's `prefetch` per variant that sets it; fused and
# per-hop take the loader's default ('thread' for fused GPU sampling, off
# for per-hop).
_PREFETCH = {'fused-prefetch': True, 'fused-sync': False,
             'fused-thread': 'thread'}


# --sampling: the attributes the graph gets and the loaders' arguments.
# weighted: a random weight in (0, 1] per edge; temporal: a random time in
# [0, 10^4) per node, each seed bounded by its own time; disjoint: uniform
# with disjoint=True, the subgraph shape temporal sampling forces (its
# like-for-like uniform baseline); weighted-temporal: both attributes, the
# in-edges a seed's time admits drawn by weight (its baseline: disjoint);
# induced: uniform nodes, every edge among them (subgraph_type='induced').
SAMPLING_KWARGS = {'uniform': {}, 'weighted': {'weight_attr': 'edge_weight'},
                   'temporal': {'time_attr': 'time'},
                   'disjoint': {'disjoint': True},
                   'weighted-temporal': {'weight_attr': 'edge_weight',
                                         'time_attr': 'time'},
                   'induced': {'subgraph_type': 'induced'}}


def with_sampling_attrs(data, sampling: str, seed: int = 0):
    """A shallow copy of ``data`` with the attribute ``sampling`` samples by
    (every node / edge type of a HeteroData), or ``data`` itself."""
    if sampling not in SAMPLING_KWARGS:
        raise ValueError(f"unknown sampling {sampling!r}, expected one of "
                         f"{list(SAMPLING_KWARGS)}")
    if sampling in ('uniform', 'disjoint', 'induced'):
        return data
    data = copy.copy(data)
    g = torch.Generator().manual_seed(seed + 17)
    if sampling in ('weighted', 'weighted-temporal'):
        for store in data.edge_stores:
            store.edge_weight = 1.0 - torch.rand(store.edge_index.size(1),
                                                 generator=g)
    if sampling in ('temporal', 'weighted-temporal'):
        for store in data.node_stores:
            store.time = torch.randint(0, 10_000, (store.num_nodes,),
                                       generator=g)
    return data


def _pyg_cannot(sampling: str, hetero: bool) -> str:
    # Why PyG's NeighborLoader cannot sample this way here ('' if it can):
    # weighted, temporal and disjoint sampling need pyg-lib.
    import torch_geometric.typing as pyg_typing
    if sampling == 'weighted' and not pyg_typing.WITH_WEIGHTED_NEIGHBOR_SAMPLE:
        return "PyG's weighted sampling needs pyg-lib, not installed here"
    if sampling == 'disjoint' and not pyg_typing.WITH_PYG_LIB:
        return "PyG's disjoint sampling needs pyg-lib, not installed here"
    if sampling == 'weighted-temporal':
        return ("PyG's weighted temporal sampling needs pyg-lib (it is "
                "disjoint), not installed here") if not \
            pyg_typing.WITH_PYG_LIB else ''
    if sampling == 'temporal' and not pyg_typing.WITH_PYG_LIB:
        # (PyG's torch_sparse path has a heterogeneous temporal sampler, but
        # temporal sampling is disjoint, which it refuses)
        return ("PyG's temporal sampling needs pyg-lib (it is disjoint), "
                "not installed here")
    return ''


def _cycle(make):
    while True:
        yield from make()


def sampled_edges(batch) -> int:
    """Sampled (message-passing) edges of a batch, over all edge types."""
    return sum(store.edge_index.size(1) for store in batch.edge_stores)


def forward(model, batch, counts: bool = False):
    """The model on a batch: ``x, edge_index`` or, for a ``HeteroData``,
    their per-type dictionaries (a :func:`~torch_geometric.nn.to_hetero`
    model). :obj:`counts`: a homogeneous model also gets the batch's per-hop
    counts where it has them (``GraphSAGE``'s ``trim_to_layer`` arguments:
    with ours, the trimming built into :func:`~pyg_fusesample.nn.to_fused`;
    NeighborLoader's batches have none without pyg-lib)."""
    if isinstance(batch, HeteroData):
        return model(batch.x_dict, batch.edge_index_dict)
    if counts and 'num_sampled_nodes' in batch:
        return model(batch.x, batch.edge_index,
                     num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                     num_sampled_edges_per_hop=batch.num_sampled_edges)
    return model(batch.x, batch.edge_index)


class _SAGE(torch.nn.Module):
    # The model to_hetero turns heterogeneous: `num_layers` lazy
    # SAGEConv((-1, -1)) layers. head=True: every layer `hidden` wide with
    # ReLU, then a lazy Linear to `out_channels` (PyG's to_hetero_mag.py);
    # head=False: as torch_geometric.nn.models.GraphSAGE (ReLU between the
    # layers, the last one to `out_channels`).
    def __init__(self, hidden: int, num_layers: int, out_channels: int,
                 head: bool):
        super().__init__()
        widths = [hidden] * (num_layers - 1) + [hidden if head
                                                else out_channels]
        self.convs = torch.nn.ModuleList(SAGEConv((-1, -1), w)
                                         for w in widths)
        self.head = Linear(-1, out_channels) if head else None

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if self.head is not None or i < len(self.convs) - 1:
                x = x.relu()
        return x if self.head is None else self.head(x)


def _node_type(data: HeteroData) -> str:
    # The node type a node-classification bench trains on: the one with
    # labels and a train mask ('paper' on mag_like).
    types = [t for t in data.node_types
             if 'y' in data[t] and 'train_mask' in data[t]]
    if len(types) != 1:
        raise ValueError(f"a heterogeneous node-classification graph needs "
                         f"exactly one node type with 'y' and 'train_mask', "
                         f"got {types}")
    return types[0]


class Bench:
    """Graph on both devices, loaders per variant, one model per row.

    Node classification on a ``Data`` or a ``HeteroData`` (seeds: the train
    nodes of its one labelled node type; model: PyG's to_hetero_mag.py, lazy
    ``SAGEConv((-1, -1))`` layers with ReLU and a ``Linear`` head, made
    heterogeneous by :func:`to_hetero`). :class:`.link.LinkBench` reuses
    it for link prediction: a task sets the seeds (:meth:`_seeds`,
    :meth:`num_seeds`), the loaders (``PYG_LOADER``, ``FUSED_LOADER``), the
    model's output width and the loss, and the variants it has."""
    VARIANTS = STEP_VARIANTS
    # The fused loader without prefetch: the untimed variant run before each
    # setting (__main__ --settle-steps) and the lazy layers' first batch.
    SETTLE_VARIANT = 'fused-sync'
    PYG_LOADER = NeighborLoader
    FUSED_LOADER = FusedNeighborLoader
    # The model's convs: PyG's, or 'fused' (to_fused of the same model, the
    # per-hop counts passed: bench step --layers).
    layers = 'pyg'

    def __init__(self, data, device: torch.device, seed: int = 0,
                 sampling: str = 'uniform'):
        data = with_sampling_attrs(data, sampling, seed)
        self.sampling = sampling
        # Both loaders sample by the same attribute (SAMPLING_ATTRS).
        self.sampling_kwargs = SAMPLING_KWARGS[sampling]
        self.data_cpu = data
        self.device = device
        # Data.to() moves tensors in place; a shallow copy keeps `data` (the
        # NeighborLoader baseline's CPU data) where it is without copying it.
        self.data_dev = copy.copy(data).to(device)
        self.seed = seed
        self.hetero = isinstance(data, HeteroData)
        if self.hetero:
            bare = [t for t in data.node_types if 'x' not in data[t]]
            if bare:
                raise ValueError(
                    f"node types {bare} have no 'x': build the graph with "
                    f"features for every type (mag_like: features='all', "
                    f"as PyG's to_hetero_mag.py takes metapath2vec ones)")
            # (TorchGPUSampler samples one edge type)
            self.VARIANTS = tuple(v for v in self.VARIANTS
                                  if v != 'torch-gpu')
        reason = _pyg_cannot(sampling, self.hetero)
        if reason:
            print(f"(variant 'pyg' skipped: {reason})")
            self.VARIANTS = tuple(v for v in self.VARIANTS if v != 'pyg')
        # NeighborLoader re-sorts the whole graph on construction (seconds on
        # a 100M-edge graph); rows that differ only in AMP share one.
        self._pyg_loaders = {}
        # The host-resident copies of the fused-host variants: pinned once
        # per run (rows rebuilding them re-pinned the features every time:
        # 57 GB for papers100M, which the pinned allocator keeps cached).
        self._host_placements = {}
        self.feature_cache = None
        self._init_task()

    def _init_task(self):
        self.node_type = _node_type(self.data_cpu) if self.hetero else None
        self.num_classes = int(self._labelled(self.data_cpu).y.max()) + 1

    def _labelled(self, data):
        # The store with the seeds' labels: the Data, or the node type's.
        return data[self.node_type] if self.hetero else data

    def _seeds(self, data) -> Dict:
        """The loader arguments naming the seeds in ``data`` (either copy)."""
        mask = self._labelled(data).train_mask
        return {'input_nodes': (self.node_type, mask) if self.hetero
                else mask}

    def num_seeds(self) -> int:
        """Seeds (train nodes, seed edges) in one epoch."""
        return int(self._labelled(self.data_cpu).train_mask.sum())

    def _pyg_loader(self, fanout, batch_size, num_workers):
        return self.PYG_LOADER(self.data_cpu, num_neighbors=fanout,
                               batch_size=batch_size, shuffle=True,
                               num_workers=num_workers,
                               **self._seeds(self.data_cpu),
                               **self.sampling_kwargs)

    def _fused_loader(self, fanout, batch_size, fused, prefetch):
        # (prefetch None: the loader's default, and no argument at all for
        # loaders without one)
        extra = {} if prefetch is None else {'prefetch': prefetch}
        return self.FUSED_LOADER(
            self.data_dev, num_neighbors=fanout, batch_size=batch_size,
            shuffle=True, seed=self.seed, fused=fused, **extra,
            **self._seeds(self.data_dev), **self.sampling_kwargs)

    def _host_memory_loader(self, variant, fanout, batch_size):
        # fused-host: graph and features in pinned host memory;
        # fused-host-x: features only (see HOST_X_CACHE_FRACTION).
        if self.device.type != 'cuda' or self.hetero or self.sampling_kwargs \
                or self.FUSED_LOADER is not FusedNeighborLoader:
            raise ValueError(f"variant '{variant}' samples a homogeneous "
                             f"graph with host-resident data with a GPU "
                             f"(node task, uniform sampling, --device cuda)")
        if variant not in self._host_placements:
            self._host_placements[variant] = self._host_placement(variant)
        host, kwargs = self._host_placements[variant]
        cache = kwargs.get('feature_cache', {}).get('x')
        if cache is not None:  # the row's hit rate, not the run's
            cache.reset_stats()
        self.feature_cache = cache
        return self.FUSED_LOADER(
            host, num_neighbors=fanout, batch_size=batch_size, shuffle=True,
            seed=self.seed, device=self.device, **kwargs, **self._seeds(host))

    def _host_placement(self, variant):
        # (data with x and y in pinned host memory, the loader's arguments)
        graph_on_host = variant == 'fused-host'
        host = copy.copy(self.data_cpu if graph_on_host else self.data_dev)
        for key in ('x', 'y'):
            host[key] = self.data_cpu[key].pin_memory()
        if graph_on_host:
            return host, dict(graph_in_host_memory=True)
        from ..sampler import GPUFeatureCache
        x = host.x
        cache_bytes = int(HOST_X_CACHE_FRACTION * x.numel() * x.element_size())
        cache = GPUFeatureCache.from_degree(x, self.data_cpu.edge_index,
                                            cache_bytes, self.device)
        return host, dict(feature_cache={'x': cache})

    def batches(self, variant: str, fanout: List[int], batch_size: int,
                num_workers: int, count: int = 0):
        # (count: how many batches a model-fresh row takes)
        if variant not in self.VARIANTS:
            raise ValueError(f"unknown variant '{variant}', expected one of "
                             f"{self.VARIANTS}")
        d = self.data_dev
        if variant == 'pyg':
            key = (tuple(fanout), batch_size, num_workers)
            if key not in self._pyg_loaders:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    self._pyg_loaders[key] = self._pyg_loader(
                        fanout, batch_size, num_workers)
            loader = self._pyg_loaders[key]
            return (b.to(self.device, non_blocking=True)
                    for b in _cycle(lambda: loader))
        if variant == 'torch-gpu':
            from ..sampler import build_csc
            g = build_csc(d.edge_index, d.num_nodes)
            s = TorchGPUSampler(g.colptr, g.row, d.x, d.y,
                                d.train_mask.nonzero().view(-1), fanout,
                                batch_size, self.seed)
            return _cycle(lambda: s)
        if variant == 'model-fresh':
            return self._fresh_batches(fanout, batch_size, count)
        if variant in ('fused-host', 'fused-host-x'):
            loader = self._host_memory_loader(variant, fanout, batch_size)
            return _cycle(lambda: loader)
        if variant == 'model-only':
            it = self.batches('fused', fanout, batch_size, num_workers)
            # (.to: whatever a loader left on the host, e.g. a link batch's
            # edge_label, is on the device too: the floor copies nothing)
            fixed = [next(it).to(self.device) for _ in range(8)]
            it.close()
            return _cycle(lambda: fixed)
        loader = self._fused_loader(fanout, batch_size,
                                    variant != 'per-hop',
                                    _PREFETCH.get(variant))
        return _cycle(lambda: loader)

    def _fresh_batches(self, fanout, batch_size, count: int):
        # `count` distinct fused batches on the device, each handed out once.
        it = self.batches('fused', fanout, batch_size, 0)
        first = next(it).to(self.device)
        if self.device.type == 'cuda':
            size = sum(t.numel() * t.element_size() for store in first.stores
                       for t in store.values() if isinstance(t, torch.Tensor))
            free, _ = torch.cuda.mem_get_info(self.device)
            if size * count > 0.6 * free:
                it.close()
                raise RuntimeError(
                    f"model-fresh needs {count} batches of ~{size / 2**20:.0f} "
                    f"MB on the device, more than 60% of the {free / 2**30:.1f} "
                    f"GB free: use model-only or fewer --steps")
        fresh = [first] + [next(it).to(self.device) for _ in range(count - 1)]
        it.close()
        return (b for b in fresh)

    # A task's model: GraphSAGE to `_out_channels` wide; on a HeteroData,
    # with a Linear head after the last layer or not (`_HEAD`).
    _HEAD = True

    def _out_channels(self, hidden: int) -> int:
        return self.num_classes

    def _model(self, num_layers: int, hidden: int) -> torch.nn.Module:
        out = self._out_channels(hidden)
        if not self.hetero:
            return GraphSAGE(self.data_cpu.num_features, hidden, num_layers,
                             out_channels=out)
        return to_hetero(_SAGE(hidden, num_layers, out, self._HEAD),
                         self.data_cpu.metadata(), aggr='sum')

    def model(self, num_layers: int, hidden: int = 256):
        torch.manual_seed(self.seed)
        model = self._model(num_layers, hidden).to(self.device)
        if any(is_lazy(p) for p in model.parameters()):
            # Lazy (-1) layers take their shapes from one forward, before
            # the optimizer sees the parameters.
            batches = self.batches(self.SETTLE_VARIANT, [2] * num_layers, 8,
                                   0)
            with torch.no_grad():
                forward(model, next(batches))
            batches.close()
        if self.layers == 'fused':
            from ..nn import to_fused
            with warnings.catch_warnings():
                # (which convs it swapped: said once by the row's label)
                warnings.simplefilter('ignore')
                model = to_fused(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        return model, opt

    def loss(self, model, batch) -> torch.Tensor:
        """Cross-entropy on the batch's seeds (its first ``batch_size``
        nodes of the labelled type)."""
        out = forward(model, batch, self.layers == 'fused')
        store = self._labelled(batch)
        if self.hetero:
            out = out[self.node_type]
        size = store.batch_size
        return F.cross_entropy(out[:size].float(), store.y[:size])


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
    # (model-fresh: one batch per step of both passes, and the pipelined
    # pass's extra call)
    batches = bench.batches(variant, fanout, batch_size, num_workers,
                            count=2 * (warmup + steps) + 1)
    if train:
        model, opt = bench.model(len(fanout))
    autocast = (torch.autocast(dev.type, dtype=torch.bfloat16) if amp
                else contextlib.nullcontext())

    def train_step(batch):
        if train:
            opt.zero_grad(set_to_none=True)
            with autocast:
                loss = bench.loss(model, batch)
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
            edges.append(sampled_edges(batch))
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
    cache = bench.feature_cache
    if variant == 'fused-host-x' and cache is not None:
        print(f'{graph} {variant}: feature cache {cache}, hit rate '
              f'{cache.hit_rate:.3f}', flush=True)
    lm = statistics.median(loader_ms)
    sm = statistics.median(step_ms)
    loader_total_s = sum(loader_ms) / 1e3
    return {
        **_setting(bench, graph, fanout, batch_size),
        'amp': 'bf16' if amp else 'off', 'variant': variant,
        'num_workers': num_workers, 'step_ms': f'{sm:.3f}',
        'pipelined_step_ms': f'{statistics.median(periods):.3f}',
        'loader_ms': f'{lm:.3f}' if variant not in FLOORS else '0',
        'batches_per_s': f'{1e3 / sm:.2f}',
        'sampled_edges_per_s': (f'{sum(edges) / loader_total_s:.4g}'
                                if variant not in FLOORS else ''),
        'peak_mem_mb': f'{peak:.1f}', 'transient_mem_mb': f'{transient:.1f}',
        'steps': steps, 'layers': bench.layers,
    }


def time_epoch(bench: Bench, graph: str, fanout: List[int], batch_size: int,
               variant: str) -> Dict:
    """One full epoch of loading over the training seeds (after one warm
    epoch), as a row with step_ms = epoch ms and steps = batches."""
    dev = bench.device
    batches = bench.batches(variant, fanout, batch_size, 0)
    n = -(-bench.num_seeds() // batch_size)
    for _ in range(n):
        next(batches)
    _sync(dev)
    t0 = time.perf_counter()
    edges = 0
    for _ in range(n):
        edges += sampled_edges(next(batches))
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
    (pipelined_step_ms) of the same setting and round; fresh_model_ms
    (pipelined_fresh_model_ms) the same of model-fresh."""
    def key(r):
        return (r['graph'], r['fanout'], r['batch_size'], r['amp'],
                r.get('round', ''), r.get('layers', 'pyg'))
    for floor_variant, prefix in (('model-only', ''), ('model-fresh', 'fresh_')):
        for column, model_column in (
                ('step_ms', f'{prefix}model_ms'),
                ('pipelined_step_ms', f'pipelined_{prefix}model_ms')):
            floor = {key(r): r.get(column, '') for r in rows
                     if r['variant'] == floor_variant}
            for r in rows:
                r[model_column] = floor.get(key(r), '')
