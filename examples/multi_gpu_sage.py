"""GraphSAGE on several GPUs (or CPU processes) with torch.distributed.

PyG's multi-GPU recipe (``examples/multi_gpu/distributed_sampling.py``,
``papers100m_gcn.py``) with :class:`~pyg_fusesample.FusedNeighborLoader`:
one process per GPU, the model wrapped in ``DistributedDataParallel``, each
rank training on its own shard of the training seeds, rank 0 evaluating::

    torchrun --standalone --nproc_per_node 4 examples/multi_gpu_sage.py --graph products
    python examples/multi_gpu_sage.py --world-size 4 --graph products   # mp.spawn
    python examples/multi_gpu_sage.py --world-size 1                     # one GPU, this process
    torchrun --standalone --nproc_per_node 2 examples/multi_gpu_sage.py \\
        --device cpu --synthetic --scale 0.01 --epochs 1                 # 2 gloo processes

``--layers fused`` runs the same GraphSAGE through
``pyg_fusesample.nn.to_fused``; with either layer choice the model is called
with the batches' per-hop counts (trimmed) wherever the batches carry them,
``--no-trim`` to turn that off.

Backend: NCCL on CUDA (rank ``r`` on GPU ``LOCAL_RANK``), gloo on the CPU.
Under ``torchrun`` the ranks come from ``RANK`` / ``WORLD_SIZE`` /
``LOCAL_RANK``; started with plain ``python``, the script spawns
``--world-size`` processes (default: every visible GPU, or 1 on the CPU), or
runs a world size of 1 in its own process.

What is shared between the ranks, and what is not:

* The model: every rank holds a replica; DDP all-reduces (averages) the
  gradients at every step, so the replicas stay equal.
* The training seeds: :func:`~pyg_fusesample.loader.rank_seeds` gives each
  rank an equal shard (``DistributedSampler``'s split, the remainder padded),
  so every rank runs the same number of steps.
* The graph is not shared. On CUDA every rank copies the whole graph
  (``edge_index``, features, labels) to its own GPU (``data.to(device)``)
  and samples there: it must fit on one GPU beside the model. On the CPU
  every process holds its own copy in its own memory. In both cases every
  process first reads (or generates) the graph into its host memory, so the
  host holds one copy per rank while loading. Reading the graph once and
  sharing it read-only between the ranks through pinned host memory is not
  done by this script.
* Evaluation: rank 0 alone, over all validation and test nodes, with the
  same fan-out (sampled, as PyG's multi-GPU examples evaluate); the other
  ranks wait at a barrier.

Determinism: shards depend on ``--seed`` and the world size only; rank ``r``
shuffles its shard, samples, and draws dropout from ``rank_seed(seed, r) =
seed + r``. A run is repeatable under ``--seed``, and each rank's batches can
be rebuilt in one process (``tests/test_multi_gpu_example.py`` checks that
DDP training equals one process averaging both ranks' gradients).

Data: ``--graph products`` reads ogbn-products as the other OGB examples do
(``_common.load_real``: ``PygNodePropPredDataset``, or OGB's raw files
without the ``ogb`` package); ``--graph papers100m`` reads ogbn-papers100M
with ``PygNodePropPredDataset`` only (its raw files are binary). Nothing is
downloaded. Without the files (or, for papers100M, without ``ogb``) the
script stops, or, with ``--synthetic``, runs on a SYNTHETIC generated graph
of the same shape and labels every line it prints.

Each epoch prints the loss, validation and test accuracy, the training time,
seeds/s and sampled edges/s (the edges of the epoch's batches per second of
training) over all ranks, every rank's peak memory (CUDA: the allocator's
peak during training; CPU: the process's peak RSS) and, with a feature
cache, its hit rate; ``--csv`` appends one row per epoch for scaling runs.
"""
import argparse
import csv
import datetime
import importlib.util
import itertools
import os
import os.path as osp
import resource
import socket
import sys
import time
from typing import List, Optional, Tuple

import torch
from torch import Tensor
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.data import Data

from _common import (DEFAULT_ROOT, LAYER_NAMES, OGB_READER, SPECS,
                     DataMissing, MalformedData, add_layers_arg, add_trim_arg,
                     load_real, read_with_ogb, resolve_trim, trim_kwargs,
                     with_layers)
from _data_checks import check_graph, load_torch_file

