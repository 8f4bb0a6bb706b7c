"""Edges as int64 keys (``src * n + dst``): encoding, sorting, membership."""

from __future__ import annotations

from typing import List, Tuple

import torch
from torch import Tensor


def _encode(src: Tensor, dst: Tensor, n: int, undirected: bool) -> Tensor:
    """int64 edge keys: ``src * n + dst``, or ``min * n + max`` if
    undirected (the smaller internal id is the heavier endpoint)."""
    if not undirected:
        return src.mul_(n).add_(dst)
    lo = torch.minimum(src, dst)
    return lo.mul(n).add_(torch.maximum(src, dst))


def _decode(keys: Tensor, n: int) -> Tuple[Tensor, Tensor]:
    a = torch.div(keys, n, rounding_mode="floor")
    return a, keys - a * n


def _kept_end(keys: Tensor, n: int, undirected: bool) -> Tensor:
    """The endpoint that keeps an edge whose other end is redrawn: the
    target if directed (preserves in-degrees), the heavier end (smaller
    internal id) if undirected (hubs keep their degree; hub-hub pairs are
    the usual duplicates of Chung-Lu graphs)."""
    if undirected:
        return torch.div(keys, n, rounding_mode="floor")
    return keys % n


def _sorted_split(keys: Tensor) -> Tuple[Tensor, Tensor]:
    """Sort keys; return (first occurrence of each key, the duplicates)."""
    keys = torch.sort(keys).values
    if keys.numel() < 2:
        return keys, keys[:0]
    first = torch.ones(keys.numel(), dtype=torch.bool)
    torch.ne(keys[1:], keys[:-1], out=first[1:])
    return keys[first], keys[~first]


def _present_in(sorted_keys: Tensor, keys: Tensor) -> Tensor:
    """Mask of ``keys`` that occur in ``sorted_keys``."""
    if sorted_keys.numel() == 0 or keys.numel() == 0:
        return torch.zeros(keys.numel(), dtype=torch.bool)
    pos = torch.searchsorted(sorted_keys, keys)
    pos.clamp_(max=sorted_keys.numel() - 1)
    return sorted_keys[pos] == keys


def _sample_keys(parts: List[Tensor], k: int, gen: torch.Generator
                 ) -> Tuple[Tensor, Tensor, Tensor]:
    """``k`` keys drawn uniformly (with replacement) from all parts, as
    ``(part index, index within the part, key)``."""
    sizes = torch.tensor([p.numel() for p in parts])
    ends = sizes.cumsum(0)
    idx = torch.randint(int(ends[-1]), (k,), generator=gen)
    part_of = torch.searchsorted(ends, idx, right=True)
    local = idx - (ends - sizes)[part_of]
    del idx
    keys = torch.empty(k, dtype=torch.long)
    for i, p in enumerate(parts):
        sel = (part_of == i).nonzero().view(-1)
        keys[sel] = p[local[sel]]
    return part_of, local, keys
