"""A mini-batch's edges grouped by target: what the mini-batch layers read.

A layer aggregates each target's in-edges. PyG's ``edge_index`` lists edges
in any order, so PyG scatters messages with atomics; the fused loaders emit
every batch with its edges already grouped by target (hop by hop, targets in
node order), which makes aggregation a segment reduction: a pointer per
target, no sort, no atomics, and a deterministic backward.

:class:`TargetLayout` is that grouping for one call: ``ptr`` (``[T + 1]``),
the source of each slot ``src`` and its target ``dst``, and, for an edge
list that had to be sorted, ``perm`` (slot -> position in the given
``edge_index``, to reorder edge attributes).

:func:`target_layout` returns it for an ``edge_index`` and the number of
source and target rows:

* a batch from a fused loader (registered with :func:`register_batch`) or a
  prefix of it (PyG's ``trim_to_layer`` narrows ``edge_index`` to the
  edges of the first hops) needs no sort and no check: the loader made it,
  and the bounds follow from its per-hop counts on the host;
* any other ``edge_index`` is checked (ids in range: one host read on a GPU)
  and sorted by target once per tensor (memoised, like the sampler's CSC),
  so a full-graph model pays once, but each new tensor pays again.
"""
import warnings
import weakref
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import Callable, Dict, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .edge_index_checks import check_ids_in_range
from .tensor_memo import TensorMemo

# edge_index tensors the fused loaders made -> (counts, cache)
_batches = TensorMemo()
# (device, dtype, data address, strides) of those tensors -> the tensor,
# weakly: a prefix of one (trim_to_layer's narrow) has its address and
# strides, whatever its _base (a hetero batch's edge_index tensors are views
# of one buffer, which _base names).
_by_address: Dict[tuple, weakref.ref] = {}
# other edge_index tensors -> {(num_src, num_dst): their sorted layout}
_layouts = TensorMemo()
_warned_sorts = [0]


@dataclass(eq=False)
class TargetLayout:
    r"""Slots ``ptr[i]:ptr[i + 1]`` of :obj:`src` (rows of the source
    features) aggregate into target row ``i``; :obj:`dst` is the target of
    each slot (``dst[s] = i``). :obj:`perm` maps slots to positions in the
    ``edge_index`` the layout was made from (``None``: the identity).
    :obj:`active` (a host integer, ``None``: every row) bounds the rows that
    can have slots: rows ``active:`` have none (a fused loader's batch
    knows it from its per-hop counts: the last hop's nodes are sources
    only). :obj:`batch_order` (``None``: none) returns the grouping by
    source of the whole batch whose prefix this layout is, or ``None``
    where it does not serve (:meth:`source_order`)."""
    ptr: Tensor
    src: Tensor
    dst: Tensor
    num_src: int
    perm: Optional[Tensor] = None
    active: Optional[int] = None
    batch_order: Optional[Callable[[], Optional[Tuple]]] = field(
        default=None, repr=False)
    _cache: Dict = field(default_factory=dict, repr=False)

    @property
    def num_dst(self) -> int:
        return self.ptr.numel() - 1

    @property
    def num_active(self) -> int:
        r"""The leading target rows that can have slots (the rest have
        none)."""
        return self.num_dst if self.active is None else self.active

    def active_rows(self) -> 'TargetLayout':
        r"""This layout over its first :attr:`num_active` target rows only
        (the same slots: a layer aggregates, and multiplies, just the rows
        that can receive anything; the others' aggregation is empty)."""
        if self.active is None or self.active == self.num_dst:
            return self
        part = self._cache.get('active_rows')
        if part is None:
            part = self._cache['active_rows'] = TargetLayout(
                self.ptr.narrow(0, 0, self.active + 1), self.src, self.dst,
                self.num_src, self.perm, batch_order=self.batch_order)
        return part

    @property
    def num_slots(self) -> int:
        return self.src.numel()

    def in_layout_order(self, edge_attr: Optional[Tensor],
                        name: str = 'edge_attr') -> Optional[Tensor]:
        r"""An edge attribute (``[E, ...]`` in ``edge_index`` order) in slot
        order. One of another length is refused here (a shape check, no
        sync): read by slot, it would be read out of bounds."""
        if edge_attr is None:
            return edge_attr
        if edge_attr.dim() == 0 or edge_attr.size(0) != self.num_slots:
            raise ValueError(
                f"'{name}' has {edge_attr.size(0) if edge_attr.dim() else 0} "
                f"rows but 'edge_index' has {self.num_slots} edges")
        if self.perm is None:
            return edge_attr
        return edge_attr.index_select(0, self.perm)

    def degree(self) -> Tensor:
        r"""In-degree of every target (slots per row), int64."""
        if 'degree' not in self._cache:
            self._cache['degree'] = self.ptr[1:] - self.ptr[:-1]
        return self._cache['degree']

    def source_order(self) -> Optional[Tuple[Tensor, Tensor, Tensor]]:
        r"""The slots grouped by source (``fusesample::segment_source_order``
        of :obj:`src`: sorted sources, slots, pointer), made once per layout
        and shared by the backwards that sum per source over these slots (a
        GAT layer's aggregation and its source scores' gather: one sort, not
        two). A prefix of a fused loader's batch (a trimmed layer's) takes
        the order of the whole batch's edges instead, made once per batch
        (:obj:`batch_order`): a model's layers share one sort, the backward
        skipping the slots and sources past the prefix's. ``None`` where no
        kernel reads it: on the CPU (whose kernel sums without a sort) and
        under ``torch.compile`` (each traced op has its own layout; its
        backward is traced with fake tensors, where ``is_compiling()`` is
        already false)."""
        if not _reads_order(self.src) or torch.compiler.is_compiling():
            return None
        if 'source_order' not in self._cache:
            order = None if self.batch_order is None else self.batch_order()
            self._cache['source_order'] = order if order is not None else \
                tuple(torch.ops.fusesample.segment_source_order(
                    self.src, self.num_src))
        return self._cache['source_order']


