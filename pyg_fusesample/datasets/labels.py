"""Node labels of the generators, with a real graph's class-size skew.

Labels are i.i.d. over classes, uniform or Zipf-skewed
(``P(c) ~ (c + 1) ** -class_skew``, class 0 most frequent) -- real
product/paper categories are skewed.  Labels are independent of degree.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _labels(num_nodes: int, num_classes: int, class_skew: float,
            gen: torch.Generator) -> Tensor:
    if class_skew == 0.0:
        return torch.randint(num_classes, (num_nodes,), generator=gen)
    p = torch.arange(1, num_classes + 1, dtype=torch.float64).pow_(-class_skew)
    cdf = p.cumsum(0)
    u = torch.rand(num_nodes, dtype=torch.float64, generator=gen) * cdf[-1]
    return torch.searchsorted(cdf, u, right=True).clamp_(max=num_classes - 1)
