"""Training throughput on a partitioned graph against the replicated run
(issue 45's GPU target: the partitioned run at >= 0.7x the replicated DDP
run's throughput, with its all-to-all bytes per batch reported against the
link bandwidth measured in the same run).

Run under ``torchrun``, one process per GPU (NCCL), both variants in one
run, rank 0 appending one CSV row per variant:

    torchrun --standalone --nproc_per_node 4 benchmarks/dist_throughput.py \\
        --out benchmarks/results/h200x4/dist_throughput.csv

and on the CPU as gloo processes at a tiny scale (a smoke test; the numbers
mean nothing):

    torchrun --standalone --nproc_per_node 2 benchmarks/dist_throughput.py \\
        --device cpu --scale 0.001 --steps 3 --warmup 1 --batch-size 64 \\
        --num-neighbors 5 5 --hidden 32 --out /tmp/dist_throughput.csv

**Data.** Every rank generates the same SYNTHETIC graph
(``pyg_fusesample.datasets``: ``papers100m_like``, or ``products_like`` with
``--graph products``) at ``--scale`` (seeded; the ranks check that their
copies agree), each with its share of the host's cores. Rank 0 writes
``P`` parts of it (``write_partitions``, hash assignment, edges in chunks)
into a temporary folder (or ``--partition-dir``, reused when it holds them
already) while the others wait at a barrier. The default scale (0.05 of
papers100M: 5.55M nodes, 81M edges, 128 features) takes well under three
minutes of generation and partitioning on a GPU host.

**Variants** (the same model, optimizer, fan-out and batch size a rank):

* ``partitioned``: rank ``r`` reads part ``r`` onto its GPU
  (``read_partition(..., device=...)``, without the edge map) and trains
  from ``FusedDistNeighborLoader`` batches over its share of the training
  seeds, sampled across the parts (all-to-all exchanges over NCCL;
  ``--prefetch``: the loader's mode, by default its own: on a GPU one batch
  made ahead in the training thread on a side stream);
* ``replicated``: every rank holds the whole graph on its GPU and trains
  from a ``FusedNeighborLoader`` over its shard of the seeds
  (``rank_seeds`` / ``rank_seed``, as ``examples/multi_gpu_sage.py``; the
  loader's defaults, which prefetch on a background thread on a GPU).

Model: PyG's ``GraphSAGE`` (``--hidden`` 256, one layer per hop, fan-out
``--num-neighbors`` 15 10 5), DDP, AdamW; ``--batch-size`` 1024 seeds a
rank; trimmed by the batches' per-hop counts unless ``--no-trim``.

**Measured.** A step is the loader's next batch + forward + loss + backward
+ optimizer step (with ``--loader-only``, the next batch moved to the device
alone: the loaders' own time a batch, no model; ``hidden`` and ``trim`` are
left empty in its rows and their note says so). ``--timing`` (the CSV's
``timing`` column):

* ``synchronised`` (default): every step starts at a barrier and ends with
  the training stream synchronised (not a prefetching loader's side
  streams, which sample ahead); its time is the slowest rank's. A loader
  that makes the next batch in the training thread (``prefetch=True``) can
  overlap only GPU work still queued when it is asked for, and here none
  is: this timing shows its batches' cost, not its overlap;
* ``pipelined``: a training loop's own rhythm: one barrier and
  synchronisation before the timed steps and one after, none between
  (the host runs ahead of the GPU as far as the loader lets it); the
  "step time" is the slowest rank's wall time over ``--steps`` steps
  divided by ``--steps``, in both ``step_ms`` and ``step_ms_mean``.

``--rounds R`` runs the variants R times in one process, interleaved (the
order reversed every other round; PyG's loader in the first round only),
a row per variant and round (the ``round`` column), each ratio within its
round; the printout gives the ratio's median and range over the rounds.

Per variant, after
``--warmup`` steps: the median step time over ``--steps`` (>= 30 by
default), the seeds a second over all ranks (all ranks' seeds over the sum
of the step times), the ratio of the partitioned throughput to the
replicated (``vs_replicated``), the peak device memory in the timed steps
(largest rank), printed (not in the CSV): the host's time a step inside
``next(loader)``, the slowest rank's (how long the loader holds the
training thread: a pipelined step's excess over the replicated one is
about its difference) and the partitioned sampler's ops' host time a
batch by part (``DistNeighborSampler.host_seconds``: reads, all-to-all
calls, relabelling; the rest of an op is its launches); for the
partitioned variant the all-to-all traffic per batch from the sampler's
counters over the batches it sampled (exchanges, host
reads of their sizes, bytes sent to and received from the other ranks: the
mean over the ranks and the largest rank's), and, measured in the same run,
the link: the bandwidth of a timed ``all_to_all_single`` of ``--link-mib``
MiB a rank (the bytes that leave a rank over the time, GB/s) and the
latency of a small one (a rank's sizes), so that ``a2a_link_ms`` (the
largest rank's bytes a batch at that bandwidth) and ``a2a_floor_ms`` (plus
the exchanges' latencies) bound the exchanges' share of a step.
"""
import argparse
import datetime
import os
import os.path as osp
import resource
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

