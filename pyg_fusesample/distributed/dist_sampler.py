r"""Neighbour sampling over a partitioned graph: each rank holds one part
(:func:`~pyg_fusesample.distributed.read_partition`), and a batch's frontier
nodes are sampled by the ranks that own them, one all-to-all exchange per
hop over ``torch.distributed``.

A batch comes out as :func:`~pyg_fusesample.ops.neighbor_sample` would give
it on the whole graph with the same seeds and RNG seed, whatever the
partitioning: the requesting rank keeps the batch's node list (seeds, then
each hop's new nodes in order of first appearance) and sends every frontier
node with its position in that list; the owner draws its in-edges under the
key (RNG seed, hop, position) with :func:`~pyg_fusesample.ops.keyed_draws`
(the single-process op's key and draws, on the same in-edge order: the
partition's in-edges of a node are in edge id order, as the whole graph's
CSC holds them); the requester puts the draws back in frontier order and
deduplicates them as the op does. Per hop: one exchange of request sizes,
one of (node, position) pairs, one of draw counts and one of draws (their
sizes known from the counts); features: one exchange of ids and one of
rows.

Every call is collective: all ranks of the group call :meth:`sample` (and
:meth:`gather`) the same number of times, in the same order, with batches
of any size (an empty one included). A rank that dies, or does not answer
within the process group's timeout (``init_process_group(timeout=...)``),
ends the others' calls with a ``RuntimeError`` saying so, never a hang.

This version samples homogeneous graphs, uniformly or by edge weight,
disjoint or not, with the time rule (``edge_time``: edge-level times, e.g.
those ``read_partition`` reads from PyG's files), on the CPU (``gloo``), and can
keep the rows of hot remote nodes (``cache_rows``); CUDA tensors and
heterogeneous partitions raise :class:`NotImplementedError`.
"""
from typing import List, NamedTuple, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
from torch import Tensor

from ..ops import keyed_draws
from ..sampler.graph_store import CSCGraph
from ..sampler.rule_graph import (temporal_csc, weighted_csc,
                                  weighted_temporal_csc)
from ..sampler.sampling_rule import check_weight
from .partition_files import PartCSC, Partition


class DistSample(NamedTuple):
    r"""A batch in global ids, as :class:`~pyg_fusesample.ops.
    NeighborSampleOutput` gives it: ``node`` (seeds first, then each hop's
    new nodes), ``row`` / ``col`` (local ids of source / target, grouped by
    hop, targets in node order, draws in draw order), ``edge`` (global edge
    ids), per-hop counts."""
    node: Tensor
    row: Tensor
    col: Tensor
    edge: Tensor
    num_sampled_nodes: List[int]
    num_sampled_edges: List[int]
    batch: Optional[Tensor] = None  # seed index of each node (disjoint)


