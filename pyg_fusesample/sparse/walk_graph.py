"""The out-edge CSR that random walks read, built once per graph.

A walk step from ``v`` draws one of ``v``'s out-edges, so walks read a CSR
over sources (PyG's Node2Vec builds the same ``rowptr``/``col``). Two
things are added for the walk kernels:

* every row is sorted by neighbour id, so node2vec's test "is ``x`` an
  out-neighbour of the previous node?" is a binary search;
* for weighted walks, the zero-weight edges are left out (never drawn) and
  each row carries the inclusive prefix sums of its weights in float64, so a
  weighted draw is a binary search. The sums are taken on the CPU: the CPU and
  CUDA kernels must read the same bits to draw alike.

``edge_id`` maps every CSR slot back to the edge's position in the input,
so the op reports the caller's edge ids.
"""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from .edge_index_checks import check_compressed, check_edge_index


@dataclass(frozen=True)
class WalkGraph:
    r"""A graph for :func:`pyg_fusesample.ops.random_walk`: the out-edges of
    node ``v`` go to ``col[rowptr[v]:rowptr[v + 1]]`` (ascending), with ids
    ``edge_id[...]`` and, when weighted, per-row inclusive prefix sums
    ``weight_cumsum[...]`` of their weights."""
    rowptr: Tensor
    col: Tensor
    edge_id: Tensor
    weight_cumsum: Optional[Tensor]
    num_nodes: int

    @property
    def num_edges(self) -> int:
        return self.col.numel()

    @property
    def device(self) -> torch.device:
        return self.rowptr.device

    def to(self, device) -> 'WalkGraph':
        device = torch.device(device)
        if device == self.device:
            return self
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return WalkGraph(move(self.rowptr), move(self.col),
                         move(self.edge_id), move(self.weight_cumsum),
                         self.num_nodes)

    @classmethod
    def from_edge_index(cls, edge_index: Tensor,
                        num_nodes: Optional[int] = None,
                        edge_weight: Optional[Tensor] = None) -> 'WalkGraph':
        r"""Builds the CSR of :obj:`edge_index` (walks go from
        ``edge_index[0]`` to ``edge_index[1]``) on its device; edge ids are
        column positions of :obj:`edge_index`.

        Args:
            edge_index (Tensor): ``[2, E]`` int64/int32.
            num_nodes (int, optional): number of nodes (default: one more
                than the largest id).
            edge_weight (Tensor, optional): ``[E]`` finite, non-negative
                weights; a step draws an out-edge with probability
                proportional to its weight.
        """
        num_nodes = check_edge_index(edge_index, num_nodes, 'random_walk',
                                     infer_num_nodes=True)
        row, col = edge_index.long()
        return cls._build(row, col, num_nodes, edge_weight)

    @classmethod
    def from_csr(cls, rowptr: Tensor, col: Tensor,
                 edge_weight: Optional[Tensor] = None) -> 'WalkGraph':
        r"""Wraps a CSR (``rowptr`` [N + 1], ``col`` [E]); rows are sorted
        by neighbour id when they are not. Edge ids are CSR slot indices,
        as in torch_cluster's ``random_walk``."""
        check_compressed(rowptr, col, 'random_walk')
        rowptr = rowptr.long()
        num_nodes = rowptr.numel() - 1
        row = torch.repeat_interleave(
            torch.arange(num_nodes, device=rowptr.device), rowptr.diff())
        return cls._build(row, col.long(), num_nodes, edge_weight)

    @classmethod
    def _build(cls, row: Tensor, col: Tensor, num_nodes: int,
               edge_weight: Optional[Tensor]) -> 'WalkGraph':
        # Edge e goes row[e] -> col[e] (int64, checked); its id is e.
        weight = None if edge_weight is None else _checked_weight(
            edge_weight, row.numel())
        # int64 keys: row * N + col overflows int32 past 46,340 nodes.
        edge_id = torch.argsort(row * num_nodes + col, stable=True)
        row, col = row[edge_id], col[edge_id]
        device = row.device
        cumsum = None
        if weight is not None:
            w = weight[edge_id.to(weight.device)].detach().cpu().to(
                torch.float64)
            keep = (w > 0).to(device)
            row, col, edge_id = row[keep], col[keep], edge_id[keep]
            w = w[keep.cpu()]
            # Per-row inclusive sums: the running total minus the total
            # before the row.
            total = torch.cumsum(w, 0)
            # (The totals before the rows never decrease, so a running
            # maximum carries each row's to its later slots.)
            host_row = row.cpu()
            first = torch.ones(w.numel(), dtype=torch.bool)
            first[1:] = host_row[1:] != host_row[:-1]
            shifted = torch.cat([total.new_zeros(1), total[:-1]])
            before = torch.where(first, shifted, torch.zeros_like(w))
            before = torch.cummax(before, 0).values
            cumsum = (total - before).to(device)
        rowptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=device)
        rowptr[1:] = torch.bincount(row, minlength=num_nodes).cumsum(0)
        if num_nodes < 2**31:
            col = col.to(torch.int32)  # half the bytes per step's read
        return cls(rowptr, col.contiguous(), edge_id.contiguous(), cumsum,
                   int(num_nodes))


def _checked_weight(edge_weight: Tensor, num_edges: int) -> Tensor:
    if not isinstance(edge_weight, Tensor) or edge_weight.dim() != 1 \
            or edge_weight.numel() != num_edges:
        raise ValueError(f"random_walk: 'edge_weight' must be a 1-D tensor "
                         f"with one weight per edge ({num_edges})")
    if not edge_weight.is_floating_point():
        edge_weight = edge_weight.to(torch.float64)
    if edge_weight.numel() and not bool(
            (torch.isfinite(edge_weight) & (edge_weight >= 0)).all()):
        raise ValueError("random_walk: 'edge_weight' must be finite and "
                         "non-negative")
    return edge_weight