def _reads_order(src: Tensor) -> bool:
    # A real CUDA tensor: the CUDA backward reads a shared order; the CPU
    # one sums without it, and a traced (fake, functional) tensor is not
    # one to sort.
    return type(src) is Tensor and src.is_cuda


@dataclass(frozen=True)
class BatchCounts:
    r"""What a fused loader knows of a batch it made: edges through hop ``h``
    (``edges[h]``, ``edges[0] = 0``) and nodes of the source (target) type
    through hop ``h`` (``src_nodes[h]``, ``dst_nodes[h]``; one type in a
    homogeneous batch): an edge of hop ``h`` reads a source of hops ``<= h``
    and writes a target of hops ``< h``."""
    src_nodes: tuple
    dst_nodes: tuple
    edges: tuple


def _cumulative(counts: Sequence[int]) -> tuple:
    return tuple(accumulate(int(n) for n in counts))


def register_batch(edge_index: Tensor, num_sampled_nodes: Sequence[int],
                   num_sampled_edges: Sequence[int],
                   num_sampled_dst_nodes: Optional[Sequence[int]] = None
                   ) -> None:
    r"""Marks :obj:`edge_index` as a fused loader's batch: edges grouped by
    target, grouped by hop with :obj:`num_sampled_edges` per hop, over
    source nodes grouped by hop with :obj:`num_sampled_nodes` per hop and
    target nodes with :obj:`num_sampled_dst_nodes` (default: the same:
    homogeneous), host integers. For the loaders' use: a tensor registered
    here is trusted, not checked. An empty one is not registered (loaders
    share one empty tensor between edge types)."""
    if edge_index.numel() == 0:
        return
    src = _cumulative(num_sampled_nodes)
    dst = src if num_sampled_dst_nodes is None else \
        _cumulative(num_sampled_dst_nodes)
    counts = BatchCounts(src, dst, (0, ) + _cumulative(num_sampled_edges))
    # (the entry holds no reference to the tensor: the memo must not keep
    # a batch alive)
    _batches.put(edge_index, (counts, {}))
    key = _address(edge_index)
    old = _by_address.get(key)
    if old is None or old() is not edge_index:  # (one finaliser per tensor)
        ref = weakref.ref(edge_index)
        _by_address[key] = ref
        weakref.finalize(edge_index, _forget_address, key, ref)


def _address(t: Tensor) -> tuple:
    return (t.device, t.dtype, t.data_ptr(), t.stride())


def _forget_address(key: tuple, ref: weakref.ref) -> None:
    # (a tensor registered later at the same address keeps its entry)
    if _by_address.get(key) is ref:
        del _by_address[key]


