r"""Neighbour sampling over a partitioned graph: each rank holds one part
(:func:`~pyg_fusesample.distributed.read_partition`), and a batch's frontier
nodes are sampled by the ranks that own them, all-to-all exchanges over
``torch.distributed`` every hop.

A batch comes out as :func:`~pyg_fusesample.ops.neighbor_sample` would give
it on the whole graph with the same seeds and RNG seed, whatever the
partitioning: the requesting rank keeps the batch's node list (seeds, then
each hop's new nodes in order of first appearance) and sends every frontier
node with its position in that list; the owner draws its in-edges under the
key (RNG seed, hop, position) with :func:`~pyg_fusesample.ops.keyed_draws`
(the single-process op's key and draws, on the same in-edge order: the
partition's in-edges of a node are in edge id order, as the whole graph's
CSC holds them); the requester puts the draws back in frontier order and
deduplicates them as the op does.

Exchanges (all-to-alls), per hop three: the request sizes; the requests
((node, position) pairs, 16 bytes a frontier node, 24 with the root seed's
time); the replies, padded: a request's draw count, then its sources and
edge ids in ``K`` slots each, ``K`` the hop's fan-outs summed (``8 (1 + 2
K)`` bytes a frontier node; their sizes are the requests', so they need no
exchange of sizes). A hop with a fan-out of ``-1`` has no bound ``K``: it
sends the draw counts (8 bytes a frontier node) and then the draws
((source, edge id), 16 bytes a sampled edge), four exchanges. Per feature
gather (:meth:`DistNeighborSampler.gather_all`): the ids' sizes, the ids (8
bytes a node), then one of rows per feature (sizes known). Every rank
counts the bytes it sends to and receives from the others (``bytes_sent``,
``bytes_received``, per peer ``bytes_sent_to`` /
``bytes_received_from``; a rank's rows to itself do not cross a link and
are not counted) and the all-to-alls (``exchanges``).

A hop's bookkeeping between the exchanges (the requests grouped by owner,
the replies padded and put back in frontier order, or for a fan-out of -1
the draws' sizes both ways and the draws put back, the relabelling) runs as
C++ ops (``fusesample::dist_requests``, ``dist_pad_replies``,
``dist_unpad_replies``, ``dist_reply_sizes``, ``dist_frontier_order``,
``dist_relabel``: kernels/sampler/dist_hop.cpp), composites of the
device's ATen kernels called from C++ (fewer Python dispatches than the
Python they replaced); the padding, its undoing and the relabelling have
CUDA kernels of their own. A
batch's hops, exchanges included, are one op
(``fusesample::dist_sample_hops``: kernels/sampler/dist_sample_hops.cpp),
and so is a feature gather (``fusesample::dist_fetch_rows``), the process
group's all-to-all called from C++ (kernels/sampler/dist_common.h): they
run without the GIL, so a loader thread sampling ahead does not hold it
from the training step.

Host reads: an all-to-all takes its split sizes as host integers, so where
the receivers do not know them yet, the sizes are read back to the host:
two reads per hop (the request sizes; then the number of draws received,
or for a fan-out of -1 the draws' sizes both ways, derived from the draw
counts) and one per gather (the ids' sizes), counted in ``host_reads``. On
a GPU each one waits for the device. The other synchronisations of a hop:
the deduplication's (the number of new nodes: one) and
:func:`~pyg_fusesample.ops.keyed_draws`' own (sizing its output); the check
that every requested node is owned here is read with the hop's second
read.

Devices: the sampler runs where its part is (:meth:`~pyg_fusesample.
distributed.Partition.to`, ``read_partition(..., device=...)``): on the CPU
over ``gloo``, or on a GPU over ``nccl``, one GPU per rank (the process's
current CUDA device). Every tensor it makes is made there, the exchanges
send that device's tensors (NCCL: CUDA tensors, the sizes included; gloo:
CPU tensors), and the batches come out there. Node features may stay in
pinned host memory behind a part on a GPU (``part.to(device,
pin_features=True)``): the GPU reads the rows it sends in place. A part on
a GPU under a gloo group, or on the CPU under an NCCL group, is refused.

Every call is collective: all ranks of the group call :meth:`sample` (and
:meth:`gather`) the same number of times, in the same order, with batches
of any size (an empty one included); a loader that samples several batches
a call (``batches_per_call``) does so on every rank alike. A rank that
dies, or does not answer within the process group's timeout
(``init_process_group(timeout=...)``), ends the others' calls with a
``RuntimeError`` saying so, never a hang (gloo; under NCCL torch's watchdog
ends the waiting processes at the timeout, by default by aborting them:
``TORCH_NCCL_ASYNC_ERROR_HANDLING``).

This version samples homogeneous graphs, uniformly or by edge weight,
disjoint or not, with the time rule (``edge_time``: edge-level times, e.g.
those ``read_partition`` reads from PyG's files), and can keep the rows of
hot remote nodes (``cache_rows``); heterogeneous partitions too
(typed_part.py), with every rule and the cache. ``time_attr`` takes the
partition's own times (:func:`partition_times`).
"""
import copy
import threading
from typing import Dict, List, NamedTuple, Optional, Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from ..sampler.graph_store import CSCGraph
from ..sampler.rule_graph import (temporal_csc, weighted_csc,
                                  weighted_temporal_csc)
