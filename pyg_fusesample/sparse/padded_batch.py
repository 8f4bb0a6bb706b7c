"""A fused loader's batches padded to fixed per-hop capacities: the form a
training step captured once in a CUDA graph replays on
(:class:`~pyg_fusesample.nn.CapturedBatchStep`).

A sampled batch is a new shape every step, so a step cannot be replayed as
it is. Its layout is regular, though: nodes hop by hop (hop 0: the seeds),
edges hop by hop, those of hop ``h`` reading sources of hops ``<= h`` and
writing targets of hop ``h - 1``, grouped by target. A
:class:`BatchCapacity` gives each hop of each node type a block of rows
(its nodes, then at least one pad row) and each hop of each edge type a
block of slots (its edges, then pad edges). Pad edges go from the last row
of their source hop to the last row of their target hop, so pad rows feed
pad rows only: every real row of every layer computes what it computed on
the unpadded batch, trimmed layers included (the padded batch's per-hop
counts are the capacities), and the targets stay grouped. A loss over the
seeds (``out[:batch_size]``) and its gradients are the unpadded batch's.

:class:`PaddedBatch` holds one padded batch in fixed tensors (a CUDA
graph's inputs) and refills them from each new batch: per node attribute a
copy per hop, per edge type one ``fusesample::pad_edge_index`` call (the
ids moved to their padded rows, the pad edges written), per other edge
attribute a copy per hop (all of a batch's copies in one
``fusesample::copy_row_blocks`` launch). Rows and slots a batch leaves
unused keep what an earlier batch put there: they are read by pad rows
only.
"""
import math
from dataclasses import dataclass
from itertools import accumulate
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from .. import _extension  # noqa: F401  (registers the ops)
from .target_layout import register_batch

# a homogeneous batch's single node / edge type
HOMOGENEOUS = None


def _cumulative(counts) -> List[int]:
    return [0, *accumulate(int(c) for c in counts)]


# (isinstance, not hasattr: a Data answers a missing attribute through its
# __getattr__ and a raised AttributeError, ~2 us of a step's host time each)
def node_stores_of(batch) -> Dict:
    r"""``{node type: store}`` of a batch (``{None: batch}`` for a
    ``Data``)."""
    if isinstance(batch, HeteroData):
        return {t: batch[t] for t in batch.node_types}
    return {HOMOGENEOUS: batch}


def edge_stores_of(batch) -> Dict:
    r"""``{edge type: store}`` of a batch (``{None: batch}`` for a
    ``Data``)."""
    if isinstance(batch, HeteroData):
        return {t: batch[t] for t in batch.edge_types}
    return {HOMOGENEOUS: batch}


def _ends(edge_type) -> Tuple:
    return (HOMOGENEOUS, HOMOGENEOUS) if edge_type is HOMOGENEOUS else (
        edge_type[0], edge_type[-1])


def batch_counts_of(batch) -> Tuple[Dict, Dict]:
    r"""``({node type: nodes per hop}, {edge type: edges per hop})`` of a
    fused loader's batch (``None`` keys for a homogeneous one); raises
    ``ValueError`` for a batch without them."""
    return (_counts(node_stores_of(batch), 'num_sampled_nodes'),
            _counts(edge_stores_of(batch), 'num_sampled_edges'))


def _counts(stores: Dict, key: str) -> Dict:
    out = {}
    for t, store in stores.items():
        try:  # (a store's item, not its attribute: ~10x faster on a Data)
            counts = store[key]
        except KeyError:
            counts = None
        if counts is None:
            raise ValueError(
                f"padded batches need a fused loader's batch: "
                f"{'the batch' if t is None else repr(t)} has no {key!r}")
        out[t] = tuple(map(int, counts))
    return out


