"""Stress graphs that mimic no dataset: extreme hubs, and no skew at all."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import Data

from .chung_lu import _build
from .degrees import _rank_weights
from .scaling import _preset_name, _scaled, _scaled_max_degree
from .splits import SplitT


def hub_skewed(num_nodes: int = 1_000_000, avg_degree: float = 20.0,
               num_features: int = 64, num_classes: int = 16,
               max_degree: float = 300_000, exponent: float = 1.95,
               homophily: float = 0.7, feature_noise: float = 5.0,
               split: SplitT = (0.6, 0.2, 0.2), seed: int = 0,
               scale: float = 1.0, name: Optional[str] = None) -> Data:
    """Synthetic hub stressor: a few nodes receive a large share of edges.

    Mimics the extreme fan-in of web/social graphs (celebrity accounts,
    portal pages) rather than any one dataset.  Defaults: 1,000,000 nodes,
    20M directed edges, expected maximum in-degree 300,000 and an in-degree
    exponent of 1.95, so the top 0.01% of nodes (100 nodes) receive roughly
    30% of all in-edges.  Sources are drawn uniformly, so out-degrees are
    not skewed and hub in-neighbourhoods are mostly distinct nodes.
    ``scale`` multiplies the node count (and, as ``sqrt(scale)``, the maximum
    degree).  Purely synthetic (``data.synthetic = True``).

    Measured (seed 0, defaults): 19,979,429 edges, max in-degree 299,113,
    top 100 nodes receive 28.7% of in-edges, median in-degree 3, edge
    homophily 0.70; ~15 s.
    """
    n = _scaled(num_nodes, scale)
    if scale != 1.0:
        max_degree = _scaled_max_degree(max_degree, scale, n)
    if name is None:
        name = _preset_name("hub_skewed", scale)
    avg = max(avg_degree, 1e-12)

    def in_weights() -> Tensor:
        return _rank_weights(n, avg, max_degree, exponent)

    def out_weights() -> Tensor:
        return torch.ones(n, dtype=torch.float64)

    return _build(num_nodes=n, num_edges=int(round(n * avg_degree)),
                  num_features=num_features, num_classes=num_classes,
                  in_weights=in_weights, out_weights=out_weights,
                  homophily=homophily, feature_noise=feature_noise,
                  class_skew=0.0, undirected=False, dedup=True, split=split,
                  seed=seed, name=name)


def erdos_renyi(num_nodes: int = 1_000_000, avg_degree: float = 20.0,
                num_features: int = 64, num_classes: int = 16,
                homophily: float = 0.0, feature_noise: float = 5.0,
                split: SplitT = (0.6, 0.2, 0.2), seed: int = 0,
                scale: float = 1.0, name: Optional[str] = None) -> Data:
    """Synthetic Erdos-Renyi-style stressor with no degree skew.

    Mimics no real graph: ``round(N * avg_degree)`` directed edges with
    uniformly random (distinct, loop-free) endpoints, so in-degrees are
    ~Binomial/Poisson around ``avg_degree`` (maximum only a few standard
    deviations above the mean).  ``homophily=0`` (default) gives a pure
    random graph whose labels are unrelated to the structure; a positive
    value biases sources to the target's class without changing the degree
    distribution.  ``scale`` multiplies the node count.  Purely synthetic
    (``data.synthetic = True``).

    Measured (seed 0, defaults): 20,000,000 edges, max in-degree 45,
    edge homophily 0.0625 (= 1/16); ~12 s.
    """
    n = _scaled(num_nodes, scale)
    if name is None:
        name = _preset_name("erdos_renyi", scale)

    def uniform() -> Tensor:
        return torch.ones(n, dtype=torch.float64)

    return _build(num_nodes=n, num_edges=int(round(n * avg_degree)),
                  num_features=num_features, num_classes=num_classes,
                  in_weights=uniform, out_weights=None, homophily=homophily,
                  feature_noise=feature_noise, class_skew=0.0,
                  undirected=False, dedup=True, split=split, seed=seed,
                  name=name)