from ..sampler.sampling_rule import check_weight, every_node_time
from ..sparse.edge_index_checks import check_ids_in_range
from .partition_files import PartCSC, Partition
from .typed_part import TypedPart, typed_fanouts, typed_part

# (a batch's hops: kernels/sampler/dist_sample_hops.cpp, over dist_hop.cpp)
_ops = torch.ops.fusesample
# (the refusal of a request for a node not owned here, C++'s and Python's)
_FOREIGN = 'was asked for nodes it does not own'


def _group_name(group) -> str:
    # (the name a C++ op resolves the process group by)
    return (dist.group.WORLD if group is None else group).group_name


class DistSample(NamedTuple):
    r"""A batch in global ids, as :class:`~pyg_fusesample.ops.
    NeighborSampleOutput` gives it: ``node`` (seeds first, then each hop's
    new nodes), ``row`` / ``col`` (local ids of source / target, grouped by
    hop, targets in node order, draws in draw order), ``edge`` (global edge
    ids), per-hop counts. Tensors on the sampler's device."""
    node: Tensor
    row: Tensor
    col: Tensor
    edge: Tensor
    num_sampled_nodes: List[int]
    num_sampled_edges: List[int]
    batch: Optional[Tensor] = None  # seed index of each node (disjoint)


# (the parts of the sampler's ops' host time its counters keep, seconds:
# host_seconds)
HOST_PARTS = ('reads', 'exchanges', 'relabelling', 'dist_sample_hops',
              'dist_fetch_rows')


class _Traffic:
    # A sampler's counters, shared by its lanes (threads: under a lock).
    def __init__(self, world_size: int):
        self.lock = threading.Lock()
        self.world_size = world_size
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.sent_to = [0] * self.world_size
            self.received_from = [0] * self.world_size
            self.exchanges = self.host_reads = self.remote_rows = 0
            self.samples = 0
            self.host_seconds = dict.fromkeys(HOST_PARTS, 0.0)

    def count(self, rank: int, row_bytes: int, out_splits: List[int],
              in_splits: List[int]) -> None:
        with self.lock:
            self.exchanges += 1
            for r in range(self.world_size):
                if r != rank:
                    self.sent_to[r] += out_splits[r] * row_bytes
                    self.received_from[r] += in_splits[r] * row_bytes

    def add(self, host_reads: int = 0, remote_rows: int = 0,
            samples: int = 0, host_seconds: Sequence[float] = (),
            op: str = '') -> None:
        # (host_seconds: an op's [reads, all-to-alls, relabelling, all],
        # Exchanges::host_seconds; `op` names it for its total)
        with self.lock:
            self.host_reads += host_reads
            self.remote_rows += remote_rows
            self.samples += samples
            if host_seconds:
                reads, calls, relabel, total = host_seconds
                h = self.host_seconds
                h['reads'] += reads
                h['exchanges'] += calls
                h['relabelling'] += relabel
                h[op] += total