GRAPHS = ('products', 'papers100m')
LOADER_NAMES = {'fused': 'FusedNeighborLoader',
                'pyg': 'PyG NeighborLoader ({} workers per rank)'}
CSV_FIELDS = ('time', 'device', 'device_name', 'backend', 'world_size',
              'loader', 'num_workers',
              'graph', 'data', 'synthetic', 'scale', 'num_nodes', 'num_edges',
              'fan_out', 'batch_size_per_rank', 'amp', 'epoch',
              'steps_per_rank', 'epoch_time_s', 'seeds_per_s', 'loss',
              'val_acc', 'test_acc', 'peak_mem_kind', 'peak_mem_mib_max',
              'peak_mem_mib_per_rank', 'peak_host_rss_mib_max', 'torch',
              'sampled_edges_per_s', 'cache_hit_rate', 'trim', 'layers')


# -- data -------------------------------------------------------------------
def load_papers100m(root: str) -> Tuple[Data, str]:
    """ogbn-papers100M through ``PygNodePropPredDataset`` (guarded import):
    ``y`` 1-D int64 with -1 for the unlabelled papers, the split as masks.
    The citation edges stay directed, as in PyG's papers100M examples."""
    path = osp.join(root, 'ogbn_papers100M')
    try:
        from ogb.nodeproppred import PygNodePropPredDataset  # noqa: F401
    except ImportError:
        raise DataMissing("ogbn-papers100M is read with ogb.nodeproppred."
                          "PygNodePropPredDataset only (its raw files are "
                          "binary), and the 'ogb' package is not installed "
                          "(pip install ogb)") from None
    processed = osp.join(path, 'processed', 'geometric_data_processed.pt')
    raw = [osp.join(path, 'raw', f) for f in ('data.npz', 'node-label.npz')]
    needed = [osp.join(path, 'RELEASE_v1.txt')] + [
        osp.join(path, 'split', 'time', f'{s}.csv.gz')
        for s in ('train', 'valid', 'test')]
    if not osp.exists(processed):
        needed += raw
    missing = [f for f in needed if not osp.exists(f)]
    if missing:
        raise DataMissing(f"ogbn-papers100M not found: missing "
                          f"{', '.join(missing)}. Nothing can be downloaded "
                          f"here; copy the data set there (or pass --root), "
                          f"or run with --synthetic")
    data, split = read_with_ogb('ogbn-papers100M', root, path)
    n = data.num_nodes
    y = data.y.view(-1)
    y = torch.nan_to_num(y.float(), nan=-1.0).long()
    masks = {}
    for name, key in (('train', 'train'), ('val', 'valid'), ('test', 'test')):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[split[key]] = True
        masks[f'{name}_mask'] = mask
    return (Data(x=data.x.float(), edge_index=data.edge_index, y=y,
                 num_nodes=n, **masks), OGB_READER)


def load_graph(args, say=print) -> Tuple[Data, str, str]:
    """The graph of ``--graph``: ``(data, label, prefix)``; ``prefix`` is
    ``'[SYNTHETIC <name>] '`` on the generated graph, else empty."""
    real = 'ogbn-products' if args.graph == 'products' else 'ogbn-papers100M'
    try:
        if args.graph == 'products':
            data, reader = load_real(args.root, SPECS['ogbn-products'])
        else:
            data, reader = load_papers100m(args.root)
        return data, f'{real} ({reader})', ''
    except DataMissing as e:
        if not args.synthetic:
            raise
        why = str(e)
    data = synthetic_graph(args)
    prefix = f'[SYNTHETIC {data.name}] '
    say(f'{prefix}{why}')
    say(f"{prefix}--synthetic: running on a generated graph of {real}'s "
        f"shape; its numbers say nothing about {real}")
    return data, f'SYNTHETIC {data.name}, not {real}', prefix