def register_checked_batch(edge_index: Tensor,
                           num_sampled_nodes: Sequence[int],
                           num_sampled_edges: Sequence[int]) -> bool:
    r"""Registers an ``edge_index`` no fused loader made (PyG's loader's
    batch, or a fused loader's batch moved with ``.to(device)``) after
    checking that it has the layout :func:`register_batch` trusts: edges
    grouped by hop as the counts say, hop ``h``'s sources among the nodes
    of hops ``<= h`` and its targets among those of hop ``h - 1``, targets
    sorted. One host read on a GPU (a batch's trimmed layers then need
    none); returns whether it was registered."""
    nodes = _cumulative(num_sampled_nodes)
    edges = (0, ) + _cumulative(num_sampled_edges)
    if edge_index.dim() != 2 or edge_index.size(0) != 2 or \
            edge_index.size(1) != edges[-1] or len(nodes) < len(edges):
        return False
    if edge_index.size(1) == 0:  # (an empty one needs no layout)
        return False
    src, dst = edge_index[0], edge_index[1]
    device = edge_index.device
    hop = torch.searchsorted(
        torch.tensor(edges[1:], device=device),
        torch.arange(edge_index.size(1), device=device), right=True)
    bounds = torch.tensor((0, ) + nodes, device=device)
    # hop index i (hop i + 1): sources < nodes[i + 1], targets in
    # [nodes[i - 1], nodes[i]) (0 below the seeds)
    bad = (src < 0) | (src >= bounds[hop + 2]) | (dst < bounds[hop]) | \
        (dst >= bounds[hop + 1])
    unsorted = dst[1:] < dst[:-1]
    if bool(torch.stack([bad.any(), unsorted.any()]).any()):
        return False
    register_batch(edge_index, num_sampled_nodes, num_sampled_edges)
    return True


def register_hetero_batch(batch) -> None:
    r""":func:`register_batch` for every edge type of a fused loader's
    ``HeteroData`` batch (per type: its ``num_sampled_edges``, its source
    and target types' ``num_sampled_nodes``)."""
    for src, rel, dst in batch.edge_types:
        store = batch[src, rel, dst]
        edges = store.get('num_sampled_edges')
        nodes_src = batch[src].get('num_sampled_nodes')
        nodes_dst = batch[dst].get('num_sampled_nodes')
        if edges is None or nodes_src is None or nodes_dst is None or \
                'edge_index' not in store:
            continue
        register_batch(store.edge_index, nodes_src, edges, nodes_dst)


def _batch_entry(edge_index: Tensor):
    # (counts, the registered tensor, its cache) of a registered batch or of
    # a prefix of one, else None.
    entry = _batches.get(edge_index)
    if entry is not None:
        return entry[0], edge_index, entry[1]
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        return None
    ref = _by_address.get(_address(edge_index))
    base = ref() if ref is not None else None
    entry = None if base is None else _batches.get(base)
    if entry is None or edge_index.size(1) not in entry[0].edges:
        return None
    return entry[0], base, entry[1]


def batch_counts(edge_index: Tensor) -> Optional[BatchCounts]:
    r"""The per-hop counts of a registered batch (or of a prefix of one, as
    PyG's ``trim_to_layer`` makes: ``edge_index.narrow(1, 0, E')`` ending
    on a hop boundary), else ``None``."""
    entry = _batch_entry(edge_index)
    return None if entry is None else entry[0]


def _trusted(counts: BatchCounts, num_edges: int, num_src: int,
             num_dst: int) -> bool:
    # Edges of hops 1..h read nodes of hops <= h and write those of hops < h.
    h = bisect_left(counts.edges, num_edges)
    if h >= len(counts.edges) or counts.edges[h] != num_edges:
        return False
    reads = counts.src_nodes[min(h, len(counts.src_nodes) - 1)]
    writes = counts.dst_nodes[h - 1] if h > 0 else 0
    return num_src >= reads and writes <= num_dst <= counts.dst_nodes[-1]