@dataclass(frozen=True)
class BatchCapacity:
    r"""Rows per hop of every node type and slots per hop of every edge
    type of a padded batch (``None`` keys: a homogeneous batch)."""
    nodes: Dict
    edges: Dict

    @classmethod
    def of(cls, batch, margin: float = 0.1,
           at_least: Optional['BatchCapacity'] = None) -> 'BatchCapacity':
        r"""Room for :obj:`batch` and, per hop, :obj:`margin` more (nodes:
        plus the pad row; edges: at least 16 slots), and never less than
        :obj:`at_least` (a capacity grown for a larger batch)."""
        nodes, edges = batch_counts_of(batch)

        def room(n: int, extra: int) -> int:
            return math.ceil(n * (1 + margin)) + extra

        def grow(old: Dict, new: Dict, extra: int) -> Dict:
            out = {}
            for t, counts in new.items():
                prev = old.get(t, ()) if old is not None else ()
                out[t] = tuple(max(room(c, extra),
                                   prev[h] if h < len(prev) else 0)
                               for h, c in enumerate(counts))
            return out
        return cls(grow(at_least and at_least.nodes, nodes, 1),
                   grow(at_least and at_least.edges, edges, 16))

    def holds(self, batch) -> bool:
        r"""Whether :obj:`batch` (same types, same hops) fits: every hop's
        nodes with a pad row to spare, every hop's edges."""
        return self.holds_counts(*batch_counts_of(batch))

    def holds_counts(self, nodes: Dict, edges: Dict) -> bool:
        r""":meth:`holds` for a batch's counts (:func:`batch_counts_of`)."""
        return _fits(nodes, self.nodes, 1) and _fits(edges, self.edges, 0)


def _fits(counts: Dict, capacity: Dict, spare: int) -> bool:
    if counts.keys() != capacity.keys():
        return False
    for t, c in counts.items():
        cap = capacity[t]
        if len(c) != len(cap):
            return False
        for n, room in zip(c, cap):
            if n + spare > room:
                return False
    return True


