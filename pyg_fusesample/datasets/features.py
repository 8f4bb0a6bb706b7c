"""Node features of the generators: noisy class centroids.

Features are ``centroid[y] + feature_noise * N(0, I)`` with one seeded
standard-normal centroid per class.  The noise is large enough that a linear
model on ``x`` alone is clearly worse than one that also sees the mean of the
in-neighbours' features (homophily makes neighbour averaging denoise), i.e.
labels are learnable from neighbourhoods as for the real graphs.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .chunking import _CHUNK


def _features(y: Tensor, num_features: int, num_classes: int,
              feature_noise: float, gen: torch.Generator,
              pin_memory: bool = False) -> Tensor:
    centroids = torch.randn(num_classes, num_features, generator=gen)
    # (randn is empty + normal_: the same draws, into pinned memory if asked)
    x = torch.empty(y.numel(), num_features, pin_memory=pin_memory)
    x.normal_(generator=gen)
    if feature_noise != 1.0:
        x.mul_(feature_noise)
    # Add centroids chunk by chunk to avoid an [N, F] temporary.
    step = max(1, _CHUNK // max(1, num_features))
    for start in range(0, y.numel(), step):
        x[start:start + step].add_(centroids[y[start:start + step]])
    return x