class DistNeighborSampler:
    r"""Samples batches from the partition :obj:`part` held by this rank
    (see the module: the result is the whole graph's, for any partition).

    Args:
        part (Partition): this rank's part (``part.part_id`` must be the
            rank in :obj:`group`, ``part.num_parts`` its size).
        num_neighbors (List[int]): fan-out per hop (``-1``: all in-edges).
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
    """
    def __init__(self, part: Partition, num_neighbors: Sequence[int],
                 replace: bool = False, edge_weight: bool = False,
                 disjoint: bool = False, edge_time: Optional[Tensor] = None,
                 temporal_strategy: str = 'uniform', cache_rows: int = 0,
                 group=None):
        if part.is_hetero:
            raise NotImplementedError(
                "distributed sampling of heterogeneous partitions is not "
                "supported yet")
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
        self.num_neighbors = [int(k) for k in num_neighbors]
        if any(k < -1 for k in self.num_neighbors):
            raise ValueError(f"'num_neighbors' must be >= -1, got "
                             f"{self.num_neighbors}")
        self.replace, self.disjoint = bool(replace), bool(disjoint)
        self.part = part
        self.nodes = part.nodes[None]  # owned global ids, ascending
        self.owner = part.node_map[None]  # global id -> part
        csc = part.csc[None]
        if edge_time is not None and not disjoint:
            raise ValueError("temporal sampling (edge_time) needs "
                             "disjoint=True, as FusedNeighborLoader's")
        if temporal_strategy not in ('uniform', 'last'):
            raise ValueError(f"'temporal_strategy' must be 'uniform' or "
                             f"'last', got {temporal_strategy!r}")
        self.temporal_strategy = temporal_strategy
        self.csc, self.weight_cumsum, self.edge_time = _rule_csc(
            csc, self.nodes.numel(), edge_weight, edge_time)
        for t in (self.nodes, csc.colptr):
            if t.device.type != 'cpu':
                raise NotImplementedError(
                    "distributed sampling runs on the CPU (gloo) in this "
                    "version")
        # rows received from other ranks by gather (the cache's own fetch
        # not counted)
        self.remote_rows_fetched = 0
        self.cache_ids: Optional[Tensor] = None
        self.cache: dict = {}
        self._build_cache(int(cache_rows))

    # ------------------------------------------------------------ exchange
    def _exchange(self, send: Tensor, counts: Tensor) -> Tuple[Tensor, Tensor]:
        # Rows of `send` (grouped by destination rank, counts[r] for rank r)
        # to their ranks; returns the rows received (grouped by source rank)
        # and how many came from each.
        try:
            recv_counts = torch.empty_like(counts)
            dist.all_to_all_single(recv_counts, counts, group=self.group)
            recv = send.new_empty((int(recv_counts.sum()), ) +
                                  send.shape[1:])
            dist.all_to_all_single(recv, send.contiguous(),
                                   recv_counts.tolist(), counts.tolist(),
                                   group=self.group)
        except RuntimeError as e:  # (gloo's DistError and the like)
            raise RuntimeError(
                f"DistNeighborSampler, rank {self.rank} of "
                f"{self.world_size}: an exchange with the other ranks "
                f"failed: a rank died, or did not answer within the process "
                f"group's timeout ({type(e).__name__}: {e})") from e
        return recv, recv_counts

    def _by_owner(self, ids: Tensor) -> Tuple[Tensor, Tensor]:
        # (a stable order of ids grouped by owner, rows per owner)
        owner = self.owner[ids]
        perm = torch.sort(owner, stable=True).indices
        return perm, torch.bincount(owner, minlength=self.world_size)

    def _local(self, ids: Tensor) -> Tensor:
        # Rows of owned global ids in this part (a request for a node the
        # part does not own is a bug of the caller: refused).
        local = torch.searchsorted(self.nodes, ids)
        if ids.numel() and (local.max() >= self.nodes.numel() or not
                            torch.equal(self.nodes[local.clamp_max(
                                self.nodes.numel() - 1)], ids)):
            raise RuntimeError(f"rank {self.rank} was asked for nodes it "
                               f"does not own")
        return local

    # ------------------------------------------------------------ sampling
    def sample(self, seed: Tensor, rng_seed: int,
               seed_time: Optional[Tensor] = None) -> DistSample:
        r"""The batch of :obj:`seed` (global ids, on the CPU) under
        :obj:`rng_seed` (collective); with ``edge_time``, :obj:`seed_time`
        (int64, one per seed) bounds each seed's subtree."""
        seed = seed.to(torch.long)
        if (seed_time is None) != (self.edge_time is None):
            raise ValueError("'seed_time' is needed with edge_time (and only "
                             "then)" if seed_time is None else
                             "'seed_time' given, but the sampler has no "
                             "edge_time")
        if seed_time is not None:
            seed_time = seed_time.to(torch.long).reshape(-1)
            if seed_time.numel() != seed.numel():
                raise ValueError(f"'seed_time' must have one entry per seed "
                                 f"({seed.numel()}), got {seed_time.numel()}")
        # The batch's nodes as keys: the node, or (seed index, node) when
        # disjoint (a node is new once per seed's subtree).
        N = self.owner.numel()
        key = seed if not self.disjoint else \
            torch.arange(seed.numel()) * N + seed
        rows, cols, edges = [], [], []
        nsn, nse = [seed.numel()], []
        begin, end = 0, seed.numel()
        for hop, k in enumerate(self.num_neighbors):
            frontier = key[begin:end] % N
            position = torch.arange(begin, end)
            perm, counts = self._by_owner(frontier)
            fields = [frontier[perm], position[perm]]
            if seed_time is not None:  # (each node's root seed's time)
                fields.append(seed_time[key[begin:end] // N][perm])
            asked, asked_counts = self._exchange(torch.stack(fields, 1),
                                                 counts)
            # Serve the requests received: draws per request, in order.
            draws = keyed_draws(
                self.csc.colptr, self.csc.row, self.csc.edge_id,
                self._local(asked[:, 0].contiguous()),
                asked[:, 1].contiguous(), k, self.replace, rng_seed, hop,
                self.weight_cumsum, self.edge_time,
                None if seed_time is None else asked[:, 2].contiguous(),
                self.temporal_strategy)
            reply_sizes = torch.zeros_like(asked_counts).index_add_(
                0, torch.repeat_interleave(
                    torch.arange(self.world_size), asked_counts), draws.count)
            got_count, _ = self._exchange(draws.count, asked_counts)
            got, _ = self._exchange(torch.stack([draws.row, draws.edge], 1),
                                    reply_sizes)
            src, edge, col = _in_frontier_order(got, got_count, perm, begin)
            if self.disjoint:  # (the root of the draw's target)
                src = key[col] // N * N + src
            key, row, new = _relabel(key, src)
            rows.append(row)
            cols.append(col)
            edges.append(edge)
            nsn.append(new)
            nse.append(src.numel())
            begin, end = end, key.numel()
        cat = lambda ts: torch.cat(ts) if ts else \
            torch.empty(0, dtype=torch.long)  # noqa: E731
        return DistSample(key % N, cat(rows), cat(cols), cat(edges), nsn, nse,
                          key // N if self.disjoint else None)

    # ------------------------------------------------------------ features
    def gather(self, ids: Tensor, name: str = 'x') -> Tensor:
        r"""Rows of node feature :obj:`name` (``'x'``, ``'y'``, ...) of the
        global ids :obj:`ids`, each from its owner, or from this rank's
        cache of hot remote rows (collective)."""
        table = self._table(name)
        if self.cache_ids is None or self.cache_ids.numel() == 0:
            return self._fetch(ids, table, count=True)
        pos = torch.searchsorted(self.cache_ids, ids).clamp_max(
            self.cache_ids.numel() - 1)
        hit = self.cache_ids[pos] == ids
        out = table.new_empty((ids.numel(), ) + table.shape[1:])
        out[hit] = self.cache[name][pos[hit]]
        out[~hit] = self._fetch(ids[~hit], table, count=True)
        return out

    def cache_nbytes(self) -> int:
        r"""Bytes of the cache of hot remote rows: its ids and their rows of
        every node feature."""
        if self.cache_ids is None:
            return 0
        return self.cache_ids.numel() * self.cache_ids.element_size() + sum(
            t.numel() * t.element_size() for t in self.cache.values())

    def _table(self, name: str) -> Tensor:
        feats = self.part.node_feats[None]
        if name not in feats:
            raise KeyError(f"the partition has no node feature {name!r} "
                           f"(it has {sorted(feats)})")
        return feats[name]

    def _fetch(self, ids: Tensor, table: Tensor, count: bool) -> Tensor:
        # Rows of `ids` from their owners (collective: two exchanges).
        perm, counts = self._by_owner(ids)
        asked, asked_counts = self._exchange(ids[perm], counts)
        rows, _ = self._exchange(table[self._local(asked)], asked_counts)
        if count:
            self.remote_rows_fetched += int(counts.sum() - counts[self.rank])
        out = torch.empty_like(rows)
        out[perm] = rows
        return out

    def _build_cache(self, cache_rows: int) -> None:
        # The same size on every rank (else one rank's fetch below would
        # wait forever for the others'), then the hottest remote sources of
        # this part's in-edges, their rows of every feature fetched once.
        if cache_rows < 0:
            raise ValueError(f"'cache_rows' must be >= 0, got {cache_rows}")
        if self.world_size > 1:
            both = torch.tensor([cache_rows, -cache_rows])
            try:
                dist.all_reduce(both, dist.ReduceOp.MAX, group=self.group)
            except RuntimeError as e:
                raise RuntimeError(
                    f"DistNeighborSampler, rank {self.rank}: agreeing on "
                    f"'cache_rows' with the other ranks failed "
                    f"({type(e).__name__}: {e})") from e
            if int(both[0]) != -int(both[1]):
                raise ValueError(
                    f"'cache_rows' differs between the ranks (this rank: "
                    f"{cache_rows}, the largest: {int(both[0])}): every "
                    f"rank must pass the same value")
        if cache_rows == 0:
            return
        src = self.part.csc[None].row.to(torch.long)
        remote = src[self.owner[src] != self.rank]
        ids, hits = torch.unique(remote, return_counts=True)
        # (most in-edges first, ties by id: unique's order, kept stably)
        hot = ids[torch.sort(hits, descending=True, stable=True).indices[
            :cache_rows]]
        self.cache_ids = torch.sort(hot).values
        self.cache = {name: self._fetch(self.cache_ids, self._table(name),
                                        count=False)
                      for name in sorted(self.part.node_feats[None])}


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


def _in_frontier_order(got: Tensor, got_count: Tensor, perm: Tensor,
                       begin: int) -> Tuple[Tensor, Tensor, Tensor]:
    # The draws came back grouped by owner, each owner's in our request
    # order (`perm`: frontier index of every request): reorder them target
    # by target in frontier order. Returns (sources, edge ids, the local id
    # of each draw's target).
    n = perm.numel()
    count = torch.empty_like(got_count)
    count[perm] = got_count
    start = torch.empty_like(got_count)
    start[perm] = torch.cumsum(got_count, 0) - got_count
    total = int(count.sum())
    first = torch.repeat_interleave(start, count)
    within = torch.arange(total) - torch.repeat_interleave(
        torch.cumsum(count, 0) - count, count)
    index = first + within
    col = torch.repeat_interleave(torch.arange(begin, begin + n), count)
    return got[index, 0], got[index, 1], col


def _relabel(node: Tensor, src: Tensor) -> Tuple[Tensor, Tensor, int]:
    # As the op: sources not yet in the batch are appended in order of first
    # appearance; returns (the node list, every source's local id, how many
    # were new). (Nodes and sources are keys: see sample.)
    known = torch.isin(src, node)
    fresh = src[~known]
    if fresh.numel():
        uniq, inverse = torch.unique(fresh, return_inverse=True)
        first = torch.full((uniq.numel(), ), fresh.numel(), dtype=torch.long)
        first.scatter_reduce_(0, inverse, torch.arange(fresh.numel()), 'amin')
        new = uniq[torch.argsort(first)]
        node = torch.cat([node, new])
    else:
        new = fresh
    # (stable: a seed given twice is its first position, as in the op)
    ordered, where = torch.sort(node, stable=True)
    row = where[torch.searchsorted(ordered, src)]
    return node, row, new.numel()