class PaddedBatch:
    r"""One batch padded to :obj:`capacity`, in tensors allocated once
    (:attr:`batch`, of the example's class: ``Data`` or ``HeteroData``) that
    :meth:`fill` overwrites with each new batch.

    Node attributes (``x``, ``y``, ``n_id``, masks, ...) get the capacity's
    rows, edge attributes (``e_id``, ``edge_attr``, ``edge_type``, ...) its
    slots; other tensors (``input_id``, a link batch's ``edge_label_index``
    over the seeds, which keep their ids) must keep their shape from batch
    to batch; ``num_sampled_nodes`` / ``num_sampled_edges`` (and
    ``num_nodes``) are the capacity's, ``batch_size`` the example's. The
    padded ``edge_index`` tensors are registered as fused loader batches,
    so the mini-batch layers read them without a check or a sort.

    Args:
        example: a fused loader's batch (``Data`` or ``HeteroData``).
        capacity (BatchCapacity): rows and slots per hop.
        attrs (List[str], optional): the tensor attributes to pad and refill
            (``edge_index`` always; of every node and edge type); the
            others are left out of the padded batch. Default: all. Each
            one costs a copy per hop at every :meth:`fill`.
    """
    def __init__(self, example, capacity: BatchCapacity,
                 attrs: Optional[Sequence[str]] = None):
        if not capacity.holds(example):
            raise ValueError("PaddedBatch: the example batch does not fit "
                             "the capacity")
        self.capacity = capacity
        # (cumulative capacities, per type)
        self._rows = {t: _cumulative(c) for t, c in capacity.nodes.items()}
        self._slots = {t: _cumulative(c) for t, c in capacity.edges.items()}
        self.batch = example.__class__()
        # (padded tensor, 0 for node rows or 1 for edge slots, type, key) of
        # the node and edge tensors; (padded store, its key, key) of the
        # fixed-shape ones (_fixed_copy); after these, (type, padded
        # edge_index, source type, target type) of the edge types (_pads)
        self._pairs: List[Tuple] = []
        self._fixed: List[Tuple] = []
        self._constant: List[Tuple] = []
        keep = None if attrs is None else set(attrs) | {'edge_index'}

        def skip(key: str, value) -> bool:
            # (a tensor left out: the step does not read it)
            return keep is not None and isinstance(value, Tensor) and \
                key not in keep
        for t, store in node_stores_of(example).items():
            out = self.batch if t is HOMOGENEOUS else self.batch[t]
            rows = sum(capacity.nodes[t])
            for key, value in store.items():
                if key == 'num_sampled_nodes':
                    out[key] = list(capacity.nodes[t])
                elif key == 'num_nodes':
                    out[key] = rows
                elif key in ('edge_index', 'num_sampled_edges') or \
                        (t is HOMOGENEOUS and store.is_edge_attr(key)) or \
                        skip(key, value):
                    continue  # (the edge pass below, or left out)
                elif isinstance(value, Tensor) and store.is_node_attr(key):
                    out[key] = value.new_zeros((rows, ) + value.shape[1:])
                    self._pairs.append((out[key], 0, t, key))
                else:
                    out[key] = self._fixed_copy(out, key, value)
            if 'num_nodes' not in store:
                out.num_nodes = rows
        for t, store in edge_stores_of(example).items():
            out = self.batch if t is HOMOGENEOUS else self.batch[t]
            slots = sum(capacity.edges[t])
            for key, value in store.items():
                if skip(key, value):
                    continue
                if key == 'num_sampled_edges':
                    out[key] = list(capacity.edges[t])
                elif key == 'edge_index':
                    out[key] = value.new_zeros((2, slots))
                elif isinstance(value, Tensor) and store.is_edge_attr(key):
                    out[key] = value.new_zeros((slots, ) + value.shape[1:])
                    self._pairs.append((out[key], 1, t, key))
                elif t is not HOMOGENEOUS:
                    out[key] = self._fixed_copy(out, key, value)
        self._pads = [(t, store.edge_index) + _ends(t)
                      for t, store in edge_stores_of(self.batch).items()]
        self.fill(example)

    def _fixed_copy(self, out, key: str, value):
        # A tensor of no node or edge dimension: a copy refilled per batch
        # (its shape must not change); anything else (batch_size, ...) as
        # it is, and the same in every batch filled in.
        # (kept with the key of the store they are in: HOMOGENEOUS for a
        # batch's own, a type's for its store's; _get)
        store_key = getattr(out, '_key', None)
        if not isinstance(value, Tensor):
            if key == 'batch_size':
                self._constant.append((store_key, key, value))
            return value
        self._fixed.append((out, store_key, key))
        return value.clone()

    def register(self) -> None:
        r"""(Re-)registers the padded ``edge_index`` tensors as fused loader
        batches with the capacity's counts; this also drops what layers
        cached per batch (their target pointers), so that a capture that
        follows computes them in the graph."""
        for t, edge_index, src, dst in self._pads:
            register_batch(edge_index, self.capacity.nodes[src],
                           self.capacity.edges[t], self.capacity.nodes[dst])

    def fits(self, batch) -> bool:
        r"""Whether :meth:`fill` can take :obj:`batch`: it fits the capacity
        and :meth:`same_fixed` holds."""
        return self.capacity.holds(batch) and self.same_fixed(batch)

    def same_fixed(self, batch) -> bool:
        r"""Whether :obj:`batch`'s tensors of no node or edge dimension have
        the padded batch's shapes and its other values (``batch_size``, ...)
        are the padded batch's."""
        try:
            return all(_get(batch, t, key).shape == out[key].shape
                       for out, t, key in self._fixed) and all(
                _get(batch, t, key) == value
                for t, key, value in self._constant)
        except (AttributeError, KeyError):
            return False

    def fill(self, batch) -> None:
        r"""Copies :obj:`batch` into the padded tensors (on their stream, no
        host synchronisation). Raises ``ValueError`` if it does not fit."""
        if not self.try_fill(batch):
            raise ValueError("PaddedBatch.fill: the batch does not fit the "
                             "capacity (or a fixed-shape tensor changed "
                             "shape); make a PaddedBatch with a larger one")

    def try_fill(self, batch, register: bool = True) -> bool:
        r""":meth:`fill` if :obj:`batch` fits (returns ``True``), else
        nothing (``False``). With :obj:`register` (default), the padded
        ``edge_index`` tensors are registered again (:meth:`register`): a
        new layout in the same tensors, so what layers cached for the last
        one must go (``pad_edge_index``'s writes move no version counter).
        A CUDA graph's replays read none of those caches."""
        # (every step of a captured training step runs this before its
        # replay, on the host, while the GPU waits: a synchronised arXiv-
        # sized step is ~0.6 ms, so the work per pair and hop is kept to a
        # few list operations)
        nodes, edges = batch_counts_of(batch)
        if not (self.capacity.holds_counts(nodes, edges) and
                self.same_fixed(batch)):
            return False
        real = ({t: _cumulative(c) for t, c in nodes.items()},
                {t: _cumulative(c) for t, c in edges.items()})
        padded = (self._rows, self._slots)
        # every copy in one call per device (a Python loop of copies, or a
        # view per block, costs more host time than the copies take on the
        # GPU; a batch may keep some tensors on the host): (dsts, srcs,
        # blocks) of the pairs a launch takes, (pair, dst_row, src_row,
        # rows) per hop block; the others (casts, strides, another device
        # than their source's) by views
        launches: Dict[torch.device, Tuple[List, List, List]] = {}
        views: List[Tuple] = []  # (copied once every pair is checked)
        for dst, kind, t, key in self._pairs:
            src = _get(batch, t, key)
            if dst.shape[1:] != src.shape[1:]:  # (a copy would broadcast)
                raise ValueError(
                    f"PaddedBatch: a batch's tensor has rows of shape "
                    f"{list(src.shape[1:])} where the padded batch's have "
                    f"{list(dst.shape[1:])}")
            _plan_copy(launches, views, dst, src, real[kind][t],
                       padded[kind][t])
        for out, t, key in self._fixed:
            _plan_copy(launches, views, out[key], _get(batch, t, key), None,
                       None)
        for view in views:
            _copy_views(*view)
        for dsts, srcs, flat in launches.values():
            torch.ops.fusesample.copy_row_blocks(dsts, srcs, flat)
        rows, slots = real
        for t, edge_index, src_t, dst_t in self._pads:
            torch.ops.fusesample.pad_edge_index(
                _get(batch, t, 'edge_index'), slots[t], self._slots[t],
                rows[src_t], self._rows[src_t], rows[dst_t], self._rows[dst_t],
                edge_index)
        if register:
            self.register()
        return True