def synthetic_graph(args) -> Data:
    """The generated graph of ``--graph``/``--scale``/``--seed``. With
    ``--graph-cache DIR`` it is generated once and read from
    ``DIR/<graph>_scale<scale>_seed<seed>.pt`` by every later rank and run
    (a full-size graph takes a minute or more to generate on the one thread
    torchrun gives each process; reading it back, seconds)."""
    from pyg_fusesample.datasets import papers100m_like, products_like
    from pyg_fusesample.files import replaced_atomically
    path = None
    if args.graph_cache:
        path = osp.join(args.graph_cache,
                        f'{args.graph}_scale{args.scale:g}_seed{args.seed}.pt')
        if osp.exists(path):
            return _read_graph_cache(path)
    make = products_like if args.graph == 'products' else papers100m_like
    threads = torch.get_num_threads()
    # torchrun sets OMP_NUM_THREADS=1 for training; the generator is
    # vectorised and gains from every core while nothing else runs.
    torch.set_num_threads(max(threads, len(os.sched_getaffinity(0))
                              if hasattr(os, 'sched_getaffinity')
                              else (os.cpu_count() or 1)))
    try:
        # Features the GPU will read from host memory are generated pinned:
        # pinning afterwards copies them (57 GB for papers100M at scale 1).
        data = make(scale=args.scale, seed=args.seed,
                    pin_memory=args.host_memory != 'none'
                    and args.device == 'cuda')
    finally:
        torch.set_num_threads(threads)
    if path is not None:
        with replaced_atomically(path) as tmp:  # no rank reads half a file
            torch.save(data, tmp)
    return data


def _read_graph_cache(path: str) -> Data:
    """A graph :func:`synthetic_graph` wrote, checked: ids and sizes as a
    loader will read them (a damaged file is refused; delete it and the
    next run writes it again)."""
    why = '--graph-cache: delete it to generate the graph again'
    where = f"'{path}' ({why})"
    data = load_torch_file(path, f'a generated graph, {why}',
                           weights_only=False)
    if not isinstance(data, Data):
        raise MalformedData(f"{where} holds a {type(data).__name__}, not a "
                            f"torch_geometric Data")
    check_graph(data, where)
    return data


# -- per-rank pieces (the test rebuilds a rank's run from these) ------------
def build_model(args, in_channels: int, num_classes: int) -> torch.nn.Module:
    from torch_geometric.nn.models import GraphSAGE
    return with_layers(GraphSAGE(in_channels, args.hidden,
                                 num_layers=len(args.num_neighbors),
                                 out_channels=num_classes,
                                 dropout=args.dropout), args.layers)


def make_train_loader(data: Data, rank: int, world_size: int, args,
                      **placement):
    """Rank ``rank``'s loader: its shard of the training seeds, shuffled and
    sampled under ``rank_seed(args.seed, rank)``; ``placement``: the
    loader's host-memory arguments (:func:`place`)."""
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seed, rank_seeds
    shard = rank_seeds(data.train_mask.cpu(), rank, world_size,
                       seed=args.seed)
    if args.loader == 'pyg':
        return pyg_loader(data, args, shard, shuffle=True,
                          batch_size=args.batch_size,
                          seed=rank_seed(args.seed, rank))
    return FusedNeighborLoader(data, num_neighbors=args.num_neighbors,
                               input_nodes=shard, batch_size=args.batch_size,
                               shuffle=True, seed=rank_seed(args.seed, rank),
                               **placement)


def pyg_loader(data: Data, args, input_nodes, shuffle: bool, batch_size: int,
               seed: int):
    """The baseline (``--loader pyg``): PyG's ``NeighborLoader`` over the
    rank's CPU copy of the graph, ``--num-workers`` worker processes
    (persistent), batches moved to the GPU by the training loop. Every PyG
    loader of the rank shares one ``NeighborSampler`` (:func:`pyg_sampler`):
    each would otherwise build its own CSC of the graph."""
    from torch_geometric.loader import NeighborLoader
    workers = args.num_workers
    return NeighborLoader(data, num_neighbors=args.num_neighbors,
                          input_nodes=input_nodes.cpu(), batch_size=batch_size,
                          shuffle=shuffle, num_workers=workers,
                          persistent_workers=workers > 0,
                          neighbor_sampler=pyg_sampler(data, args),
                          generator=torch.Generator().manual_seed(seed))


_PYG_SAMPLER = [None, None]  # the graph it was built for, the sampler


def pyg_sampler(data: Data, args):
    """The rank's one PyG ``NeighborSampler``. Its CSC is the ``edge_index``
    itself: the edges are sorted by target first, in place
    (:func:`sort_by_target_`), and PyG is told ``is_sorted=True``, so it
    keeps views instead of a sorted copy and a permutation -- on the
    full-size papers100M-like graph (1.6B edges) those were 26 GB more on a
    host already holding 57 GB of features and 26 GB of edges, and the
    out-of-memory killer stopped the run (128 GiB host). The sampler's
    arrays stay where they are (``share_memory=False``; NeighborLoader's own
    sampler moves them to shared memory when it has workers, a copy of the
    edges): forked workers read them copy-on-write."""
    from torch_geometric.sampler import NeighborSampler
    if _PYG_SAMPLER[0] is not data:  # (one graph per rank: keep only it)
        sort_by_target_(data.edge_index)
        _PYG_SAMPLER[:] = data, NeighborSampler(
            data, num_neighbors=args.num_neighbors, is_sorted=True,
            share_memory=False)
    return _PYG_SAMPLER[1]


