"""Python entry points and fake (meta) kernels of the sampling ops.

The ops themselves live in ``kernels/`` and are registered under
``torch.ops.fusesample``; their contracts are in the schema files
(``kernels/sampler/neighbor_sample.cpp`` etc.). The fake kernels let
``torch.compile`` and ``torch.library.opcheck`` trace them: output sizes are
data-dependent, so they are unbacked symbolic ints.
"""
from typing import List, NamedTuple, Optional, Sequence

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


class NeighborSampleOutput(NamedTuple):
    node: Tensor
    row: Tensor
    col: Tensor
    edge: Tensor
    batch: Optional[Tensor]
    num_sampled_nodes: Tensor
    num_sampled_edges: Tensor
    type_counts: Optional[Tensor] = None  # typed samples (else empty)


def neighbor_sample(colptr: Tensor, row: Tensor, edge_id: Optional[Tensor],
                    seed: Tensor, num_neighbors: List[int],
                    replace: bool = False, disjoint: bool = False,
                    rng_seed: int = 0, fused: bool = True,
                    num_edge_types: int = 1,
                    node_type_offsets: Sequence[int] = (),
                    edge_type_offsets: Sequence[int] = (),
                    edge_type_nodes: Sequence[int] = (),
                    edge_time: Optional[Tensor] = None,
                    seed_time: Optional[Tensor] = None,
                    temporal_strategy: str = 'uniform',
                    weight_cumsum: Optional[Tensor] = None,
                    ) -> NeighborSampleOutput:
    r"""Samples a multi-hop neighbourhood of :obj:`seed` from a CSC graph.

    With :obj:`num_edge_types` :math:`T > 1` the graph is typed (the
    heterogeneous sampler's layout): ``colptr`` has :math:`N T + 1` entries,
    segment :math:`vT + t` holding node :math:`v`'s in-edges of edge type
    :math:`t`, and ``num_neighbors`` has :math:`L T` entries, hop-major.

    Args:
        colptr (Tensor): ``[N * T + 1]`` int64 column pointers.
        row (Tensor): ``[E]`` int32/int64 source of each in-edge, by target.
        edge_id (Tensor, optional): ``[E]`` int64 global id of each CSC slot
            (``None``: the slot index).
        seed (Tensor): ``[B]`` int64 seed nodes.
        num_neighbors (List[int]): fan-out per hop (and edge type, hop-major,
            when :math:`T > 1`); ``-1`` takes all.
        replace (bool): sample with replacement.
        disjoint (bool): give each seed its own subtree (adds ``batch``).
        rng_seed (int): key of the counter-based RNG; equal inputs and seed
            give bitwise equal outputs on every device.
        fused (bool): on CUDA, sample all hops in one cooperative launch with
            one host sync (default); ``False`` launches per phase with a sync
            per hop (the ablation baseline). Ignored on the CPU.
        num_edge_types (int): :math:`T`, segments per node (default 1).
        node_type_offsets, edge_type_offsets, edge_type_nodes (List[int]):
            typed samples: where each node type's and edge type's global ids
            start (plus the total), and each edge type's (source, target)
            node types. With them the op also returns ``type_counts``: nodes
            per (node type, hop) at ``i * (L + 1) + h``, then edges per
            (edge type, hop) at ``NT * (L + 1) + t * L + h`` -- every size
            needed to split the sample by type, read in the op's one host
            synchronisation -- and the CUDA kernel sizes its buffers per type.
        edge_time (Tensor, optional): temporal sampling: ``[E]`` int64 time
            of each CSC slot, sorted within each segment (an edge's own
            time, or its source node's); a target draws only in-edges with
            ``edge_time <= seed_time[root]``, its root seed's time. Needs
            :obj:`seed_time` and ``disjoint=True``.
        seed_time (Tensor, optional): ``[B]`` int64 time of each seed.
        temporal_strategy (str): ``'uniform'`` (draw among the allowed
            in-edges) or ``'last'`` (take the latest :math:`k` of them).
        weight_cumsum (Tensor, optional): weighted sampling: ``[E]`` float64
            inclusive prefix sums of the in-edge weights within each segment,
            all weights positive (a CSC without zero-weight in-edges, as
            :func:`~pyg_fusesample.sampler.rule_graph.weighted_csc` builds
            it). Draws are proportional to weight; without replacement by
            successive sampling.

    Returns:
        :class:`NeighborSampleOutput` with global ``node`` ids (seeds first,
        grouped by hop, unique), local ``row`` (neighbour) and ``col``
        (target), global ``edge`` ids, ``batch`` (``None`` unless disjoint)
        and the per-hop counts as int64 tensors.
    """
    out = _ops.neighbor_sample(colptr, row, edge_id, seed, num_neighbors,
                               replace, disjoint, rng_seed, fused,
                               num_edge_types, list(node_type_offsets),
                               list(edge_type_offsets), list(edge_type_nodes),
                               edge_time, seed_time,
                               _temporal_last(temporal_strategy),
                               weight_cumsum)
    node, row_, col, edge, batch, nsn, nse, counts = out
    return NeighborSampleOutput(node, row_, col, edge,
                                batch if disjoint else None, nsn, nse, counts)


