"""Assembles one synthetic ``Data`` from node weights: the shared generator.

The core model (:func:`~.power_law.power_law_graph`, and the stressors) is a
Chung-Lu-style graph (a degree-corrected stochastic block model with one
block per class).  **Undirected** graphs (products, reddit, power_law_1m)
draw ``E / 2`` pairs and store both directions, so in-degree equals
out-degree.

All randomness comes from a local :class:`torch.Generator` seeded with
``seed`` (the global RNG is never touched), so the same seed gives bitwise
identical tensors (also across thread counts).  Everything is torch tensor
code; there are no Python loops over nodes or edges (only over chunks,
classes-independent rounds and lists of key arrays).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch
from torch import Tensor
from torch_geometric.data import Data

from .chunking import _CHUNK
from .edge_keys import _decode
from .edge_sampler import _EdgeSampler
from .edges import _edges
from .features import _features
from .labels import _labels
from .splits import _split_masks


def _check_positive_int(name: str, value: int) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _build(*, num_nodes: int, num_edges: int, num_features: int,
           num_classes: int, in_weights: Callable[[], Tensor],
           out_weights: Optional[Callable[[], Tensor]],
           homophily: float, feature_noise: float, class_skew: float,
           undirected: bool, dedup: bool, split: Sequence[float], seed: int,
           name: str, pin_memory: bool = False) -> Data:
    """Shared generator.  ``in_weights()`` returns descending target weights
    (they define the internal id order); ``out_weights()`` (directed only,
    ``None`` = same as in) returns source weights over the same ids."""
    num_nodes = _check_positive_int("num_nodes", num_nodes)
    num_features = _check_positive_int("num_features", num_features)
    num_classes = _check_positive_int("num_classes", num_classes)
    if num_edges < 0:
        raise ValueError(f"number of edges must be >= 0, got {num_edges}")
    if feature_noise < 0:
        raise ValueError(f"feature_noise must be >= 0, got {feature_noise}")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    if undirected and out_weights is not None:
        raise ValueError("undirected graphs use one weight per node")

    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed))

    # Labels are i.i.d., so drawing them in internal-id order is the same
    # as drawing them per node id.
    y_int = _labels(num_nodes, num_classes, class_skew, gen)
    # internal id -> node id (hubs land on random node ids).
    perm = torch.randperm(num_nodes, generator=gen)

    if num_nodes < 2 or num_edges == 0:
        edge_index = torch.empty(2, 0, dtype=torch.long)
    else:
        in_w = in_weights()
        out_w = None if out_weights is None else out_weights()
        if out_w is not None:  # its own random order over internal ids
            out_w = out_w[torch.randperm(num_nodes, generator=gen)]
        count = num_edges // 2 if undirected else num_edges
        sampler = _EdgeSampler(y_int, num_classes, in_w, out_w, homophily,
                               count, gen)
        del in_w, out_w
        keys = _edges(sampler, count, undirected, dedup, homophily)
        del sampler
        m = keys.numel()
        edge_index = torch.empty(2, 2 * m if undirected else m,
                                 dtype=torch.long)
        perm32 = perm.to(torch.int32)  # smaller table for random gathers
        for s in range(0, m, _CHUNK):
            a, b = _decode(keys[s:s + _CHUNK], num_nodes)
            a, b = perm32[a], perm32[b]
            e = s + a.numel()
            edge_index[0, s:e] = a
            edge_index[1, s:e] = b
            if undirected:
                edge_index[0, m + s:m + e] = b
                edge_index[1, m + s:m + e] = a
        del keys, perm32

    y = torch.empty_like(y_int)
    y[perm] = y_int
    del y_int, perm
    x = _features(y, num_features, num_classes, feature_noise, gen,
                  pin_memory=pin_memory)
    train_mask, val_mask, test_mask = _split_masks(num_nodes, split, gen)

    data = Data(x=x, edge_index=edge_index, y=y, train_mask=train_mask,
                val_mask=val_mask, test_mask=test_mask)
    data.num_nodes = num_nodes
    data.name = name
    data.synthetic = True
    data.seed = int(seed)
    return data
