"""Summary statistics of a graph, for checking a generator's fit."""

from __future__ import annotations

from typing import Dict

import torch
from torch_geometric.data import Data

from .chunking import _CHUNK


def graph_stats(data: Data) -> Dict[str, object]:
    """Summary statistics of a (synthetic or real) graph.

    Returns a dict with ``name``, ``synthetic``, ``num_nodes``,
    ``num_edges``, ``num_features``, ``num_classes``, ``avg_in_degree``,
    ``max_in_degree``, ``median_in_degree``, ``zero_in_degree_frac``
    (fraction of nodes with no in-edges), ``top_hub_edge_share`` (share of
    in-edges received by the top 0.01% of nodes by in-degree, at least one
    node) and ``edge_homophily`` (fraction of edges whose endpoints share a
    label; ``nan`` without labels).  In-degree counts edges with
    ``edge_index[1] == node``.
    """
    n = int(data.num_nodes)
    ei = data.edge_index
    e = int(ei.size(1))
    deg = torch.bincount(ei[1], minlength=n) if e else torch.zeros(
        n, dtype=torch.long)
    k = max(1, n // 10_000)
    top = float(torch.topk(deg, k).values.sum()) / e if e else 0.0
    y = getattr(data, "y", None)
    if y is not None and e:
        same = 0
        for s in range(0, e, _CHUNK):  # chunked: no [E] int64 temporaries
            src, dst = ei[0, s:s + _CHUNK], ei[1, s:s + _CHUNK]
            same += int((y[src] == y[dst]).sum())
        homophily = same / e
        num_classes = int(y.max()) + 1 if y.numel() else 0
    else:
        homophily, num_classes = float("nan"), 0
    x = getattr(data, "x", None)
    return {
        "name": getattr(data, "name", None),
        "synthetic": bool(getattr(data, "synthetic", False)),
        "num_nodes": n,
        "num_edges": e,
        "num_features": (int(x.size(1)) if x is not None and x.dim() == 2
                         else 0),
        "num_classes": num_classes,
        "avg_in_degree": e / n if n else 0.0,
        "max_in_degree": int(deg.max()) if n else 0,
        "median_in_degree": float(deg.median()) if n else 0.0,
        "zero_in_degree_frac": float((deg == 0).sum()) / n if n else 0.0,
        "top_hub_edge_share": top,
        "edge_homophily": homophily,
    }
