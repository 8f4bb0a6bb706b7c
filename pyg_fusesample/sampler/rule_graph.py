"""The CSC that temporal and weighted sampling read, built once per graph.

``fusesample::neighbor_sample`` narrows each segment (a node's in-edges, of
one edge type in a typed CSC) by a rule (``kernels/sampler/segment_rule.h``):

* temporal: the segment's in-edges sorted by time, so the in-edges no later
  than a seed's time are a prefix, found by binary search;
* weighted: the zero-weight in-edges left out (they are never drawn), and
  the per-segment inclusive prefix sums of the weights (float64, each
  segment summed from zero: ``fusesample::segment_cumsum``, so a segment's
  bits are the same in any graph holding it, a partition's part included),
  so draws are binary searches;
* both (weights and time): the zero-weight in-edges left out, the others
  sorted by time, and the prefix sums of their weights in that order: the
  prefix a seed's time admits is drawn from by weight.

All keep the slots' order within each segment, up to the temporal sort,
and ``row`` and ``edge_id`` together, so the op's output edge ids still name
the original edges. The reordering is done on the CPU: the prefix sums
must be the same bits for the CPU and CUDA kernels to draw alike.
"""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..ops import segment_cumsum
from .graph_store import CSCGraph


@dataclass(frozen=True)
class RuleCSC:
    r"""A :class:`CSCGraph` reordered within segments, with what the op's
    rule reads: ``edge_time`` ([E] int64 per slot, sorted within each
    segment) and / or ``weight_cumsum`` ([E] float64 per slot)."""
    graph: CSCGraph
    edge_time: Optional[Tensor] = None
    weight_cumsum: Optional[Tensor] = None

    def to(self, device) -> 'RuleCSC':
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return RuleCSC(self.graph.to(device), move(self.edge_time),
                       move(self.weight_cumsum))


def segment_of_slots(colptr: Tensor) -> Tensor:
    r"""The segment (the target node, in an untyped CSC) of every CSC
    slot, on the device of :obj:`colptr`."""
    counts = colptr[1:] - colptr[:-1]
    return torch.repeat_interleave(
        torch.arange(counts.numel(), device=colptr.device), counts)


def _reorder(graph: CSCGraph, key: Tensor) -> tuple:
    # A stable order of the slots by (segment, key): sort by key, then
    # stably by segment. Returns the permuted graph and the permutation.
    colptr = graph.colptr.cpu()
    by_key = torch.sort(key, stable=True).indices
    segment = segment_of_slots(colptr)[by_key]
    perm = by_key[torch.sort(segment, stable=True).indices]
    edge_id = graph.edge_id.cpu()[perm] if graph.edge_id is not None else perm
    reordered = CSCGraph(colptr, graph.row.cpu()[perm], edge_id, graph.num_nodes)
    return reordered, perm


def slot_values(graph: CSCGraph, per_edge: Tensor) -> Tensor:
    r"""An edge-level attribute in CSC slot order (``per_edge`` indexed by
    the edge ids the graph stores)."""
    edge_id = graph.edge_id
    per_edge = per_edge.cpu()
    return per_edge if edge_id is None else per_edge[edge_id.cpu()]


def temporal_csc(graph: CSCGraph, slot_time: Tensor) -> RuleCSC:
    r"""Sorts every segment's in-edges by :obj:`slot_time` (one int64 time
    per CSC slot, e.g. the edge's time or its source node's time); ties keep
    their order."""
    slot_time = slot_time.cpu().to(torch.long)
    reordered, perm = _reorder(graph, slot_time)
    return RuleCSC(reordered, edge_time=slot_time[perm].contiguous()).to(
        graph.device)


def weighted_csc(graph: CSCGraph, slot_weight: Tensor) -> RuleCSC:
    r"""Drops the zero-weight in-edges (never drawn, so never read) and adds
    the per-segment prefix sums of :obj:`slot_weight` (one weight per CSC
    slot, finite and non-negative), in float64."""
    kept, w, _ = _positive_weights(graph, slot_weight)
    return RuleCSC(kept, weight_cumsum=_segment_prefix_sums(kept.colptr, w)
                   ).to(graph.device)


def weighted_temporal_csc(graph: CSCGraph, slot_weight: Tensor,
                          slot_time: Tensor) -> RuleCSC:
    r"""Both rules: the zero-weight in-edges dropped, every segment's other
    in-edges sorted by :obj:`slot_time` (ties keep their order), and the
    per-segment prefix sums of their weights in that order, so that the
    prefix a seed's time admits is drawn from by weight."""
    kept, w, ids = _positive_weights(graph, slot_weight)
    slot_time = slot_time.cpu().to(torch.long)[ids]
    reordered, perm = _reorder(kept, slot_time)
    return RuleCSC(reordered, edge_time=slot_time[perm].contiguous(),
                   weight_cumsum=_segment_prefix_sums(reordered.colptr,
                                                      w[perm])
                   ).to(graph.device)


def _positive_weights(graph: CSCGraph, slot_weight: Tensor) -> tuple:
    # The graph without its zero-weight slots, their weights (float64) and
    # the kept slots' positions in the given graph.
    w = slot_weight.cpu().to(torch.float64)
    colptr = graph.colptr.cpu()
    keep = w > 0
    # Kept slots before each slot position: the new segment boundaries.
    kept_before = torch.cat([torch.zeros(1, dtype=torch.long),
                             torch.cumsum(keep.long(), 0)])
    colptr = kept_before[colptr]
    ids = keep.nonzero().view(-1)
    edge_id = graph.edge_id.cpu()[ids] if graph.edge_id is not None else ids
    kept = CSCGraph(colptr, graph.row.cpu()[ids], edge_id, graph.num_nodes)
    return kept, w[ids], ids


def _segment_prefix_sums(colptr: Tensor, w: Tensor) -> Tensor:
    # Per-segment inclusive prefix sums, each segment from zero: the same
    # bits for a segment wherever it lies (a partition's part gives the
    # whole graph's sums for the same in-edges).
    return segment_cumsum(colptr.contiguous(), w.contiguous())