def _temporal_last(strategy: str) -> bool:
    if strategy not in ('uniform', 'last'):
        raise ValueError(f"'temporal_strategy' must be 'uniform' or 'last', "
                         f"got {strategy!r}")
    return strategy == 'last'


class PendingNeighborSample:
    r"""A :func:`neighbor_sample` whose kernels are enqueued but not waited
    for, from :func:`neighbor_sample_async`. :meth:`wait` blocks until the
    stream has produced it (one training step later it long has) and returns
    the :class:`NeighborSampleOutput`."""
    __slots__ = ('_buffers', '_meta', '_event', '_stream', '_num_hops',
                 '_num_nodes', '_disjoint', '_out', '_host_inputs')

    def __init__(self, buffers, meta: Tensor, event, stream, num_hops: int,
                 num_nodes: int, disjoint: bool, host_inputs=()):
        self._buffers = buffers
        # A graph in pinned host memory is read in place by kernels still
        # running: kept alive until wait() (else its pages could go back to
        # the pinned allocator and be handed out again under them).
        self._host_inputs = host_inputs
        self._meta = meta
        self._event = event
        self._stream = stream
        self._num_hops = num_hops
        self._num_nodes = num_nodes
        self._disjoint = disjoint
        self._out = None

    def wait(self) -> NeighborSampleOutput:
        if self._out is None:
            if self._event is not None:
                self._event.synchronize()
                # Collected on another stream than the one that wrote them:
                # the allocator must not recycle the buffers before that
                # stream's work on them is done.
                stream = torch.cuda.current_stream(self._stream.device)
                if stream != self._stream:
                    for buffer in self._buffers:
                        buffer.record_stream(stream)
            hops, meta = self._num_hops, self._meta
            n, e = meta[:2].tolist()
            error = int(meta[3 + 2 * hops])
            if error == 2:
                raise RuntimeError("fusesample::neighbor_sample: the sample "
                                   "outgrew the buffers sized from "
                                   "'edge_type_nodes': they do not describe "
                                   "the graph's edge types")
            if error != 0:
                raise RuntimeError(f"fusesample::neighbor_sample: 'seed' "
                                   f"holds ids outside [0, {self._num_nodes})")
            node, row, col, edge, batch = self._buffers
            self._out = NeighborSampleOutput(
                node[:n], row[:e], col[:e], edge[:e],
                batch[:n] if self._disjoint else None,
                meta[2:3 + hops], meta[3 + hops:3 + 2 * hops],
                meta[4 + 2 * hops:])
            self._buffers = self._meta = self._event = None
            self._host_inputs = ()
        return self._out


