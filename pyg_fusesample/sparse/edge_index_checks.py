"""The checks every builder of a graph from an ``edge_index`` makes (walks,
GraphSAINT, ShaDow), with one wording."""
import numbers
from typing import Optional

import torch
from torch import Tensor


def check_edge_index(edge_index, num_nodes: Optional[int], owner: str,
                     infer_num_nodes: bool = False) -> int:
    r"""Raises ``ValueError`` unless :obj:`edge_index` is a ``[2, E]`` int64
    or int32 tensor with ids in ``[0, num_nodes)``; returns
    :obj:`num_nodes` (with :obj:`infer_num_nodes`, one more than the largest
    id when it is ``None``). :obj:`owner` names the caller in messages."""
    if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 \
            or edge_index.size(0) != 2:
        raise ValueError(f"{owner}: 'edge_index' must be a tensor of shape "
                         f"[2, num_edges]")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{owner}: 'edge_index' must be int64 (or int32), "
                         f"got {edge_index.dtype}")
    if num_nodes is None:
        if not infer_num_nodes:
            raise ValueError(f"{owner}: the graph needs 'num_nodes'")
        num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
    if isinstance(num_nodes, bool) or not isinstance(
            num_nodes, numbers.Integral) or num_nodes < 0:
        raise ValueError(f"{owner}: 'num_nodes' must be an integer >= 0, "
                         f"got {num_nodes!r}")
    check_ids_in_range(edge_index, int(num_nodes), 'edge_index', owner,
                       bound_name='num_nodes')
    return int(num_nodes)


def check_ids_in_range(ids: Tensor, bound: int, name: str, owner: str = '',
                       bound_name: Optional[str] = None) -> None:
    r"""Raises ``ValueError`` naming :obj:`name` unless every entry of
    :obj:`ids` lies in ``[0, bound)``. One host read on a GPU: call it once
    per graph (or off the hot path). :obj:`owner` prefixes the message;
    :obj:`bound_name` names the argument the bound came from."""
    if ids.numel() == 0:
        return
    lo, hi = (int(v) for v in torch.aminmax(ids))
    if lo < 0 or hi >= bound:
        prefix = f"{owner}: " if owner else ''
        source = f"; '{bound_name}' is {bound}" if bound_name else ''
        raise ValueError(f"{prefix}'{name}' holds ids outside [0, {bound}) "
                         f"(from {lo} to {hi}{source})")


def check_compressed(ptr, idx, owner: str, ptr_name: str = 'rowptr',
                     idx_name: str = 'col',
                     idx_bound: Optional[int] = None) -> None:
    r"""Raises ``ValueError`` unless :obj:`ptr` and :obj:`idx` are a
    compressed layout (CSR / CSC): 1-D integer tensors on one device,
    :obj:`ptr` starting at 0, never decreasing and ending at ``len(idx)``,
    every entry of :obj:`idx` in ``[0, idx_bound)`` (default: the number of
    rows, ``len(ptr) - 1``). O(len(ptr) + len(idx)) and, on a GPU, a host
    synchronisation: call it once per graph, where the graph is built."""
    for name, t in ((ptr_name, ptr), (idx_name, idx)):
        if not isinstance(t, Tensor) or t.dim() != 1:
            raise ValueError(f"{owner}: '{name}' must be a 1-D tensor, got "
                             f"{_describe(t)}")
        if t.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"{owner}: '{name}' must be int64 (or int32), "
                             f"got {t.dtype}")
    if ptr.device != idx.device:
        raise ValueError(f"{owner}: '{ptr_name}' is on {ptr.device} but "
                         f"'{idx_name}' is on {idx.device}")
    if ptr.numel() < 1:
        raise ValueError(f"{owner}: '{ptr_name}' needs num_rows + 1 >= 1 "
                         f"entries, got 0")
    first, last = int(ptr[0]), int(ptr[-1])
    if first != 0 or last != idx.numel():
        raise ValueError(f"{owner}: '{ptr_name}' must run from 0 to the "
                         f"number of entries of '{idx_name}' "
                         f"({idx.numel()}), got {first} to {last}")
    if ptr.numel() > 1 and bool((ptr[1:] < ptr[:-1]).any()):
        raise ValueError(f"{owner}: '{ptr_name}' must be non-decreasing")
    bound = ptr.numel() - 1 if idx_bound is None else idx_bound
    check_ids_in_range(idx, bound, idx_name, owner)


def _describe(t) -> str:
    if isinstance(t, Tensor):
        return f"shape {list(t.shape)}"
    return type(t).__name__
