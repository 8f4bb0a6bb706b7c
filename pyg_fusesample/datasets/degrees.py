"""Power-law node weights that set the expected degrees of the generators.

Node of rank ``r`` gets the weight ``w_r = (r + r0) ** (-1 / (exponent - 1))``
(ranks are mapped to random node ids), so the in-degree tail decays like
``k ** -exponent``.  ``r0`` is solved by bisection so that the *expected*
in-degree of the heaviest node, ``E * w_max / sum(w)``, equals
``max_degree``; the average is ``avg_degree`` by construction.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor


def _powerlaw_weights(num_nodes: int, ratio: float,
                      exponent: Optional[float]) -> Tensor:
    """Rank-ordered (descending) float64 weights ``(r + r0) ** -alpha``.

    ``alpha = 1 / (exponent - 1)`` gives an ``exponent`` power-law tail; the
    offset ``r0`` is solved so that ``max(w) / mean(w) == ratio``.  A ratio
    of 1 (or ``exponent=None``) gives uniform weights.
    """
    if exponent is None or ratio <= 1.0 + 1e-9 or num_nodes == 1:
        return torch.ones(num_nodes, dtype=torch.float64)
    if exponent <= 1.0:
        raise ValueError(f"exponent must be > 1, got {exponent}")
    # max/mean can approach but never reach num_nodes.
    ratio = min(ratio, 0.999 * num_nodes)
    alpha = 1.0 / (exponent - 1.0)
    ranks = torch.arange(num_nodes, dtype=torch.float64)

    def ratio_of(log_r0: float) -> float:
        r0 = math.exp(log_r0)
        # Normalise by the top weight to stay clear of under/overflow.
        rel = (r0 / (ranks + r0)).pow_(alpha)
        return num_nodes / float(rel.sum())

    lo, hi = math.log(1e-12), math.log(1e18)  # ratio(lo) ~ N, ratio(hi) ~ 1
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if ratio_of(mid) > ratio:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-7:
            break
    r0 = math.exp(0.5 * (lo + hi))
    return (r0 / (ranks + r0)).pow_(alpha)


def _rank_weights(num_nodes: int, avg_degree: float,
                  max_degree: Optional[float],
                  exponent: Optional[float]) -> Tensor:
    """Descending power-law weights whose top one gives ``max_degree``."""
    if max_degree is None:
        # Structural cut-off of uncorrelated scale-free graphs: sqrt(E).
        max_degree = math.sqrt(num_nodes * avg_degree)
    max_degree = min(float(max_degree), float(num_nodes - 1))
    ratio = max(max_degree / max(avg_degree, 1e-12), 1.0)
    return _powerlaw_weights(num_nodes, ratio, exponent)