def sort_by_target_(edge_index: Tensor) -> None:
    """Sorts the CPU ``edge_index`` by target (``edge_index[1]``), stably,
    in place. On a machine with a GPU the sort runs there (a stable sort of
    1.6B keys is minutes on the host) and the results are copied straight
    back into ``edge_index``, so the host holds no second copy of it."""
    col = edge_index[1]
    if col.numel() > 1 and bool((col[1:] >= col[:-1]).all()):
        return  # already sorted
    device = torch.device('cuda') if torch.cuda.is_available() else col.device
    col_sorted, perm = col.to(device).sort(stable=True)
    edge_index[1].copy_(col_sorted)
    del col_sorted
    edge_index[0].copy_(edge_index[0].to(device)[perm])


def place(data: Data, device: torch.device, args) -> Tuple[Data, dict]:
    """Puts the graph where ``--host-memory`` says and returns the loaders'
    placement arguments. ``none``: everything on this rank's GPU.
    ``features``: the graph on the GPU, node features and labels in pinned
    host memory, gathered by the GPU in place (with a GPU cache of the
    hottest rows when ``--cache-mb`` > 0). ``all``: the graph too, sampled
    by the GPU in place (``graph_in_host_memory``). On a CPU everything is
    where it is."""
    if device.type != 'cuda' or args.loader == 'pyg':  # (pyg: samples on the CPU)
        return data, {}
    if args.host_memory == 'none':
        return data.to(device), {}
    from pyg_fusesample.sampler import GPUFeatureCache
    placement = {}
    host_edges = data.edge_index
    for key, value in data.items():  # masks and the like: small, on the GPU
        if key not in ('x', 'y', 'edge_index') and isinstance(value,
                                                             torch.Tensor):
            data[key] = value.to(device)
    data.x = data.x.pin_memory()
    data.y = data.y.pin_memory()
    if args.host_memory == 'all':
        data.edge_index = data.edge_index.pin_memory()
        placement.update(graph_in_host_memory=True, device=device)
    else:
        data.edge_index = data.edge_index.to(device)
    if args.cache_mb > 0:
        cache = GPUFeatureCache.from_degree(data.x, host_edges,
                                            int(args.cache_mb * 2**20),
                                            device)
        placement['feature_cache'] = {'x': cache}
    return data, placement


def autocast(device: torch.device, amp: str):
    return torch.autocast(device.type, dtype=torch.bfloat16,
                          enabled=amp == 'bf16')


def seed_outputs(model, batch, trim: bool = False) -> torch.Tensor:
    """The model's outputs for a batch's seeds (its first ``batch_size``
    rows). With ``trim`` and a batch carrying per-hop counts, the model is
    called with them: PyG's layers run ``trim_to_layer`` (layer ``l``
    computes only the nodes within ``L - l`` hops of the seeds), a
    ``to_fused`` model only the rows the next layer reads (its output: the
    seeds' rows); the seeds' outputs are the same."""
    n = batch.batch_size
    return model(batch.x, batch.edge_index, **trim_kwargs(batch, trim))[:n]


def batch_loss(model, batch, device: torch.device, amp: str,
               trim: bool = False) -> torch.Tensor:
    """Cross-entropy of one batch's seeds (the first ``batch_size`` rows)."""
    batch = batch.to(device)  # a no-op where the graph already is there
    with autocast(device, amp):
        out = seed_outputs(model, batch, trim)
    return F.cross_entropy(out.float(), batch.y[:batch.batch_size])


@torch.no_grad()
def accuracy(module, loader, device: torch.device, amp: str,
             trim: bool = False) -> float:
    module.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total = 0
    for batch in loader:
        batch = batch.to(device)
        n = batch.batch_size
        with autocast(device, amp):
            out = seed_outputs(module, batch, trim)
        correct += (out.argmax(dim=-1) == batch.y[:n]).sum()
        total += n
    return int(correct) / max(total, 1)