class DistNeighborSampler:
    r"""Samples batches from the partition :obj:`part` held by this rank
    (see the module: the result is the whole graph's, for any partition),
    on the part's device: the CPU under a ``gloo`` group, this rank's GPU
    under an ``nccl`` group.

    Args:
        part (Partition): this rank's part (``part.part_id`` must be the
            rank in :obj:`group`, ``part.num_parts`` its size), on the CPU
            or on this process's current GPU (:meth:`Partition.to`), node
            features there too or in pinned host memory (GPU only).
        num_neighbors (List[int] or Dict[EdgeType, List[int]]): fan-out
            per hop (``-1``: all in-edges); for a heterogeneous part one
            list for every edge type or a dict edge type -> list. A
            heterogeneous part's seeds and batches are in its one id space
            (:class:`~pyg_fusesample.distributed.typed_part.TypedPart`).
        replace (bool): draw with replacement.
        edge_weight (bool): draw in-edges by weight, the partition's
            ``edge_attr`` (one finite non-negative weight per edge; zero:
            never drawn), as ``FusedNeighborLoader(weight_attr=...)`` draws
            by the whole graph's.
        disjoint (bool): each seed its own subtree (nodes deduplicated per
            seed, ``batch`` says whose), as ``disjoint=True`` samples.
        edge_time (Tensor, optional): the times (int64) of this part's
            in-edges, in the order of ``part.csc[None]`` (a partition of
            PyG's with edge-level ``edge_time``: ``part.csc[None].edge_time``;
            or the whole graph's edge times at ``part.csc[None].edge_id``):
            temporal
            sampling, as ``FusedNeighborLoader(time_attr=...)`` samples on
            the whole graph: a node draws only from in-edges no later than
            its root seed's time (:meth:`sample`'s ``seed_time``); needs
            :obj:`disjoint`.
        temporal_strategy (str): ``'uniform'`` or ``'last'`` (the latest
            ``k`` admitted in-edges), with :obj:`edge_time`.
        cache_rows (int): keep the feature rows (every node feature of the
            part) of this many remote nodes on this rank, fetched once here
            (collective), and serve :meth:`gather` from them: the remote
            nodes that most of this part's in-edges come from (a node turns
            up in batches about as often as it is an in-edge's source).
            The same value on every rank (checked). Default: ``0``, none.
        group: the process group (default: the world).
        time_attr (str, optional): temporal sampling by the partition's
            own times instead of :obj:`edge_time` (:func:`partition_times`:
            ``'time'`` node-level, ``'edge_time'`` edge-level); needs
            :obj:`disjoint`. Node-level times are kept as
            :attr:`node_time` (the seeds' default times).

    Counters (from the end of construction, the cache's own fetch not
    counted; :meth:`reset_counters` zeroes them): ``bytes_sent`` /
    ``bytes_received`` (to / from the other ranks, sizes included),
    ``bytes_sent_to[r]`` / ``bytes_received_from[r]`` per peer,
    ``exchanges`` (all-to-alls), ``host_reads`` (exchange sizes read back
    to the host), ``remote_rows_fetched`` (rows :meth:`gather` received
    from other ranks), ``batches_sampled`` (:meth:`sample` calls done),
    ``host_seconds`` (where the ops' host time went); a :meth:`lane`
    shares them.
    """
    def __init__(self, part: Partition, num_neighbors: Sequence[int],
                 replace: bool = False, edge_weight: bool = False,
                 disjoint: bool = False, edge_time: Optional[Tensor] = None,
                 temporal_strategy: str = 'uniform', cache_rows: int = 0,
                 group=None, time_attr: Optional[str] = None):
        if not dist.is_initialized():
            raise RuntimeError("DistNeighborSampler needs an initialised "
                               "torch.distributed process group")
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        if part.num_parts != self.world_size or part.part_id != self.rank:
            raise ValueError(
                f"rank {self.rank} of {self.world_size} holds part "
                f"{part.part_id} of {part.num_parts}: each rank must hold "
                f"the part of its own rank")
        self.device = _placement(part)
        self.backend = _backend(group, self.device)
        self.replace, self.disjoint = bool(replace), bool(disjoint)
        self.part = part
        if time_attr is not None and edge_time is not None:
            raise ValueError("give 'time_attr' (the partition's times) or "
                             "'edge_time', not both")
        if (edge_time is not None or time_attr is not None) and not disjoint:
            raise ValueError("temporal sampling (edge_time) needs "
                             "disjoint=True, as FusedNeighborLoader's")
        if temporal_strategy not in ('uniform', 'last'):
            raise ValueError(f"'temporal_strategy' must be 'uniform' or "
                             f"'last', got {temporal_strategy!r}")
        self.temporal_strategy = temporal_strategy
        # A heterogeneous part is read as one typed CSC over one id space
        # (typed_part.py); `fanouts[h][t]`: hop h's fan-out of edge type t.
        self.typed: Optional[TypedPart] = None
        if part.is_hetero:
            self.typed = typed_part(part)
            self.fanouts = typed_fanouts(num_neighbors,
                                         self.typed.edge_types)
            self.num_neighbors = num_neighbors
            self.nodes, self.owner = self.typed.nodes, self.typed.owner
            csc = self.typed.csc
        else:
            self.fanouts = typed_fanouts(num_neighbors, [None])
            self.num_neighbors = [hop[0] for hop in self.fanouts]
            self.nodes = part.nodes[None]  # owned global ids, ascending
            self.owner = part.node_map[None]  # global id -> part
            csc = part.csc[None]
        # every node's time of node-level times (by node type for a
        # heterogeneous part): the seeds' default times
        self.node_time = None
        if time_attr is not None:
            edge_time, self.node_time = partition_times(part, self.typed,
                                                        time_attr)
        # (segments: one per owned node, T per node in a typed CSC)
        self.csc, self.weight_cumsum, self.edge_time = _rule_csc(
            csc, csc.colptr.numel() - 1, edge_weight, edge_time)
        self.cache_ids: Optional[Tensor] = None
        self.cache: dict = {}
        self._traffic = _Traffic(self.world_size)
        self._build_cache(int(cache_rows))
        self.reset_counters()

    # ------------------------------------------------------------ counters
    def reset_counters(self) -> None:
        r"""Zeroes the byte, exchange, host read and remote row counters
        (shared with the sampler's :meth:`lane` copies)."""
        self._traffic.reset()

    @property
    def bytes_sent_to(self) -> List[int]:
        r"""Bytes this rank sent to each rank in exchanges."""
        return list(self._traffic.sent_to)

    @property
    def bytes_received_from(self) -> List[int]:
        r"""Bytes this rank received from each rank in exchanges."""
        return list(self._traffic.received_from)

    @property
    def bytes_sent(self) -> int:
        r"""Bytes this rank sent to the other ranks in exchanges."""
        return sum(self._traffic.sent_to)

    @property
    def bytes_received(self) -> int:
        r"""Bytes this rank received from the other ranks in exchanges."""
        return sum(self._traffic.received_from)

    @property
    def exchanges(self) -> int:
        r"""All-to-alls this rank took part in."""
        return self._traffic.exchanges

    @property
    def host_reads(self) -> int:
        r"""Exchange sizes read back to the host."""
        return self._traffic.host_reads

    @property
    def batches_sampled(self) -> int:
        r"""Calls of :meth:`sample` (batches) done: counted with their
        hops' exchanges."""
        return self._traffic.samples

    @property
    def host_seconds(self) -> Dict[str, float]:
        r"""Host seconds in the sampler's ops, by part: ``'reads'`` (their
        copies of sizes, counts and checks to the host: on a GPU the waits
        for the device, and through it for the peers), ``'exchanges'`` (the
        all-to-all calls' own host work), ``'relabelling'`` (the hop op's
        relabelling, whose one read is inside it), and each op's whole
        time (``'dist_sample_hops'``, ``'dist_fetch_rows'``): an op's time
        less its parts is its launches and dispatches. Measured with the
        host's clock around each part (a few calls a hop)."""
        with self._traffic.lock:
            return dict(self._traffic.host_seconds)

    @property
    def remote_rows_fetched(self) -> int:
        r"""Feature rows :meth:`gather` received from other ranks."""
        return self._traffic.remote_rows

    def lane(self, group) -> 'DistNeighborSampler':
        r"""This sampler exchanging over :obj:`group` (the same ranks as its
        own group, in the same order: e.g. ``dist.new_group(...)`` of
        them), sharing its part, cache and counters: for a thread that
        samples while another exchanges over the sampler's own group (two
        threads must not call collectives of one group at once)."""
        if dist.get_process_group_ranks(group) != \
                dist.get_process_group_ranks(self.group or
                                             dist.group.WORLD):
            raise ValueError("DistNeighborSampler.lane: the group must hold "
                             "the sampler's ranks, in the same order")
        other = copy.copy(self)
        other.group = group
        return other

    # ------------------------------------------------------------ exchange
    def _exchange(self, op, *args):
        # A collective op of this sampler's (its all-to-alls called from C++
        # over the group): its outputs, its exchange log (bytes a row, rows to
        # and from each rank) and host reads added to the counters; a failed
        # exchange or a request for a node not owned here raised as such.
        try:
            *out, exchanges, reads, seconds = op(_group_name(self.group),
                                                 *args)
        except RuntimeError as e:  # (gloo's / NCCL's DistError and the like)
            if _FOREIGN in str(e):
                self._refuse_foreign()
            raise RuntimeError(
                f"DistNeighborSampler, rank {self.rank} of "
                f"{self.world_size}: an exchange with the other ranks "
                f"failed: a rank died, or did not answer within the process "
                f"group's timeout ({type(e).__name__}: {e})") from e
        W = self.world_size
        for r in exchanges.tolist():
            self._traffic.count(self.rank, r[0], r[1:1 + W], r[1 + W:])
        self._traffic.add(host_reads=reads, host_seconds=seconds,
                          op=op.__name__.split('.')[0])
        return out

    def _refuse_foreign(self):
        raise RuntimeError(f"rank {self.rank} {_FOREIGN}")

    # ------------------------------------------------------------ sampling
    def sample(self, seed: Tensor, rng_seed: int,
               seed_time: Optional[Tensor] = None) -> DistSample:
        r"""The batch of :obj:`seed` (global ids, moved to the sampler's
        device) under :obj:`rng_seed` (collective); with ``edge_time``,
        :obj:`seed_time` (int64, one per seed) bounds each seed's
        subtree. Seeds outside ``[0, num_nodes)`` raise ``ValueError`` (a
        host read on a GPU, where an id out of range would otherwise end
        in a device-side assert)."""
        seed = seed.to(device=self.device, dtype=torch.long).reshape(-1)
        check_ids_in_range(seed, self.owner.numel(), 'seed',
                           'DistNeighborSampler.sample')
        return self._sample(seed, rng_seed, seed_time)

    def _seed_time(self, seed: Tensor,
                   seed_time: Optional[Tensor]) -> Optional[Tensor]:
        # (the seeds' times on the sampler's device, one a seed: given with
        # edge_time, and only then)
        if (seed_time is None) != (self.edge_time is None):
            raise ValueError("'seed_time' is needed with edge_time (and only "
                             "then)" if seed_time is None else
                             "'seed_time' given, but the sampler has no "
                             "edge_time")
        if seed_time is None:
            return None
        seed_time = seed_time.to(device=self.device,
                                 dtype=torch.long).reshape(-1)
        if seed_time.numel() != seed.numel():
            raise ValueError(f"'seed_time' must have one entry per seed "
                             f"({seed.numel()}), got {seed_time.numel()}")
        return seed_time

    def _hops(self, key: Tensor, rng_seed: int, disjoint: bool,
              seed_time: Optional[Tensor], *batched):
        # Every hop of a call, exchanges included, in one op
        # (dist_sample_hops.cpp: the loop this class ran, without the GIL)
        # over this rank's part and rules; `batched`: the op's several-batch
        # arguments (root_batch, key_pos, batch_rng_seeds).
        return self._exchange(
            _ops.dist_sample_hops, key, self.owner.numel(), self.owner,
            self.nodes, self.csc.colptr, self.csc.row, self.csc.edge_id,
            [int(k) for ks in self.fanouts for k in ks],
            len(self.fanouts[0]) if self.fanouts else 1, self.replace,
            int(rng_seed), disjoint, self.weight_cumsum, self.edge_time,
            seed_time, self.temporal_strategy == 'last', *batched)

    def _sample(self, seed: Tensor, rng_seed: int,
                seed_time: Optional[Tensor] = None) -> DistSample:
        # (sample without the seeds' range check: for seeds checked once
        # already, e.g. a loader's input nodes, with no host read a batch)
        dev = self.device
        seed = seed.to(device=dev, dtype=torch.long).reshape(-1)
        seed_time = self._seed_time(seed, seed_time)
        # The batch's nodes as keys: the node, or (seed index, node) when
        # disjoint (a node is new once per seed's subtree).
        N = self.owner.numel()
        key = seed if not self.disjoint else \
            torch.arange(seed.numel(), device=dev) * N + seed
        key, row, col, edge, nsn, nse, _, _ = self._hops(
            key, rng_seed, self.disjoint, seed_time)
        # (counted once its exchanges are: a batch a background thread is
        # sampling when the counters are reset then counts with its hops'
        # exchanges, not as exchanges without their batch; its feature
        # gather, after this, may still fall on either side of the reset)
        self._traffic.add(samples=1)
        return DistSample(key % N, row, col, edge, list(nsn), list(nse),
                          key // N if self.disjoint else None)

    def _sample_batches(self, seeds: Sequence[Tensor],
                        rng_seeds: Sequence[int],
                        seed_times: Optional[Sequence[Tensor]] = None):
        # Several batches in one call of the hop op (collective, like
        # _sample: every rank calls it with its own batches, as many calls):
        # a hop's all-to-alls, launches and reads are paid once for all of
        # them. Each batch comes out as _sample gives it alone: its keys are
        # rooted (a batch's index, or with disjoint a seed's), and its
        # requests carry its nodes' positions in it and its RNG seed.
        # Returns the batches' DistSamples, their nodes together (global
        # ids, batch after batch) and each batch's slice of them (a gather
        # for them all, whose rows each batch then takes as a view).
        dev, N, B = self.device, self.owner.numel(), len(seeds)
        seeds = [x.to(device=dev, dtype=torch.long).reshape(-1) for x in seeds]
        times = [self._seed_time(x, t)
                 for x, t in zip(seeds, seed_times or [None] * B)]
        counts = [x.numel() for x in seeds]
        starts = [sum(counts[:b]) for b in range(B)]
        flat = torch.cat(seeds)
        # (the batches' sizes copied to the device once: each seed's batch,
        # and its position there, its index less its batch's start)
        sizes = torch.tensor(counts, device=dev)
        batch_of_seed = torch.repeat_interleave(
            torch.arange(B, device=dev), sizes, output_size=flat.numel())
        within = torch.arange(flat.numel(), device=dev) - (
            sizes.cumsum(0) - sizes).index_select(0, batch_of_seed)
        if self.disjoint:  # (a seed is its own root)
            root, root_batch = torch.arange(flat.numel(), device=dev), \
                batch_of_seed
        else:  # (a batch is the root of its nodes)
            root, root_batch = batch_of_seed, torch.arange(B, device=dev)
        # (rooted keys: the op's disjoint mode; each batch its own RNG seed)
        key, row, col, edge, _, _, pos, per_batch = self._hops(
            root * N + flat, 0, True,
            None if seed_times is None else torch.cat(times), root_batch,
            within, [int(k) for k in rng_seeds])
        self._traffic.add(samples=B)
        # (every batch's node and draw counts a hop, on the host: the op's
        # one read a call)
        per_batch = per_batch.tolist()
        hops = (len(per_batch) - 1) // 2
        nodes, edges = per_batch[:hops + 1], per_batch[hops + 1:]
        node_counts, edge_counts = ([[r[b] for r in rows] for b in range(B)]
                                    for rows in (nodes, edges))
        # (every batch's nodes and draws, in order, batch after batch: a
        # stable sort by batch, one gather each for all the batches; each
        # batch then a slice of them, a view)
        key_batch = root_batch.index_select(0, key // N)
        node_order = torch.sort(key_batch, stable=True)[1]
        edge_order = torch.sort(key_batch.index_select(0, col),
                                stable=True)[1]
        key = key.index_select(0, node_order)
        node = key % N
        row = pos.index_select(0, row.index_select(0, edge_order))
        col = pos.index_select(0, col.index_select(0, edge_order))
        edge = edge.index_select(0, edge_order)
        root = key // N if self.disjoint else None
        out, index, n0, e0 = [], [], 0, 0
        for b in range(B):
            n1, e1 = n0 + sum(node_counts[b]), e0 + sum(edge_counts[b])
            node_rows, edge_rows = slice(n0, n1), slice(e0, e1)
            out.append(DistSample(
                node[node_rows], row[edge_rows], col[edge_rows],
                edge[edge_rows], node_counts[b], edge_counts[b],
                None if root is None else root[node_rows] - starts[b]))
            index.append(node_rows)
            n0, e0 = n1, e1
        return out, node, index

    # ------------------------------------------------------------ features
    def gather(self, ids: Tensor, name: str = 'x') -> Tensor:
        r"""Rows of node feature :obj:`name` (``'x'``, ``'y'``, ...) of the
        global ids :obj:`ids`, each from its owner, or from this rank's
        cache of hot remote rows (collective), on the sampler's device."""
        return self.gather_all(ids, [name])[name]

    def gather_all(self, ids: Tensor, names: Sequence[str],
                   node_type: Optional[str] = None) -> Dict[str, Tensor]:
        r"""Rows of every node feature in :obj:`names` of the global ids
        :obj:`ids`, as :meth:`gather` gives them, with one exchange of the
        ids for all of them (collective: every rank passes the same names
        in the same order): ``2 + len(names)`` all-to-alls, none for no
        names. A heterogeneous part's features are per :obj:`node_type`
        (its type-local ids). Ids outside the (type's) nodes raise
        ``ValueError``, as in :meth:`sample`."""
        ids = ids.to(device=self.device, dtype=torch.long).reshape(-1)
        if (node_type is None) != (self.typed is None):
            raise ValueError("'node_type' names the node type of 'ids' in a "
                             "heterogeneous partition (and only there)")
        if self.typed is None:
            bound = self.owner.numel()
        else:
            i = self.typed.type_of(node_type)
            bound = int(self.typed.node_offset[i + 1] -
                        self.typed.node_offset[i])
        check_ids_in_range(ids, bound, 'ids', 'DistNeighborSampler.gather')
        return self._gather_all(ids, names, node_type)

    def _gather_all(self, ids: Tensor, names: Sequence[str],
                    node_type: Optional[str] = None) -> Dict[str, Tensor]:
        # (gather_all without the ids' range check: for ids a batch's
        # sampling made, with no host read for it; one for a cache's misses)
        ids = ids.to(device=self.device, dtype=torch.long).reshape(-1)
        tables = {name: self._table(name, node_type) for name in names}
        row_offset = 0
        if self.typed is not None:
            # (routed in the one id space; rows at the type's local rows)
            i = self.typed.type_of(node_type)
            ids = ids + self.typed.node_offset[i]
            row_offset = self.typed.local_offset[i]
        if not tables:  # (no rows to fetch: every rank skips the exchanges)
            return {}
        cache_ids, cached = self._cached(node_type)
        if cache_ids is None or cache_ids.numel() == 0:
            return self._fetch(ids, tables, count=True,
                               row_offset=row_offset)
        pos = torch.searchsorted(cache_ids, ids).clamp_max(
            cache_ids.numel() - 1)
        # (the misses' positions: the one host read, which sizes their fetch)
        miss = (cache_ids.index_select(0, pos) != ids).nonzero().view(-1)
        fetched = self._fetch(ids.index_select(0, miss), tables, count=True,
                              row_offset=row_offset)
        # every row from the cache (a miss's from whichever cached node its
        # position points at), then the misses' fetched rows over theirs
        return {name: cached[name].index_select(0, pos).index_copy_(
                    0, miss, fetched[name]) for name in tables}

    def _cached(self, node_type: Optional[str]):
        # (the cached ids of a node type, in the one id space, ascending;
        # their rows by feature name)
        if self.typed is None or self.cache_ids is None:
            return self.cache_ids, self.cache
        lo, hi = self._cache_blocks[node_type]
        return self.cache_ids[lo:hi], {
            name: rows for (nt, name), rows in self.cache.items()
            if nt == node_type}

    def cache_nbytes(self) -> int:
        r"""Bytes of the cache of hot remote rows: its ids and their rows of
        every node feature."""
        if self.cache_ids is None:
            return 0
        return self.cache_ids.numel() * self.cache_ids.element_size() + sum(
            t.numel() * t.element_size() for t in self.cache.values())

    def _table(self, name: str, node_type: Optional[str] = None) -> Tensor:
        feats = self.part.node_feats.get(node_type, {})
        if name not in feats:
            raise KeyError(f"the partition has no node feature {name!r}"
                           f"{_at(node_type)} (it has {sorted(feats)})")
        return feats[name]

    def _fetch(self, ids: Tensor, tables: Dict[str, Tensor],
               count: bool, row_offset: int = 0) -> Dict[str, Tensor]:
        # Rows of `ids` from their owners, for every table (collective: the
        # ids' sizes, the ids, one exchange of rows per table, in one op:
        # dist_fetch_rows.cpp); a table's row of owned node j is
        # j - row_offset (a node type's rows).
        rows, remote = self._exchange(_ops.dist_fetch_rows, ids, self.owner,
                                      self.nodes, list(tables.values()),
                                      row_offset)
        if count:
            self._traffic.add(remote_rows=remote)
        return dict(zip(tables, rows))

    def _build_cache(self, cache_rows: int) -> None:
        # The same size on every rank (else one rank's fetch below would
        # wait forever for the others'), then the hottest remote sources of
        # this part's in-edges, their rows of every feature fetched once.
        if cache_rows < 0:
            raise ValueError(f"'cache_rows' must be >= 0, got {cache_rows}")
        if self.world_size > 1:
            both = torch.tensor([cache_rows, -cache_rows],
                                device=self.device)
            try:
                dist.all_reduce(both, dist.ReduceOp.MAX, group=self.group)
                largest, smallest = both.tolist()
            except RuntimeError as e:
                raise RuntimeError(
                    f"DistNeighborSampler, rank {self.rank}: agreeing on "
                    f"'cache_rows' with the other ranks failed "
                    f"({type(e).__name__}: {e})") from e
            if largest != -smallest:
                raise ValueError(
                    f"'cache_rows' differs between the ranks (this rank: "
                    f"{cache_rows}, the largest: {largest}): every "
                    f"rank must pass the same value")
        if cache_rows == 0:
            return
        typed = self.typed
        src = (typed.csc if typed is not None else self.part.csc[None]).row
        src = src.to(torch.long)
        remote = src[self.owner[src] != self.rank]
        ids, hits = torch.unique(remote, return_counts=True)
        # (most in-edges first, ties by id: unique's order, kept stably)
        hot = ids[torch.sort(hits, descending=True, stable=True).indices[
            :cache_rows]]
        self.cache_ids = torch.sort(hot).values
        if typed is None:
            self.cache = self._fetch(
                self.cache_ids, {name: self._table(name) for name in
                                 sorted(self.part.node_feats[None])},
                count=False)
            return
        # A heterogeneous part: the cached ids of each node type are a
        # block of cache_ids (types are id ranges); each type's rows fetched
        # in turn, every type on every rank (collective).
        bounds = torch.searchsorted(self.cache_ids, torch.tensor(
            typed.node_offset, device=self.device)).tolist()
        self._cache_blocks = {}
        for i, nt in enumerate(typed.node_types):
            lo, hi = bounds[i], bounds[i + 1]
            self._cache_blocks[nt] = (lo, hi)
            names = sorted(self.part.node_feats.get(nt, {}))
            rows = self._fetch(self.cache_ids[lo:hi],
                               {name: self._table(name, nt)
                                for name in names},
                               count=False, row_offset=typed.local_offset[i])
            self.cache.update({(nt, name): r for name, r in rows.items()})


# The device each backend exchanges tensors of.
_BACKEND_DEVICE = {'gloo': 'cpu', 'nccl': 'cuda'}


def _placement(part: Partition) -> torch.device:
    # The sampler's device: the part's graph's, every tensor the sampler
    # reads there (node features may be in pinned host memory behind a
    # GPU), and on a GPU the process's current one (NCCL's).
    device = part.device
    tensors = [(f'node_map{_at(t)}', m) for t, m in part.node_map.items()]
    tensors += [(f'nodes{_at(t)}', n) for t, n in part.nodes.items()]
    for t, csc in part.csc.items():
        tensors += [(f'csc{_at(t)}.{name}', getattr(csc, name)) for name in
                    ('colptr', 'row', 'edge_id', 'edge_attr', 'edge_time')]
    for name, t in tensors:
        if t is not None and t.device != device:
            raise ValueError(f"DistNeighborSampler: the part's {name} is on "
                             f"{t.device} but its nodes are on {device}: "
                             f"move the whole part (part.to(device))")
    for key, feats in part.node_feats.items():
        for name, t in feats.items():
            pinned = device.type == 'cuda' and t.device.type == 'cpu' and \
                t.is_pinned()
            if t.device != device and not pinned:
                raise ValueError(
                    f"DistNeighborSampler: the part's node feature "
                    f"{name!r}{_at(key)} is on {t.device} but its graph is on "
                    f"{device}: features go with the graph, or behind a GPU "
                    f"in pinned host memory (part.to(device, "
                    f"pin_features=True))")
    if device.type == 'cuda' and device.index != torch.cuda.current_device():
        raise ValueError(
            f"DistNeighborSampler: the part is on {device} but this "
            f"process's current CUDA device is cuda:"
            f"{torch.cuda.current_device()}: one GPU per rank, made current "
            f"with torch.cuda.set_device({device.index}) before "
            f"init_process_group")
    return device


def _at(key) -> str:
    # ' of <type>' for a heterogeneous part's key ('' for None)
    return '' if key is None else f' of {key!r}'


def _backend(group, device: torch.device) -> str:
    # The group's backend for the part's device, refused where it cannot
    # exchange that device's tensors.
    name = str(dist.get_backend(group)).lower()
    if ':' in name:  # one backend per device type: 'cpu:gloo,cuda:nccl'
        per = dict(item.split(':', 1) for item in name.split(','))
        if device.type not in per:
            raise ValueError(f"DistNeighborSampler: the process group's "
                             f"backend {name!r} has none for the part's "
                             f"device ({device})")
        name = per[device.type]
    want = _BACKEND_DEVICE.get(name)
    if want is not None and want != device.type:
        hint = ("init_process_group('nccl') with one GPU per rank, or "
                "keep the part on the CPU") if device.type == 'cuda' else (
            "move the part to this rank's GPU (part.to(device), "
            "read_partition(..., device=...)), or use gloo")
        raise ValueError(f"DistNeighborSampler: the part is on {device} but "
                         f"the process group's backend is {name}, which "
                         f"exchanges {want.upper()} tensors: {hint}")
    return name


def partition_times(part: Partition, typed: Optional[TypedPart],
                    time_attr: str):
    r"""The partition's times for temporal sampling: (each in-edge's time,
    in the order of the sampler's CSC -- ``part.csc[None]`` or the typed
    CSC of a heterogeneous part --, the node-level times or ``None``:
    every node's, by node type where heterogeneous). ``'edge_time'``: the
    edge-level times PyG's ``Partitioner`` writes (``edge_feats.pt``);
    ``'time'``: the node-level ones (``node_feats.pt``; an in-edge's time is
    its source's, nodes of a type without times never later than a seed),
    else the edge-level ones."""
    if time_attr not in ('time', 'edge_time'):
        raise ValueError(f"'time_attr' must be 'time' (node-level times, or "
                         f"the edge-level ones) or 'edge_time', got "
                         f"{time_attr!r}")
    csc = typed.csc if typed is not None else part.csc[None]
    if time_attr == 'time' and part.node_time:
        if typed is None:
            node_time = part.node_time[None]
            return node_time[csc.row.to(torch.long)], node_time
        every = every_node_time(typed.node_types, typed.node_offset,
                                part.node_time, csc.row.device)
        return every[csc.row], dict(part.node_time)
    if csc.edge_time is None:
        what = 'times' if time_attr == 'time' else 'edge-level times'
        raise ValueError(f"time_attr={time_attr!r}: the partition holds no "
                         f"{what} (PyG's Partitioner writes node-level ones "
                         f"as node_feats.pt's 'time', edge-level ones as "
                         f"edge_feats.pt's 'edge_time'; for a heterogeneous "
                         f"partition every edge type needs them)")
    return csc.edge_time, None


def _rule_csc(csc: PartCSC, num_targets: int, edge_weight: bool,
              edge_time: Optional[Tensor]):
    # The part's in-edges as the whole graph's rule lays them out: weighted
    # (zero weights dropped, per-segment prefix sums from zero: the same
    # bits as the whole graph's for the same in-edges), temporal (each
    # target's in-edges sorted by time, ties in edge id order), or both:
    # (a PartCSC-like, the prefix sums or None, the slots' times or None).
    if edge_time is None and not edge_weight:
        return csc, None, None
    weight = _weights(csc) if edge_weight else None
    if edge_time is not None:
        edge_time = edge_time.reshape(-1)
        if edge_time.dtype != torch.long or \
                edge_time.numel() != csc.num_edges:
            raise ValueError(f"'edge_time' must be int64 with one time per "
                             f"in-edge of the part ({csc.num_edges}), got "
                             f"{edge_time.dtype} [{edge_time.numel()}]")
    graph = CSCGraph(csc.colptr, csc.row, csc.edge_id, num_targets)
    if edge_time is None:
        rule = weighted_csc(graph, weight)
    elif weight is None:
        rule = temporal_csc(graph, edge_time)
    else:
        rule = weighted_temporal_csc(graph, weight, edge_time)
    g = rule.graph
    return (PartCSC(g.colptr, g.row, g.edge_id, csc.size),
            rule.weight_cumsum, rule.edge_time)


def _weights(csc: PartCSC) -> Tensor:
    # The partition's edge_attr as one weight per in-edge (checked).
    if csc.edge_attr is None:
        raise ValueError("edge_weight=True: the partition has no 'edge_attr' "
                         "(write the weights as the edges' attribute)")
    weight = csc.edge_attr.reshape(-1) if csc.edge_attr.dim() == 2 and \
        csc.edge_attr.size(1) == 1 else csc.edge_attr
    # (as the loaders check a weight_attr; integer weights taken as floats)
    check_weight('edge_attr', weight.to(torch.float64), csc.num_edges,
                 'the partition (edge_weight=True)')
    return weight