from pyg_fusesample.bench.csv_schema import append_rows  # noqa: E402
from pyg_fusesample.environment import device_name, versions  # noqa: E402

COLUMNS = [
    'time', 'device', 'device_name', 'backend', 'torch', 'cuda', 'nccl',
    'world_size', 'graph', 'synthetic', 'scale', 'num_nodes', 'num_edges',
    'num_features', 'fanout', 'batch_size', 'hidden', 'trim', 'variant',
    'cache_rows', 'steps', 'warmup', 'step_ms', 'step_ms_mean',
    'seeds_per_s', 'vs_replicated', 'vs_pyg', 'sampled_edges_per_batch',
    'a2a_exchanges_per_batch', 'a2a_host_reads_per_batch',
    'a2a_sent_bytes_per_batch', 'a2a_max_sent_bytes_per_batch',
    'a2a_received_bytes_per_batch', 'link_mib', 'link_gbps',
    'a2a_latency_us', 'a2a_link_ms', 'a2a_floor_ms', 'peak_mem_mb',
    'held_mb', 'generate_s', 'partition_s', 'load_s', 'timing', 'round',
    'note',
]
# held_mb: what the largest rank holds of the graph on its device: the
# whole graph's x, y and edge_index (replicated), or its part's nbytes()
# plus its cache of remote rows (partitioned). peak_mem_mb: CUDA's
# max_memory_allocated in the timed steps (largest rank); on the CPU the
# process's peak RSS. Bytes per batch: per rank, to / from the other ranks.


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--device', choices=['cuda', 'cpu'], default='cuda',
                   help='cuda: NCCL, GPU LOCAL_RANK a rank; cpu: gloo')
    p.add_argument('--graph', choices=['papers100m', 'products'],
                   default='papers100m')
    p.add_argument('--scale', type=float, default=None,
                   help='node count times the real graph\'s (default: 0.05 '
                        'for papers100m, 0.5 for products)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--variants', nargs='+',
                   choices=['partitioned', 'replicated', 'pyg'],
                   default=['partitioned', 'replicated'])
    p.add_argument('--num-neighbors', type=int, nargs='+',
                   default=[15, 10, 5])
    p.add_argument('--batch-size', type=int, default=1024,
                   help='seeds a batch a rank')
    p.add_argument('--hidden', type=int, default=256)
    p.add_argument('--lr', type=float, default=0.001)
    p.add_argument('--trim', action=argparse.BooleanOptionalAction,
                   default=True, help="call GraphSAGE with the batches' "
                                      "per-hop counts (trim_to_layer)")
    p.add_argument('--cache-rows', type=int, default=0,
                   help='partitioned: rows of hot remote nodes a rank keeps')
    p.add_argument('--prefetch', choices=['default', 'false', 'true',
                                          'thread'], default='default',
                   help="partitioned: FusedDistNeighborLoader's prefetch "
                        "(default: the loader's, True on a GPU: one batch "
                        "ahead on a side stream; 'thread': background "
                        "threads, refused across GPUs)")
    p.add_argument('--batches-per-call', type=int, default=None,
                   help="partitioned: FusedDistNeighborLoader's "
                        "batches_per_call (batches sampled in one call; "
                        "default: the loader's, 8 on a GPU); above 1 a "
                        "step's time is the mean (every B-th step samples B "
                        "batches: the median would hide it)")
    p.add_argument('--loader-only', action='store_true',
                   help='time the loaders alone: a step is the next batch '
                        '(no model, no optimizer)')
    p.add_argument('--timing', choices=['synchronised', 'pipelined'],
                   default='synchronised',
                   help='synchronised: each step between a barrier and its '
                        'stream synchronised; pipelined: only around all '
                        'the timed steps')
    p.add_argument('--rounds', type=int, default=1,
                   help='run the variants this many times, interleaved (the '
                        'order reversed every other round; pyg in the first '
                        'only): a row per variant and round, each ratio '
                        'within its round')
    p.add_argument('--steps', type=int, default=30)
    p.add_argument('--warmup', type=int, default=5)
    p.add_argument('--link-mib', type=float, default=None,
                   help='MiB a rank sends in the timed all-to-all (default: '
                        '256 on GPUs, 4 on the CPU)')
    p.add_argument('--partition-dir', default=None,
                   help='where rank 0 writes the parts (kept and reused); '
                        'default: a temporary folder, removed at the end')
    p.add_argument('--timeout', type=float, default=1800.0,
                   help='seconds a collective may wait (rank 0 partitions '
                        'while the others wait)')
    p.add_argument('--out', default=None, help='CSV to append rows to')
    args = p.parse_args(argv)
    if args.scale is None:
        args.scale = 0.05 if args.graph == 'papers100m' else 0.5
    if args.link_mib is None:
        args.link_mib = 256.0 if args.device == 'cuda' else 4.0
    if args.steps < 1 or args.warmup < 0:
        p.error('--steps must be >= 1 and --warmup >= 0')
    if args.rounds < 1:
        p.error('--rounds must be >= 1')
    return args