def peak_memory_mib(device: torch.device) -> float:
    if device.type == 'cuda':
        return torch.cuda.max_memory_allocated(device) / 2**20
    return peak_host_rss_mib()


def peak_host_rss_mib() -> float:
    # The process's peak resident set (Linux reports ru_maxrss in KiB): on
    # a GPU the host side of the run (the graph as loaded, pinned features).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def append_csv(path: str, row: dict):
    exists = osp.exists(path) and osp.getsize(path) > 0
    if exists:
        with open(path, newline='') as f:
            header = next(csv.reader(f), [])
        if tuple(header) != CSV_FIELDS:
            raise ValueError(f'--csv {path}: its header is not this '
                             f"script's ({', '.join(CSV_FIELDS)})")
    with open(path, 'a', newline='') as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        if not exists:
            writer.writeheader()
        writer.writerow(row)


# -- one rank ---------------------------------------------------------------
def run(rank: int, world_size: int, local_rank: int, args,
        store: Optional['dist.Store'] = None):
    """Trains on one rank; rank 0 evaluates and prints. ``store``: a
    process group store for a world size of 1 in this process (else the
    ``MASTER_ADDR`` / ``MASTER_PORT`` environment, as torchrun sets it)."""
    wall_start = time.perf_counter()
    device = torch.device('cuda', local_rank) if args.device == 'cuda' \
        else torch.device('cpu')
    backend = 'nccl' if device.type == 'cuda' else 'gloo'
    if device.type == 'cuda':
        torch.cuda.set_device(device)
    local_world = int(os.environ.get('LOCAL_WORLD_SIZE', world_size))
    if device.type == 'cpu' and local_world > 1 \
            and 'OMP_NUM_THREADS' not in os.environ:
        # The processes share the machine's cores (torchrun sets
        # OMP_NUM_THREADS=1 itself).
        cores = len(os.sched_getaffinity(0)) if hasattr(
            os, 'sched_getaffinity') else (os.cpu_count() or 1)
        torch.set_num_threads(max(1, cores // local_world))
    # Generous: the other ranks wait at a barrier while local rank 0 may
    # process an OGB data set on first use, and while rank 0 evaluates.
    timeout = datetime.timedelta(minutes=60)
    if store is not None:
        dist.init_process_group(backend, store=store, rank=rank,
                                world_size=world_size, timeout=timeout)
    else:
        dist.init_process_group(backend, rank=rank, world_size=world_size,
                                timeout=timeout)
    try:
        _train(rank, world_size, local_rank, args, device, backend,
               wall_start)
    finally:
        dist.destroy_process_group()


def _train(rank, world_size, local_rank, args, device, backend, wall_start):
    def emit(msg):
        if rank == 0:
            print(msg, flush=True)

    # Every rank reads its own copy. Where ogb is installed it may process
    # the raw files on first use and write the result: local rank 0 then
    # reads first, the others after it.
    serial = (importlib.util.find_spec('ogb') is not None
              or bool(args.graph_cache))
    if serial and local_rank != 0:
        dist.barrier()
    missing = None
    try:
        data, label, prefix = load_graph(args, emit)
    except (DataMissing, MalformedData) as e:  # not a hang at the barrier
        missing = e
    if serial and local_rank == 0:
        dist.barrier()
    if missing is not None:  # every rank stops; rank 0 says why
        if rank == 0:
            print(f'multi_gpu_sage.py: error: {missing}', file=sys.stderr,
                  flush=True)
        raise SystemExit(2)

    def say(msg):  # every line labelled on a SYNTHETIC graph
        emit(f'{prefix}{msg}')

    num_classes = int(data.y.max()) + 1
    if args.graph == 'papers100m':
        num_classes = max(num_classes, 172)
    # Replicated on every rank's GPU, or in pinned host memory (--host-memory).
    data, placement = place(data, device, args)
    cache = placement.get('feature_cache', {}).get('x')
    if device.type == 'cuda' and args.host_memory != 'none':
        say(f'Host memory: {args.host_memory} (pinned, read by the GPU in '
            f'place); GPU cache: {cache if cache is not None else "none"}')
    say(f'Data: {label}: {data.num_nodes:,} nodes, {data.num_edges:,} '
        f'edges, {data.num_features} features, {num_classes} classes, '
        f'train/val/test {int(data.train_mask.sum()):,}/'
        f'{int(data.val_mask.sum()):,}/{int(data.test_mask.sum()):,}')

    train_loader = make_train_loader(data, rank, world_size, args,
                                     **placement)
    eval_loaders = {}
    if rank == 0 and args.eval_every > 0:  # (none: --eval-every 0)
        from pyg_fusesample import FusedNeighborLoader
        for split in ('val', 'test'):
            eval_loaders[split] = pyg_loader(
                data, args, data[f'{split}_mask'], shuffle=False,
                batch_size=args.eval_batch_size, seed=args.seed) \
                if args.loader == 'pyg' else FusedNeighborLoader(
                data, num_neighbors=args.num_neighbors,
                input_nodes=data[f'{split}_mask'],
                batch_size=args.eval_batch_size, shuffle=False,
                seed=args.seed, **placement)
    # Every rank builds the same initial model (DDP also broadcasts rank
    # 0's), then draws dropout from its own stream; nothing else here draws
    # from PyTorch's global RNG (the loaders have their own generators).
    from pyg_fusesample.loader import rank_seed
    torch.manual_seed(args.seed)
    model = build_model(args, data.num_features, num_classes).to(device)
    torch.manual_seed(rank_seed(args.seed, rank))
    model = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == 'cuda' else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    device_name = (torch.cuda.get_device_name(device)
                   if device.type == 'cuda' else 'cpu')
    mem_kind = ('cuda max allocated' if device.type == 'cuda'
                else 'host peak RSS')
    steps = len(train_loader)
    if args.max_steps is not None:
        steps = min(steps, args.max_steps)
    say(f'Model: PyG GraphSAGE ({len(args.num_neighbors)} layers, hidden '
        f'{args.hidden}, layers: {LAYER_NAMES[args.layers]}, trim: '
        f'{args.trim_note}) in DDP, loader: '
        f'{LOADER_NAMES[args.loader].format(args.num_workers)}, fan-out '
        f'{args.num_neighbors}, batch {args.batch_size} per rank, world size '
        f'{world_size} ({backend}, {device_name}), '
        f'{len(train_loader.input_data.node):,} seeds and {steps} '
        f'step{"s" if steps != 1 else ""} per rank per epoch, AMP: {args.amp}')

    dist.barrier()
    say(f'Setup: {time.perf_counter() - wall_start:.2f}s')
    for epoch in range(1, args.epochs + 1):
        model.train()
        if device.type == 'cuda':
            torch.cuda.reset_peak_memory_stats(device)
        dist.barrier()
        start = time.perf_counter()
        total_loss = torch.zeros((), dtype=torch.float64, device=device)
        seeds = edges = done = 0
        batches = iter(train_loader)
        progress = itertools.islice(batches, steps)
        if args.progress and rank == 0:
            from tqdm import tqdm
            progress = tqdm(progress, total=steps, desc=f'Epoch {epoch:02d}',
                            unit='step', leave=False)
        try:
            # Equal shards: every rank runs `steps` steps.
            for batch in progress:
                optimizer.zero_grad()
                loss = batch_loss(model, batch, device, args.amp, args.trim)
                loss.backward()
                optimizer.step()
                total_loss += loss.detach() * batch.batch_size
                seeds += batch.batch_size
                edges += batch.edge_index.size(1)  # (a shape: no sync)
                done += 1
        finally:
            close = getattr(batches, 'close', None)
            if close is not None:  # a background thread, left early
                close()
        # (loss sum, seeds, sampled edges), summed over the ranks
        totals = torch.cat([total_loss.view(1), torch.tensor(
            [float(seeds), float(edges)], dtype=torch.float64,
            device=device)])
        dist.all_reduce(totals)  # also waits for the slowest rank
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        train_time = time.perf_counter() - start
        gathered = [None] * world_size  # (each rank's device, host peak)
        dist.all_gather_object(gathered, (peak_memory_mib(device),
                                          peak_host_rss_mib()))
        peaks, host_peaks = zip(*gathered)

        evaluate = args.eval_every > 0 and (
            epoch % args.eval_every == 0 or epoch == args.epochs)
        if rank == 0:
            start = time.perf_counter()
            module = model.module
            val_acc = test_acc = float('nan')
            if evaluate:
                val_acc = accuracy(module, eval_loaders['val'], device,
                                   args.amp, args.trim)
                test_acc = accuracy(module, eval_loaders['test'], device,
                                    args.amp, args.trim)
            eval_time = time.perf_counter() - start
            loss_value = float(totals[0] / totals[1].clamp(min=1))
            seeds_per_s = float(totals[1]) / train_time
            edges_per_s = float(totals[2]) / train_time
            hit_rate = None if cache is None else cache.hit_rate
            say(f'Epoch: {epoch:02d}, Loss: {loss_value:.4f}, '
                f'Val: {val_acc:.4f}, Test: {test_acc:.4f}, '
                f'Time: {train_time:.2f}s, Seeds/s: {seeds_per_s:,.0f}, '
                f'Sampled edges/s: {edges_per_s:,.0f}, '
                f'Eval: {eval_time:.2f}s, Peak memory per rank ({mem_kind}, '
                f'MiB): {", ".join(f"{p:.0f}" for p in peaks)}'
                + ('' if device.type != 'cuda' else
                   f', host peak RSS (MiB, largest rank): '
                   f'{max(host_peaks):.0f}')
                + ('' if cache is None else
                   f', Cache hit rate (rank 0, train + eval): '
                   f'{hit_rate:.3f}'))
            if cache is not None:
                cache.reset_stats()
            if args.csv:
                append_csv(args.csv, dict(
                    time=datetime.datetime.now().isoformat(timespec='seconds'),
                    device=device.type, device_name=device_name,
                    backend=backend, world_size=world_size,
                    loader=args.loader,
                    num_workers=args.num_workers if args.loader == 'pyg' else 0,
                    graph=args.graph,
                    data=label, synthetic=bool(prefix),
                    scale=args.scale if prefix else 1.0,
                    num_nodes=data.num_nodes, num_edges=data.num_edges,
                    fan_out=' '.join(map(str, args.num_neighbors)),
                    batch_size_per_rank=args.batch_size, amp=args.amp,
                    epoch=epoch, steps_per_rank=done,
                    epoch_time_s=f'{train_time:.4f}',
                    seeds_per_s=f'{seeds_per_s:.1f}',
                    loss=f'{loss_value:.6f}', val_acc=f'{val_acc:.6f}',
                    test_acc=f'{test_acc:.6f}', peak_mem_kind=mem_kind,
                    peak_mem_mib_max=f'{max(peaks):.1f}',
                    peak_mem_mib_per_rank=';'.join(f'{p:.1f}' for p in peaks),
                    peak_host_rss_mib_max=f'{max(host_peaks):.1f}',
                    torch=torch.__version__,
                    sampled_edges_per_s=f'{edges_per_s:.1f}',
                    cache_hit_rate='' if hit_rate is None
                    else f'{hit_rate:.4f}',
                    trim='on' if args.trim else 'off', layers=args.layers))
        dist.barrier()  # the other ranks wait for rank 0's evaluation

    if rank == 0 and args.save_model:
        torch.save(model.module.state_dict(), args.save_model)
        say(f'Saved the final model to {args.save_model}')
    say(f'Total: {time.perf_counter() - wall_start:.2f}s')


def _spawned(rank: int, world_size: int, args):
    # mp.spawn's entry point: one process per rank on this host.
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world_size),
                      LOCAL_WORLD_SIZE=str(world_size))
    run(rank, world_size, rank, args)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


