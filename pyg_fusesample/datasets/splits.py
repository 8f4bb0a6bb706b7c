"""Train/val/test masks of the generators: a random split by fractions."""

from __future__ import annotations

from typing import Sequence, Tuple

import torch
from torch import Tensor


SplitT = Tuple[float, float, float]


def _split_masks(num_nodes: int, split: Sequence[float],
                 gen: torch.Generator) -> Tuple[Tensor, Tensor, Tensor]:
    if len(split) != 3 or any(f < 0 for f in split):
        raise ValueError(
            f"split must be 3 non-negative fractions, got {split}")
    if sum(split) > 1.0 + 1e-6:
        raise ValueError(f"split fractions sum to more than 1: {split}")
    n_train = int(round(split[0] * num_nodes))
    n_val = min(int(round(split[1] * num_nodes)), num_nodes - n_train)
    if abs(sum(split) - 1.0) <= 1e-6:
        n_test = num_nodes - n_train - n_val  # "the rest"
    else:
        n_test = min(int(round(split[2] * num_nodes)),
                     num_nodes - n_train - n_val)
    perm = torch.randperm(num_nodes, generator=gen)
    masks = []
    for start, size in ((0, n_train), (n_train, n_val),
                        (n_train + n_val, n_test)):
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[perm[start:start + size]] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]