# ------------------------------------------------------------------ setup
def setup(args):
    rank, local = (int(os.environ.get(k, 0)) for k in ('RANK',
                                                       'LOCAL_RANK'))
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.device == 'cuda':
        if not torch.cuda.is_available():
            raise SystemExit('dist_throughput.py: --device cuda, but no '
                             'CUDA GPU is visible (--device cpu: gloo)')
        if local >= torch.cuda.device_count():
            raise SystemExit(f'dist_throughput.py: local rank {local} has '
                             f'no GPU of its own')
        device = torch.device('cuda', local)
        torch.cuda.set_device(device)
        dist.init_process_group('nccl', timeout=timeout, device_id=device)
    else:
        device = torch.device('cpu')
        dist.init_process_group('gloo', timeout=timeout)
    return rank, device


def host_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(
        os, 'sched_getaffinity') else (os.cpu_count() or 1)


def cores_a_rank() -> int:
    local_world = int(os.environ.get('LOCAL_WORLD_SIZE', 1))
    return max(1, host_cores() // local_world)


def generate(args):
    # The SYNTHETIC graph, the same on every rank (seeded; checked by the
    # caller), generated with this rank's share of the cores.
    from pyg_fusesample.datasets import papers100m_like, products_like
    make = papers100m_like if args.graph == 'papers100m' else products_like
    threads = torch.get_num_threads()
    torch.set_num_threads(cores_a_rank())
    try:
        return make(scale=args.scale, seed=args.seed)
    finally:
        torch.set_num_threads(threads)


def fingerprint(data) -> tuple:
    ei = data.edge_index
    return (data.num_nodes, ei.size(1), int(ei[0, ::997].sum()),
            int(ei[1, ::991].sum()), float(data.x[::4099].double().sum()),
            int(data.train_mask.sum()))


def write_parts(args, data, world: int, rank: int):
    # Rank 0 writes the parts (edges in chunks) while the others wait;
    # returns (the folder, seconds, whether it is temporary).
    from pyg_fusesample.distributed import write_partitions
    seconds, temporary = 0.0, args.partition_dir is None
    if rank == 0:
        if temporary:
            root = osp.join(tempfile.mkdtemp(prefix='dist_throughput_'),
                            'parts')
        else:
            root = osp.join(args.partition_dir,
                            f'{args.graph}_scale{args.scale:g}_seed'
                            f'{args.seed}_parts{world}')
        if not osp.exists(osp.join(root, 'META.json')):
            if osp.exists(root):  # (a write cut short)
                shutil.rmtree(root)
            t0 = time.perf_counter()
            ei, chunk = data.edge_index, 1 << 24
            edges = ((ei[0, s:s + chunk], ei[1, s:s + chunk])
                     for s in range(0, ei.size(1), chunk))
            # (the host's cores but one a waiting rank: the others wait)
            threads = torch.get_num_threads()
            torch.set_num_threads(max(1, host_cores() - world + 1))
            try:
                write_partitions(root, data.num_nodes, edges, world,
                                 assignment='hash', node_feats=data.x,
                                 labels=data.y)
            finally:
                torch.set_num_threads(threads)
            seconds = time.perf_counter() - t0
        box = [root]
    else:
        box = [None]
    dist.broadcast_object_list(box, src=0)
    return box[0], seconds, temporary


# ------------------------------------------------------------------ link
def sync(device, stream_only: bool = False):
    # (stream_only: the training stream's work, not a loader's side
    # streams, whose sampling runs ahead of the step)
    if device.type == 'cuda':
        if stream_only:
            torch.cuda.current_stream(device).synchronize()
        else:
            torch.cuda.synchronize(device)


def timed_collective(fn, device, repeats: int, warmup: int = 2) -> float:
    # Median over `repeats` of the slowest rank's time (s) of fn, each call
    # started at a barrier and ended with the device synchronised.
    times = []
    for i in range(warmup + repeats):
        dist.barrier()
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    worst = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(worst, dist.ReduceOp.MAX)
    return statistics.median(worst.tolist())


def measure_link(args, device, world: int) -> dict:
    # Bandwidth: an all-to-all of --link-mib MiB a rank (equal splits, its
    # own split included), the bytes that leave a rank over the time.
    # Latency: an all-to-all of one int64 per rank (an exchange's sizes).
    per = max(1, int(args.link_mib * 2**20) // (4 * world))  # floats a peer
    send = torch.ones(per * world, dtype=torch.float32, device=device)
    recv = torch.empty_like(send)
    seconds = timed_collective(lambda: dist.all_to_all_single(recv, send),
                               device, repeats=5)
    small = torch.ones(world, dtype=torch.long, device=device)
    small_recv = torch.empty_like(small)
    latency = timed_collective(
        lambda: dist.all_to_all_single(small_recv, small), device,
        repeats=50, warmup=5)
    remote = 4 * per * (world - 1)
    return dict(link_mib=f'{4 * per * world / 2**20:.1f}',
                link_gbps=remote / seconds / 1e9 if world > 1 else 0.0,
                latency_s=latency)


# ------------------------------------------------------------------ steps
def build_model(args, in_channels: int, num_classes: int, device):
    # (None, None) with --loader-only: train_steps then times the batches
    if args.loader_only:
        return None, None
    from torch.nn.parallel import DistributedDataParallel
    from torch_geometric.nn.models import GraphSAGE
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = GraphSAGE(in_channels, args.hidden, len(args.num_neighbors),
                      num_classes, dropout=0.5).to(device)
    torch.manual_seed(args.seed + 1 + dist.get_rank())  # each one's dropout
    model = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == 'cuda' else None)
    return model, torch.optim.AdamW(model.parameters(), lr=args.lr)


class Forever:
    """The loader's batches, epoch after epoch; :meth:`close` ends the epoch
    under way (a prefetching loader's threads stop, on every rank after
    the same batch: before the process group goes)."""
    def __init__(self, loader):
        self.loader, self.it = loader, None

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            if self.it is None:
                self.it = iter(self.loader)
            try:
                return next(self.it)
            except StopIteration:
                self.it = None

    def close(self):
        if hasattr(self.it, 'close'):
            self.it.close()
        self.it = None


def train_steps(args, loader, model, optimizer, device, before_timed=None):
    # warm-up, then the timed steps; returns (median ms, mean ms, seeds a
    # second over all ranks, sampled edges a batch (mean over this rank's),
    # peak memory MiB (largest rank), the host's ms a step in next(loader)
    # (slowest rank): how long the loader holds the training thread).
    batches = Forever(loader)
    if model is not None:
        model.train()
    times, seeds, edges = [], 0, 0
    held = 0.0  # (host seconds in next(loader) over the timed steps)
    pipelined = args.timing == 'pipelined'
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            if before_timed is not None:
                before_timed()
            if device.type == 'cuda':
                torch.cuda.reset_peak_memory_stats(device)
        if not pipelined or i == args.warmup:  # (pipelined: timed as one)
            dist.barrier()
            sync(device, stream_only=True)
            t0 = time.perf_counter()
        t_next = time.perf_counter()
        batch = next(batches).to(device)
        if i >= args.warmup:
            held += time.perf_counter() - t_next
        n = batch.batch_size
        if model is not None:
            kwargs = dict(num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                          num_sampled_edges_per_hop=batch.num_sampled_edges) \
                if args.trim else {}
            optimizer.zero_grad(set_to_none=True)
            out = model(batch.x, batch.edge_index, **kwargs)[:n]
            loss = F.cross_entropy(out, batch.y[:n])
            loss.backward()
            optimizer.step()
        if not pipelined:
            sync(device, stream_only=True)
        if i >= args.warmup:
            if not pipelined:
                times.append(time.perf_counter() - t0)
            seeds += n
            edges += int(batch.edge_index.size(1))
    if pipelined:  # every timed step: the wall time over them, evenly
        sync(device, stream_only=True)
        times = [(time.perf_counter() - t0) / args.steps] * args.steps
    batches.close()
    peak = torch.cuda.max_memory_allocated(device) / 2**20 \
        if device.type == 'cuda' else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worst = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(worst, dist.ReduceOp.MAX)
    all_seeds = torch.tensor([seeds], dtype=torch.float64, device=device)
    dist.all_reduce(all_seeds)
    top = torch.tensor([peak, held / args.steps], dtype=torch.float64,
                       device=device)
    dist.all_reduce(top, dist.ReduceOp.MAX)
    peak, held = top.tolist()
    worst = worst.tolist()
    return dict(step_ms=statistics.median(worst) * 1e3,
                step_ms_mean=statistics.fmean(worst) * 1e3,
                seeds_per_s=float(all_seeds) / sum(worst),
                sampled_edges_per_batch=edges / args.steps,
                peak_mem_mb=peak, loader_host_ms=held * 1e3)


def mib(nbytes) -> float:
    return nbytes / 2**20


def replicated(args, data, device, rank: int, world: int) -> dict:
    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seed, rank_seeds
    t0 = time.perf_counter()
    whole = Data(x=data.x, y=data.y, edge_index=data.edge_index,
                 num_nodes=data.num_nodes).to(device)
    load = time.perf_counter() - t0
    held = sum(t.numel() * t.element_size()
               for t in (whole.x, whole.y, whole.edge_index))
    shard = rank_seeds(data.train_mask, rank, world, seed=args.seed,
                       drop_last=True)
    loader = FusedNeighborLoader(
        whole, args.num_neighbors, input_nodes=shard,
        batch_size=args.batch_size, shuffle=True, drop_last=True,
        seed=rank_seed(args.seed, rank))
    model, optimizer = build_model(args, data.x.size(1),
                                   int(data.y.max()) + 1, device)
    out = train_steps(args, loader, model, optimizer, device)
    out.update(held_mb=mib(held), load_s=load,
               note="FusedNeighborLoader's defaults (prefetch='thread' on "
                    "a GPU)")
    return out


def _pyg_warn_shim():
    # PyG 2.8's torch_geometric.distributed (deprecated since 2.7) calls
    # warnings.warn(..., stack_level=2), which raises TypeError: its
    # loaders cannot be made at all. The baseline runs with the keyword
    # passed on as warnings' own (stacklevel), the rest of PyG's code as
    # it is.
    import warnings

    import torch_geometric.distributed.dist_neighbor_loader as loader_mod
    import torch_geometric.distributed.dist_neighbor_sampler as sampler_mod

    def warn(*args, stack_level=None, **kwargs):
        if stack_level is not None:
            kwargs.setdefault('stacklevel', stack_level + 1)
        warnings.warn(*args, **kwargs)
    for mod in (loader_mod, sampler_mod):
        if getattr(mod, 'warn', None) is warnings.warn:
            mod.warn = warn


def _pyg_loader(args, feat_store, graph_store, train, rank, world, port,
                ctx):
    from torch_geometric.distributed import DistNeighborLoader

    from pyg_fusesample.loader import rank_seeds
    return DistNeighborLoader(
        (feat_store, graph_store), num_neighbors=args.num_neighbors,
        input_nodes=train[rank_seeds(torch.arange(train.numel()), rank,
                                     world, shuffle=False, drop_last=True)],
        batch_size=args.batch_size, shuffle=True, drop_last=True,
        master_addr='127.0.0.1', master_port=port, current_ctx=ctx,
        num_workers=0, concurrency=4, async_sampling=True)


def pyg_dist(args, data, root: str, device, rank: int, world: int) -> dict:
    # PyG's DistNeighborLoader (CPU sampling over torch RPC, pyg-lib's
    # dist_neighbor_sample) on the same parts (PyG's format), this rank's
    # share of the seeds, batches moved to the GPU; labels from the whole
    # graph's (PyG's example keeps them apart, label.pt).
    import torch_geometric.typing as pyg_typing
    from torch_geometric.distributed import (DistContext, LocalFeatureStore,
                                             LocalGraphStore)
    from torch_geometric.distributed.partition import load_partition_info
    if not pyg_typing.WITH_PYG_LIB:
        raise SystemExit("dist_throughput.py: variant 'pyg' needs pyg-lib "
                         "(PyG's DistNeighborLoader samples with it): "
                         "benchmarks/device/build_pyg_lib.sh builds it")
    _pyg_warn_shim()
    t0 = time.perf_counter()
    graph_store = LocalGraphStore.from_partition(root, pid=rank)
    feat_store = LocalFeatureStore.from_partition(root, pid=rank)
    meta, num_parts, part_idx, node_pb, edge_pb = load_partition_info(
        root, rank)
    for store in (graph_store, feat_store):
        store.partition_idx, store.num_partitions = part_idx, num_parts
        store.meta = meta
    graph_store.node_pb, graph_store.edge_pb = node_pb, edge_pb
    feat_store.node_feat_pb, feat_store.edge_feat_pb = node_pb, edge_pb
    feat_store.labels = data.y
    load = time.perf_counter() - t0
    # (RPC on a port of its own, chosen by rank 0)
    box = [None]
    if rank == 0:
        import socket
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            box = [sock.getsockname()[1]]
    dist.broadcast_object_list(box, src=0)
    ctx = DistContext(rank=rank, global_rank=rank, world_size=world,
                      global_world_size=world, group_name='pyg-dist')
    train = data.train_mask.nonzero().view(-1)
    # (under torchrun every rank would expect torchrun's agent to host the
    # RPC rendezvous store on that port: rank 0 hosts it instead)
    agent_store = os.environ.pop('TORCHELASTIC_USE_AGENT_STORE', None)
    try:
        loader = _pyg_loader(args, feat_store, graph_store, train, rank,
                             world, box[0], ctx)
    finally:
        if agent_store is not None:
            os.environ['TORCHELASTIC_USE_AGENT_STORE'] = agent_store
    model, optimizer = build_model(args, data.x.size(1),
                                   int(data.y.max()) + 1, device)
    out = train_steps(args, loader, model, optimizer, device)
    # (the part's edges and node features, as PyG's stores hold them)
    held = sum(t.numel() * t.element_size()
               for attr in graph_store.get_all_edge_attrs()
               for t in graph_store.get_edge_index(attr)) + sum(
        t.numel() * t.element_size()
        for t in map(feat_store.get_tensor,
                     feat_store.get_all_tensor_attrs()))
    out.update(held_mb=mib(held), load_s=load,
               note="PyG's DistNeighborLoader (CPU sampling over RPC, "
                    "pyg-lib), batches moved to the GPU")
    return out


PREFETCH = {'default': None, 'false': False, 'true': True,
            'thread': 'thread'}


def partitioned(args, data, root: str, device, rank: int,
                world: int) -> dict:
    from pyg_fusesample.distributed import (FusedDistNeighborLoader,
                                            read_partition)
    t0 = time.perf_counter()
    part = read_partition(root, rank, with_edge_map=False, device=device)
    sync(device)
    load = time.perf_counter() - t0
    loader = FusedDistNeighborLoader(
        part, args.num_neighbors, input_nodes=data.train_mask,
        batch_size=args.batch_size, shuffle=True, drop_last=True,
        seed=args.seed, cache_rows=args.cache_rows,
        prefetch=PREFETCH[args.prefetch],
        batches_per_call=args.batches_per_call)
    sampler = loader.sampler
    model, optimizer = build_model(args, data.x.size(1),
                                   int(data.y.max()) + 1, device)
    out = train_steps(args, loader, model, optimizer, device,
                      before_timed=sampler.reset_counters)
    B = loader.batches_per_call
    if B > 1:
        out['step_ms'] = out['step_ms_mean']
    # (per batch sampled since the reset: a prefetching loader's threads
    # make batches ahead of the steps)
    made = max(sampler.batches_sampled, 1)
    mine = [sampler.bytes_sent / made, sampler.bytes_received / made,
            sampler.exchanges / made, sampler.host_reads / made,
            mib(sum(part.nbytes().values()) + sampler.cache_nbytes()),
            {k: v / made * 1e3 for k, v in sampler.host_seconds.items()}]
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    sent, received, exchanges, reads, held, host = zip(*everyone)
    # (printed: the ops' host ms a batch by part, the slowest rank's each)
    out['ops_host_ms'] = {k: max(h[k] for h in host) for k in host[0]}
    out.update(a2a_sent_bytes_per_batch=statistics.fmean(sent),
               a2a_max_sent_bytes_per_batch=max(sent),
               a2a_received_bytes_per_batch=statistics.fmean(received),
               a2a_exchanges_per_batch=max(exchanges),
               a2a_host_reads_per_batch=max(reads), held_mb=max(held),
               load_s=load, note=f'FusedDistNeighborLoader, hash parts, '
                                 f'prefetch={loader.prefetch!r}' + (
                   f', batches_per_call={B} (step: the mean)'
                   if B > 1 else '') + (
                   ' (2 threads a rank on a GPU)'
                   if loader.prefetch == 'thread' else ''))
    del loader, sampler, part
    return out


def nccl_version() -> str:
    try:
        return '.'.join(map(str, torch.cuda.nccl.version()))
    except Exception:  # (a CPU build)
        return ''


# ------------------------------------------------------------------ main
def main(argv=None) -> int:
    args = parse_args(argv)
    rank, device = setup(args)
    try:
        return run(args, rank, device)
    finally:
        dist.destroy_process_group()


def run(args, rank: int, device) -> int:
    world = dist.get_world_size()

    def say(msg):
        if rank == 0:
            print(f'[SYNTHETIC {args.graph}_like scale {args.scale:g}] '
                  f'{msg}', flush=True)
    t0 = time.perf_counter()
    data = generate(args)
    generated = time.perf_counter() - t0
    prints = [None] * world
    dist.all_gather_object(prints, fingerprint(data))
    if len(set(prints)) != 1:
        raise SystemExit(f'dist_throughput.py: the ranks generated '
                         f'different graphs: {prints}')
    say(f'{data.num_nodes:,} nodes, {data.edge_index.size(1):,} edges, '
        f'{int(data.train_mask.sum()):,} training seeds; generated in '
        f'{generated:.1f} s, {world} ranks ({device.type}, '
        f'{dist.get_backend()})')
    root, part_s, temporary = (None, 0.0, False)
    if {'partitioned', 'pyg'} & set(args.variants):
        root, part_s, temporary = write_parts(args, data, world, rank)
        say(f'{world} parts in {root} ({part_s:.1f} s)')
    link = measure_link(args, device, world)
    say(f"link: {link['link_gbps']:.2f} GB/s a rank (all-to-all of "
        f"{link['link_mib']} MiB), {link['latency_s'] * 1e6:.1f} us a small "
        f"all-to-all")
    rounds = []  # per round: {variant: its results}
    try:
        for k in range(args.rounds):
            # (interleaved: a host's drift or a variant's place in the run
            # shows as a spread over the rounds, not as a ratio; PyG's
            # loader once, in the first: its RPC is started once a process)
            order = [v for v in args.variants if k == 0 or v != 'pyg']
            results = {}
            for variant in (order if k % 2 == 0 else order[::-1]):
                results[variant] = run_one(args, variant, data, root, device,
                                           rank, world)
                r = results[variant]
                what = 'batch, loader only' if args.loader_only else 'step'
                how = (f'median of {args.steps}'
                       if args.timing == 'synchronised'
                       else f'{args.steps} pipelined')
                say(f"{variant}: {r['step_ms']:.2f} ms a {what} ({how}), "
                    f"{r['seeds_per_s']:,.0f} seeds/s"
                    + (f' (round {k + 1})' if args.rounds > 1 else '')
                    + f"; next(loader) held the training thread "
                    f"{r['loader_host_ms']:.2f} ms a step (slowest rank)")
                if 'ops_host_ms' in r:
                    h = r['ops_host_ms']
                    say(f"  its ops' host time a batch (slowest rank): "
                        f"hop op {h['dist_sample_hops']:.2f} ms, feature op "
                        f"{h['dist_fetch_rows']:.2f} ms; in them: reads "
                        f"{h['reads']:.2f} ms, all-to-all calls "
                        f"{h['exchanges']:.2f} ms, relabelling "
                        f"{h['relabelling']:.2f} ms")
            rounds.append(results)
    finally:
        dist.barrier()
        if rank == 0 and temporary and root is not None:
            shutil.rmtree(osp.dirname(root), ignore_errors=True)
    rows = [row for k, results in enumerate(rounds)
            for row in round_rows(args, k, results, rounds[0].get('pyg'),
                                  data, device, world, link, generated,
                                  part_s)]
    if rank == 0:
        summarise(rounds, say)
        if args.out:
            append_rows(args.out, rows, columns=COLUMNS)
    return 0


def run_one(args, variant: str, data, root, device, rank: int,
            world: int) -> dict:
    run_variant = {'partitioned': partitioned, 'pyg': pyg_dist}.get(variant)
    out = (run_variant(args, data, root, device, rank, world)
           if run_variant is not None else
           replicated(args, data, device, rank, world))
    if device.type == 'cuda':
        torch.cuda.empty_cache()
    return out


def round_rows(args, k: int, results: dict, pyg, data, device, world: int,
               link: dict, generated: float, part_s: float) -> list:
    # The CSV rows of round k: one a variant, its ratios within the round
    # (vs_pyg against the first round's PyG loader)
    rows = []
    base = results.get('replicated')
    for variant in [v for v in args.variants if v in results]:
        r = results[variant]
        row = dict(
            time=time.strftime('%Y-%m-%d %H:%M:%S'), device=device.type,
            device_name=device_name(device), backend=dist.get_backend(),
            nccl=nccl_version(), world_size=world,
            graph=f'{args.graph}_like', synthetic=True, scale=args.scale,
            num_nodes=data.num_nodes, num_edges=data.edge_index.size(1),
            num_features=data.x.size(1),
            fanout='-'.join(map(str, args.num_neighbors)),
            batch_size=args.batch_size,
            hidden='' if args.loader_only else args.hidden,
            trim='' if args.loader_only else args.trim,
            variant=variant,
            cache_rows=args.cache_rows if variant == 'partitioned' else '',
            steps=args.steps, warmup=args.warmup, timing=args.timing,
            round=k,
            link_mib=link['link_mib'], link_gbps=f"{link['link_gbps']:.3f}",
            a2a_latency_us=f"{link['latency_s'] * 1e6:.1f}",
            generate_s=f'{generated:.1f}',
            partition_s=f'{part_s:.1f}' if variant != 'replicated' else '',
            **versions())
        for key in ('step_ms', 'step_ms_mean', 'peak_mem_mb', 'held_mb',
                    'load_s'):
            row[key] = f'{r[key]:.3f}'
        row['seeds_per_s'] = f"{r['seeds_per_s']:.1f}"
        row['sampled_edges_per_batch'] = f"{r['sampled_edges_per_batch']:.1f}"
        row['note'] = ('loader only (no model): ' if args.loader_only
                       else '') + r['note']
        if base is not None:
            row['vs_replicated'] = f"{r['seeds_per_s'] / base['seeds_per_s']:.4f}"
        if pyg is not None:  # (throughput over PyG's DistNeighborLoader's)
            row['vs_pyg'] = f"{r['seeds_per_s'] / pyg['seeds_per_s']:.4f}"
        if variant == 'partitioned':
            for key in ('a2a_sent_bytes_per_batch',
                        'a2a_max_sent_bytes_per_batch',
                        'a2a_received_bytes_per_batch',
                        'a2a_exchanges_per_batch',
                        'a2a_host_reads_per_batch'):
                row[key] = f'{r[key]:.1f}'
            if link['link_gbps'] > 0:
                link_ms = r['a2a_max_sent_bytes_per_batch'] / (
                    link['link_gbps'] * 1e9) * 1e3
                row['a2a_link_ms'] = f'{link_ms:.4f}'
                row['a2a_floor_ms'] = (
                    f"{link_ms + r['a2a_exchanges_per_batch'] * link['latency_s'] * 1e3:.4f}")
        rows.append(row)
    return rows


def summarise(rounds: list, say) -> None:
    # (rank 0's printout of the ratios: the rounds' median and range)
    def spread(values):
        text = f'{statistics.median(values):.3f}'
        return text if len(values) == 1 else \
            f'{text} (median of {len(values)} rounds, ' \
            f'{min(values):.3f}-{max(values):.3f})'
    first = rounds[0]
    if 'pyg' in first and 'partitioned' in first:
        say(f"partitioned / PyG's DistNeighborLoader throughput: "
            f"{first['partitioned']['seeds_per_s'] / first['pyg']['seeds_per_s']:.2f}")
    vs = [r['partitioned']['seeds_per_s'] / r['replicated']['seeds_per_s']
          for r in rounds if 'partitioned' in r and 'replicated' in r]
    if vs:
        p = first['partitioned']
        say(f"partitioned / replicated throughput: {spread(vs)}; "
            f"all-to-all {p['a2a_max_sent_bytes_per_batch'] / 2**20:.2f}"
            f" MiB a batch (largest rank) in "
            f"{p['a2a_exchanges_per_batch']:.0f} exchanges")


if __name__ == '__main__':
    raise SystemExit(main())
