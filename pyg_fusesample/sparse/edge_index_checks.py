"""The checks every builder of a graph from an ``edge_index`` makes (walks,
GraphSAINT, ShaDow), with one wording."""
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
    if edge_index.numel():
        lo, hi = torch.aminmax(edge_index)
        if int(lo) < 0 or int(hi) >= num_nodes:
            raise ValueError(f"{owner}: 'edge_index' holds ids outside "
                             f"[0, {num_nodes})")
    return num_nodes