def _plan_copy(launches: Dict, views: List[Tuple], dst: Tensor, src: Tensor,
               real: Optional[List[int]], padded: Optional[List[int]]) -> None:
    # dst <- src into its device's launch (try_fill) as hop h's rows
    # (real[h]:real[h + 1]) to the start of hop h's block (padded[h]), or
    # whole without hops; into `views` where a launch cannot take it
    if dst.dtype != src.dtype or dst.device != src.device or \
            not (src.is_contiguous() and dst.is_contiguous()):
        views.append((dst, src, real, padded))
        return
    dsts, srcs, flat = launches.setdefault(dst.device, ([], [], []))
    k = len(dsts)
    dsts.append(dst)
    srcs.append(src)
    if real is None:
        flat += (k, 0, 0, dst.size(0) if dst.dim() else 1)
        return
    for h in range(len(real) - 1):
        flat += (k, padded[h], real[h], real[h + 1] - real[h])


def _copy_views(dst: Tensor, src: Tensor, real: Optional[List[int]],
                padded: Optional[List[int]]) -> None:
    # hop h's rows (real[h]:real[h + 1]) to the start of hop h's block of
    # dst (padded[h]:...), a view each (torch's copy: casts, strides,
    # devices); the whole tensor without hops
    if real is None:
        dst.copy_(src, non_blocking=True)
        return
    for h in range(len(real) - 1):
        rows = real[h + 1] - real[h]
        if rows > 0:
            dst.narrow(0, padded[h], rows).copy_(
                src.narrow(0, real[h], rows), non_blocking=True)


def _get(batch, t, key: str) -> Tensor:
    # `batch`'s value `key` of node or edge type `t` (HOMOGENEOUS: of the
    # batch's own store)
    if t is HOMOGENEOUS:
        return batch[key]
    return batch[t][key]
