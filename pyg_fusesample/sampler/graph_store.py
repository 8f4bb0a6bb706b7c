"""The CSC graph the samplers read, built once per graph and device.

Building CSC from a 100M-edge ``edge_index`` takes seconds, and a script
usually makes several loaders over one graph (train / val / test), so the
result is memoised per ``edge_index`` tensor (weakly: it goes with the
tensor) and invalidated when the tensor is modified in place.
"""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..ops import csc_from_coo
from ..sparse.edge_index_checks import check_ids_in_range
from ..sparse.tensor_memo import TensorMemo


@dataclass(frozen=True)
class CSCGraph:
    r"""A homogeneous graph in CSC form: the in-edges of node ``v`` are
    ``row[colptr[v]:colptr[v + 1]]`` with original edge ids
    ``edge_id[colptr[v]:colptr[v + 1]]`` (``None``: already in CSC order).
    ``colptr`` is int64, so graphs with more than 2^31 edges work."""
    colptr: Tensor
    row: Tensor
    edge_id: Optional[Tensor]
    num_nodes: int

    @property
    def num_edges(self) -> int:
        return self.row.numel()

    @property
    def device(self) -> torch.device:
        return self.colptr.device

    def to(self, device) -> 'CSCGraph':
        device = torch.device(device)
        if device == self.device:
            return self
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return CSCGraph(move(self.colptr), move(self.row), move(self.edge_id),
                        self.num_nodes)


# edge_index -> {'graphs': {(num_nodes, is_sorted, device): CSCGraph}} (and
# what the layers memoise beside it: nn/graph_input.py)
_cache = TensorMemo()


def _entry_for(edge_index: Tensor) -> dict:
    return _cache.setdefault(edge_index, lambda: {'graphs': {}})


def _validate_edge_index(edge_index: Tensor, num_nodes: int):
    if not isinstance(edge_index, Tensor):
        raise TypeError(f"'edge_index' must be a Tensor, got "
                        f"{type(edge_index).__name__} (SparseTensor and "
                        f"adj_t inputs are not supported by the sampler)")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"'edge_index' must have shape [2, num_edges], got "
                         f"{list(edge_index.shape)}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"'edge_index' must be int64 (or int32), got "
                         f"{edge_index.dtype}")
    if num_nodes is None or num_nodes < 0:
        raise ValueError("the graph needs 'num_nodes' >= 0")


def _csc_on_device(edge_index: Tensor, num_nodes: int) -> CSCGraph:
    # A GPU sorts 100M keys in tens of milliseconds, so torch's stable sort
    # is the right tool here (the C++ counting sort serves the CPU).
    # Sources are stored as int32 when ids fit: half the bytes per sampled
    # neighbour read.
    row, col = edge_index
    col_sorted, perm = torch.sort(col, stable=True)
    colptr = torch.searchsorted(
        col_sorted, torch.arange(num_nodes + 1, device=col.device))
    row = row[perm]
    if num_nodes < 2**31:
        row = row.to(torch.int32)
    return CSCGraph(colptr, row, perm, num_nodes)


def build_csc(edge_index: Tensor, num_nodes: int, is_sorted: bool = False,
              device=None) -> CSCGraph:
    r"""Returns the (memoised) :class:`CSCGraph` of :obj:`edge_index`.

    Args:
        edge_index (Tensor): ``[2, E]`` (row = source, col = target).
        num_nodes (int): number of nodes.
        is_sorted (bool): :obj:`edge_index` is already sorted by target
            (``edge_id`` is then the identity and stored as ``None``).
        device: where to keep the CSC (default: :obj:`edge_index`'s device).
    """
    _validate_edge_index(edge_index, num_nodes)
    device = torch.device(device) if device is not None else edge_index.device
    key = (int(num_nodes), bool(is_sorted), str(device))
    entry = _entry_for(edge_index)
    if key in entry['graphs']:
        return entry['graphs'][key]

    ei = edge_index.to(torch.long)
    # Once per graph (memoised), on every path: an id out of range would
    # index past colptr (searchsorted / the counting sort).
    check_ids_in_range(ei, int(num_nodes), 'edge_index',
                       bound_name='num_nodes')
    if is_sorted:
        col = ei[1]
        if col.numel() > 1 and bool((col[1:] < col[:-1]).any()):
            raise ValueError("'is_sorted=True' but 'edge_index' is not sorted "
                             "by target (edge_index[1])")
        colptr = torch.searchsorted(
            col, torch.arange(num_nodes + 1, device=col.device))
        graph = CSCGraph(colptr, ei[0].contiguous(), None, int(num_nodes))
    elif device.type == 'cuda':
        graph = _csc_on_device(ei.to(device), int(num_nodes))
    else:
        colptr, row, perm = csc_from_coo(ei.cpu(), num_nodes)
        graph = CSCGraph(colptr, row, perm, int(num_nodes))
    graph = graph.to(device)
    entry['graphs'][key] = graph
    return graph