def target_layout(edge_index: Tensor, num_src: int, num_dst: int,
                  owner: str) -> TargetLayout:
    r"""The :class:`TargetLayout` of :obj:`edge_index` (``[2, E]``, row =
    source, col = target) over :obj:`num_src` source and :obj:`num_dst`
    target rows. :obj:`owner` names the caller in errors (ids out of range
    raise ``ValueError``). A batch of a fused loader (or a prefix of one) is
    read as it is; any other tensor is checked and sorted once (memoised
    per tensor, version and shape)."""
    if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 \
            or edge_index.size(0) != 2:
        raise ValueError(f"{owner}: 'edge_index' must be a tensor of shape "
                         f"[2, num_edges], got "
                         f"{getattr(edge_index, 'shape', type(edge_index))}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{owner}: 'edge_index' must be int64 (or int32), "
                         f"got {edge_index.dtype}")
    E, num_src, num_dst = edge_index.size(1), int(num_src), int(num_dst)
    src, dst = edge_index[0], edge_index[1]
    entry = _batch_entry(edge_index)
    if entry is not None and _trusted(entry[0], E, num_src, num_dst):
        # Views of the batch's own edge_index, so not memoised: a memo entry
        # holding views of its key would keep every batch alive.
        return TargetLayout(_prefix_ptr(entry, E, num_dst), src, dst, num_src,
                            active=_written_rows(entry[0], E, num_dst),
                            batch_order=partial(_batch_order, entry, num_src))
    if E == 0:  # (an edge type without edges)
        return TargetLayout(torch.zeros(num_dst + 1, dtype=torch.long,
                                        device=dst.device), src, dst, num_src,
                            active=0)
    memo = _layouts.setdefault(edge_index, dict)
    layout = memo.get((num_src, num_dst))
    if layout is None:
        layout = memo[num_src, num_dst] = _sorted(src, dst, num_src, num_dst,
                                                  edge_index, owner)
    return layout


def _written_rows(counts: BatchCounts, num_edges: int, num_dst: int) -> int:
    # The edges of hops 1..h write the targets of hops < h only.
    h = counts.edges.index(num_edges)
    return 0 if h == 0 else min(num_dst, counts.dst_nodes[h - 1])


def _sorted(src: Tensor, dst: Tensor, num_src: int, num_dst: int,
            edge_index: Tensor, owner: str) -> TargetLayout:
    # Any other edge_index: checked, then sorted by target (stable). Every
    # tensor of the layout is new, none a view of edge_index.
    check_ids_in_range(src, num_src, 'edge_index[0]', owner,
                       bound_name='the source rows (x.size(0))')
    check_ids_in_range(dst, num_dst, 'edge_index[1]', owner,
                       bound_name='the target rows')
    _note_sort(edge_index)
    dst, perm = torch.sort(dst, stable=True)
    src = src.index_select(0, perm)
    bounds = torch.arange(num_dst + 1, dtype=dst.dtype, device=dst.device)
    ptr = torch.searchsorted(dst, bounds)
    return TargetLayout(ptr, src, dst, num_src, perm)


def _prefix_ptr(entry, num_edges: int, num_dst: int) -> Tensor:
    # The batch's target pointer over all its nodes, once per batch; a
    # prefix of the edges (hops 1..h) is a prefix of the slots, so its
    # pointer is a slice (clamped where rows past the prefix's targets are
    # asked for: they have no slots in it).
    counts, base, cache = entry
    full = cache.get('ptr')
    if full is None:
        dst = base[1]
        bounds = torch.arange(counts.dst_nodes[-1] + 1, dtype=dst.dtype,
                              device=dst.device)
        full = cache['ptr'] = torch.searchsorted(dst, bounds)
    h = counts.edges.index(num_edges)
    ptr = full.narrow(0, 0, num_dst + 1)
    return ptr if num_dst <= counts.dst_nodes[max(h - 1, 0)] else \
        ptr.clamp(max=num_edges)


def _batch_order(entry, num_src: int) -> Optional[Tuple]:
    # The grouping by source of the batch's whole edge list, once per batch:
    # a prefix's sources (< num_src) and slots (< its E) are the first of
    # each source's run in it (the sort is stable). None for a layout over
    # more source rows than the batch has nodes (their pointers would be
    # past the order's).
    counts, base, cache = entry
    n = counts.src_nodes[-1]
    if num_src > n:
        return None
    if 'source_order' not in cache:
        cache['source_order'] = tuple(
            torch.ops.fusesample.segment_source_order(base[0], n))
    return cache['source_order']


def _note_sort(edge_index: Tensor):
    # A sort (and a host read) per new edge_index is the slow path on a GPU:
    # said once, when it happens for a second tensor.
    _warned_sorts[0] += 1
    if _warned_sorts[0] == 2 and edge_index.is_cuda:
        warnings.warn(
            "pyg_fusesample.nn: an 'edge_index' not made by a fused loader is "
            "checked (one host read) and sorted by target once per tensor; "
            "batches from FusedNeighborLoader / FusedLinkNeighborLoader (and "
            "their trim_to_layer prefixes) need neither", stacklevel=4)

