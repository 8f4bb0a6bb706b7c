"""Summary statistics of a graph, for checking a generator's fit."""

from __future__ import annotations

from typing import Dict, Optional, Union

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from .chunking import _CHUNK


def _edge_stats(ei: Tensor, num_dst: int, y_src: Optional[Tensor],
                y_dst: Optional[Tensor]) -> Dict[str, object]:
    """In-degree statistics and edge homophily of one edge set."""
    n = int(num_dst)
    e = int(ei.size(1))
    deg = torch.bincount(ei[1], minlength=n) if e else torch.zeros(
        n, dtype=torch.long)
    k = max(1, n // 10_000)
    top = float(torch.topk(deg, k).values.sum()) / e if e else 0.0
    if y_src is not None and y_dst is not None and e:
        same = 0
        for s in range(0, e, _CHUNK):  # chunked: no [E] int64 temporaries
            src, dst = ei[0, s:s + _CHUNK], ei[1, s:s + _CHUNK]
            same += int((y_src[src] == y_dst[dst]).sum())
        homophily = same / e
    else:
        homophily = float("nan")
    return {
        "num_edges": e,
        "avg_in_degree": e / n if n else 0.0,
        "max_in_degree": int(deg.max()) if n else 0,
        "median_in_degree": float(deg.median()) if n else 0.0,
        "zero_in_degree_frac": float((deg == 0).sum()) / n if n else 0.0,
        "top_hub_edge_share": top,
        "edge_homophily": homophily,
    }


def _node_stats(store) -> Dict[str, int]:
    """Node count, feature width and class count of one node store."""
    x, y = getattr(store, "x", None), getattr(store, "y", None)
    return {
        "num_nodes": int(store.num_nodes),
        "num_features": (int(x.size(1)) if x is not None and x.dim() == 2
                         else 0),
        "num_classes": (int(y.max()) + 1 if y is not None and y.numel()
                        else 0),
    }


def graph_stats(data: Union[Data, HeteroData]) -> Dict[str, object]:
    """Summary statistics of a (synthetic or real) graph.

    For a :class:`~torch_geometric.data.Data`, returns a dict with
    ``name``, ``synthetic``, ``num_nodes``, ``num_edges``, ``num_features``,
    ``num_classes``, ``avg_in_degree``, ``max_in_degree``,
    ``median_in_degree``, ``zero_in_degree_frac`` (fraction of nodes with
    no in-edges), ``top_hub_edge_share`` (share of in-edges received by the
    top 0.01% of nodes by in-degree, at least one node) and
    ``edge_homophily`` (fraction of edges whose endpoints share a label;
    ``nan`` without labels).  In-degree counts edges with
    ``edge_index[1] == node``.

    For a :class:`~torch_geometric.data.HeteroData`, returns ``name``,
    ``synthetic``, the total ``num_nodes`` and ``num_edges``, and per type:
    ``node_types`` maps each node type to its ``num_nodes``,
    ``num_features`` and ``num_classes``; ``edge_types`` maps each edge type
    ``(src, rel, dst)`` to the edge statistics above, in-degrees counted
    over the ``dst`` nodes (homophily where both end types have ``y``).
    """
    meta = {"name": getattr(data, "name", None),
            "synthetic": bool(getattr(data, "synthetic", False))}
    if isinstance(data, HeteroData):
        ys = {t: getattr(data[t], "y", None) for t in data.node_types}
        edge_types = {}
        for et in data.edge_types:
            ei = data[et].edge_index
            edge_types[et] = _edge_stats(ei, data[et[2]].num_nodes,
                                         ys[et[0]], ys[et[2]])
        return {**meta, "num_nodes": int(data.num_nodes),
                "num_edges": int(data.num_edges),
                "node_types": {t: _node_stats(data[t])
                               for t in data.node_types},
                "edge_types": edge_types}
    y = getattr(data, "y", None)
    stats = _edge_stats(data.edge_index, data.num_nodes, y, y)
    return {**meta, **_node_stats(data), **stats}