def neighbor_sample_async(colptr: Tensor, row: Tensor,
                          edge_id: Optional[Tensor], seed: Tensor,
                          num_neighbors: List[int], replace: bool = False,
                          disjoint: bool = False, rng_seed: int = 0,
                          num_edge_types: int = 1,
                          node_type_offsets: Sequence[int] = (),
                          edge_type_offsets: Sequence[int] = (),
                          edge_type_nodes: Sequence[int] = (),
                          edge_time: Optional[Tensor] = None,
                          seed_time: Optional[Tensor] = None,
                          temporal_strategy: str = 'uniform',
                          weight_cumsum: Optional[Tensor] = None,
                          ) -> PendingNeighborSample:
    r""":func:`neighbor_sample` (fused) without waiting for the result: on
    CUDA the kernels are enqueued on the current stream and this returns at
    once; :meth:`PendingNeighborSample.wait` gives the (bitwise identical)
    output. On the CPU the sample is complete when this returns.

    A loader calls it for batch :math:`i+1` while handing out batch :math:`i`:
    the host then never waits for a training step, so assembling batches
    overlaps the GPU's work instead of stalling it."""
    *buffers, meta = _ops.neighbor_sample_async(
        colptr, row, edge_id, seed, num_neighbors, replace, disjoint,
        rng_seed, num_edge_types, list(node_type_offsets),
        list(edge_type_offsets), list(edge_type_nodes), edge_time, seed_time,
        _temporal_last(temporal_strategy), weight_cumsum)
    event = stream = None
    # The kernels run on the seeds' GPU, also for a graph in pinned host
    # memory (a CPU colptr, read in place): wait() must wait for that stream.
    if seed.is_cuda:
        stream = torch.cuda.current_stream(seed.device)
        event = torch.cuda.Event()
        event.record(stream)
    host = (colptr, row, edge_id, edge_time, weight_cumsum) \
        if seed.is_cuda and not colptr.is_cuda else ()
    return PendingNeighborSample(buffers, meta, event, stream,
                                 len(num_neighbors) // num_edge_types,
                                 (colptr.numel() - 1) // num_edge_types,
                                 disjoint, host)


def induced_subgraph(colptr: Tensor, row: Tensor, edge_id: Optional[Tensor],
                     node: Tensor):
    r"""All edges among the unique nodes :obj:`node`, as local
    ``(row, col, edge)``."""
    return _ops.induced_subgraph(colptr, row, edge_id, node)


def csc_from_coo(edge_index: Tensor, num_nodes: int):
    r"""CSC layout ``(colptr, row, perm)`` of :obj:`edge_index`: sources
    grouped by target, in edge order within a target (a stable sort)."""
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"csc_from_coo: 'edge_index' must have shape [2, E], "
                         f"got {list(edge_index.shape)}")
    return _ops.csc_from_coo(edge_index[0], edge_index[1], int(num_nodes))


def gather_rows(src: Tensor, index: Tensor, check_index: bool = True
                ) -> Tensor:
    r"""``src[index]`` along dimension 0 for any dtype, with a vectorised
    row copy on CUDA. ``check_index=False`` skips the range check (and its
    host sync on CUDA) when the caller guarantees ``0 <= index < len(src)``;
    the CUDA kernel then writes zeros for a bad index instead of reading out
    of bounds.

    With :obj:`index` on a GPU, :obj:`src` may live in pinned host memory
    (``src.pin_memory()``): the kernel reads its rows zero-copy over the
    host link and returns them on the GPU. A CPU :obj:`src` that is not
    pinned is refused (never copied whole behind the caller's back)."""
    return _ops.gather_rows(src, index, check_index)


def gather_rows_cached(src: Tensor, cache: Tensor, cache_slot: Tensor,
                       index: Tensor, hits: Tensor) -> Tensor:
    r"""``src[index]`` through a cache of rows: row ``index[i]`` comes from
    ``cache[cache_slot[index[i]]]`` where that slot is >= 0, else from
    :obj:`src` (typically pinned host memory read zero-copy, the cache on
    the GPU); one kernel on CUDA. Adds the number of rows the cache served
    to ``hits[0]`` (an int64 counter on the device of :obj:`index`), with
    no host synchronisation. :obj:`index` must lie in ``[0, len(src))``."""
    return _ops.gather_rows_cached(src, cache, cache_slot, index, hits)