# -- command line -----------------------------------------------------------
def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--graph', choices=GRAPHS, default='products')
    p.add_argument('--root', default=DEFAULT_ROOT,
                   help='data folder: <root>/ogbn_products, '
                   '<root>/ogbn_papers100M. Nothing is downloaded.')
    p.add_argument('--synthetic', action='store_true',
                   help='if the data is absent, run on a SYNTHETIC graph of '
                   'the same shape instead of stopping; every printed line '
                   'is then labelled SYNTHETIC')
    p.add_argument('--scale', type=float, default=1.0,
                   help='node count of the synthetic graph, relative to the '
                   'real data set')
    p.add_argument('--device', choices=['cpu', 'cuda'], default=None,
                   help='default: cuda if available')
    p.add_argument('--world-size', type=int, default=None,
                   help='processes to start when not under torchrun '
                   '(default: every visible GPU on cuda, 1 on cpu)')
    p.add_argument('--num-neighbors', type=int, nargs='+',
                   default=[15, 10, 5],
                   help='fan-out per layer (also sets the number of layers)')
    p.add_argument('--batch-size', type=int, default=1024,
                   help='seeds per batch on each rank')
    p.add_argument('--eval-batch-size', type=int, default=4096)
    p.add_argument('--hidden', type=int, default=256)
    p.add_argument('--dropout', type=float, default=0.5)
    p.add_argument('--lr', type=float, default=0.001)
    p.add_argument('--epochs', type=int, default=20)
    p.add_argument('--amp', choices=['none', 'bf16'], default='none',
                   help='bf16 autocast in training and evaluation')
    add_trim_arg(p)
    add_layers_arg(p)
    p.add_argument('--seed', type=int, default=0,
                   help="the run's seed; rank r uses seed + r for its "
                   'batches and dropout')
    p.add_argument('--eval-every', type=int, default=1,
                   help='evaluate (rank 0) after every this many epochs and '
                        'after the last (0: never); other epochs report nan '
                        'accuracy')
    p.add_argument('--graph-cache', default=None,
                   help='with --synthetic: save the generated graph in this '
                        'folder once, and read it from there afterwards')
    p.add_argument('--max-steps', type=int, default=None,
                   help='at most this many steps per epoch on each rank')
    p.add_argument('--host-memory', choices=['none', 'features', 'all'],
                   default='none',
                   help="on a GPU: keep the node features ('features') or "
                        "the features and the graph ('all') in pinned host "
                        "memory, read by the GPU in place (graphs larger "
                        "than the GPU)")
    p.add_argument('--cache-mb', type=float, default=0.0,
                   help='with --host-memory: MiB of the hottest feature '
                        'rows (by out-degree) cached on each GPU')
    p.add_argument('--loader', choices=['fused', 'pyg'], default='fused',
                   help="'pyg': PyG's NeighborLoader on the CPU with "
                        "--num-workers workers per rank (the baseline)")
    p.add_argument('--num-workers', type=int, default=8,
                   help="--loader pyg: loader worker processes per rank")
    p.add_argument('--progress', action='store_true',
                   help='a progress bar per training epoch (rank 0; tqdm)')
    p.add_argument('--csv', default=None,
                   help='append one row per epoch to this CSV file')
    p.add_argument('--save-model', default=None,
                   help="save the final model's state_dict here (rank 0)")
    args = p.parse_args(argv)
    if args.device is None:
        args.device = 'cuda' if torch.cuda.is_available() else 'cpu'
    if args.device == 'cuda' and not torch.cuda.is_available():
        p.error('--device cuda: no CUDA device is available')
    if args.eval_every < 0:
        p.error('--eval-every must be at least 0')
    if args.max_steps is not None and args.max_steps < 1:
        p.error('--max-steps must be at least 1')
    if args.loader == 'pyg' and args.host_memory != 'none':
        p.error('--loader pyg samples on the CPU: --host-memory is for the '
                'fused loader')
    if args.num_workers < 0:
        p.error('--num-workers must be >= 0')
    args.layers = args.layers or 'pyg'
    args.trim, args.trim_note = resolve_trim(p, args.trim, args.loader)
    return args


def main(argv: Optional[List[str]] = None):
    args = parse_args(argv)
    if not dist.is_available():
        sys.exit('torch.distributed is not available in this PyTorch build')
    if 'RANK' in os.environ and 'WORLD_SIZE' in os.environ:  # torchrun
        world_size = int(os.environ['WORLD_SIZE'])
        if args.world_size not in (None, world_size):
            sys.exit(f'--world-size {args.world_size}, but torchrun started '
                     f'{world_size} processes')
        run(int(os.environ['RANK']), world_size,
            int(os.environ.get('LOCAL_RANK', 0)), args)
        return
    world_size = args.world_size or (
        torch.cuda.device_count() if args.device == 'cuda' else 1)
    if world_size < 1:
        sys.exit('--world-size must be at least 1')
    if args.device == 'cuda' and world_size > torch.cuda.device_count():
        sys.exit(f'--world-size {world_size}, but only '
                 f'{torch.cuda.device_count()} GPU(s) are visible')
    if world_size == 1:  # this process, a process group of one
        run(0, 1, 0, args, store=dist.HashStore())
        return
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', str(_free_port()))
    print(f"Let's use {world_size} "
          f"{'GPUs' if args.device == 'cuda' else 'CPU processes'}!",
          flush=True)
    mp.spawn(_spawned, args=(world_size, args), nprocs=world_size, join=True)


if __name__ == '__main__':
    main()