def gather_rows_list(src: List[Tensor], index: Tensor,
                     check_index: bool = True) -> List[Tensor]:
    r""":func:`gather_rows` of every tensor in :obj:`src` with one
    :obj:`index`, in one call (one trip through the dispatcher)."""
    return _ops.gather_rows_list(src, index, check_index)


# Fake kernels ###############################################################

def _fake_sample_tensors(colptr, seed, disjoint):
    # node, row, col, edge, batch of a sample: sizes the device decides.
    ctx = torch.library.get_ctx()
    num_nodes = ctx.new_dynamic_size()
    num_edges = ctx.new_dynamic_size()
    node = seed.new_empty(num_nodes, dtype=torch.long)
    edge_out = [colptr.new_empty(num_edges, dtype=torch.long)
                for _ in range(3)]
    batch = (colptr.new_empty(num_nodes, dtype=torch.long) if disjoint else
             colptr.new_empty(0, dtype=torch.long))
    return (node, *edge_out, batch)


@torch.library.register_fake('fusesample::neighbor_sample')
def _neighbor_sample_fake(colptr, row, edge_id, seed, num_neighbors,
                          replace=False, disjoint=False, rng_seed=0,
                          fused=True, num_edge_types=1, node_type_offsets=(),
                          edge_type_offsets=(), edge_type_nodes=(),
                          edge_time=None, seed_time=None, temporal_last=False,
                          weight_cumsum=None):
    hops = len(num_neighbors) // num_edge_types
    # Per-hop counts are host tensors on every device (read in the op's sync).
    nsn = torch.empty(hops + 1, dtype=torch.long, device='cpu')
    nse = torch.empty(hops, dtype=torch.long, device='cpu')
    counts = torch.empty(_type_counts(node_type_offsets, num_edge_types, hops),
                         dtype=torch.long, device='cpu')
    return (*_fake_sample_tensors(colptr, seed, disjoint), nsn, nse, counts)


def _type_counts(node_type_offsets, num_edge_types, hops) -> int:
    # Entries of type_counts (kernels/sampler/type_counts.h).
    num_node_types = max(len(node_type_offsets) - 1, 0)
    if num_node_types == 0:
        return 0
    return num_node_types * (hops + 1) + num_edge_types * hops


@torch.library.register_fake('fusesample::neighbor_sample_async')
def _neighbor_sample_async_fake(colptr, row, edge_id, seed, num_neighbors,
                                replace=False, disjoint=False, rng_seed=0,
                                num_edge_types=1, node_type_offsets=(),
                                edge_type_offsets=(), edge_type_nodes=(),
                                edge_time=None, seed_time=None,
                                temporal_last=False, weight_cumsum=None):
    # The buffers (at least as long as the outputs) and the host meta.
    hops = len(num_neighbors) // num_edge_types
    size = 4 + 2 * hops + _type_counts(node_type_offsets, num_edge_types, hops)
    meta = torch.empty(size, dtype=torch.long,
                       device='cpu')
    return (*_fake_sample_tensors(colptr, seed, disjoint), meta)


@torch.library.register_fake('fusesample::induced_subgraph')
def _induced_subgraph_fake(colptr, row, edge_id, node):
    num_edges = torch.library.get_ctx().new_dynamic_size()
    return tuple(colptr.new_empty(num_edges, dtype=torch.long)
                 for _ in range(3))


@torch.library.register_fake('fusesample::csc_from_coo')
def _csc_from_coo_fake(row, col, num_nodes):
    return (row.new_empty(num_nodes + 1, dtype=torch.long),
            row.new_empty(row.numel(), dtype=torch.long),
            row.new_empty(row.numel(), dtype=torch.long))


@torch.library.register_fake('fusesample::gather_rows')
def _gather_rows_fake(src, index, check_index=True):
    return src.new_empty((index.numel(), *src.shape[1:]), device=index.device)


@torch.library.register_fake('fusesample::gather_rows_cached')
def _gather_rows_cached_fake(src, cache, cache_slot, index, hits):
    return src.new_empty((index.numel(), *src.shape[1:]), device=index.device)
