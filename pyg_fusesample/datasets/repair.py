"""Replacement edges: keep one endpoint, redraw the other, avoid duplicates."""

from __future__ import annotations

from typing import List, Tuple

import torch
from torch import Tensor

from .edge_keys import _encode, _present_in
from .edge_sampler import _EdgeSampler


# Rounds of replacing duplicate edges (and of retrying failed rewirings).
_TOPUP_ROUNDS = 6


def _repair(sampler: _EdgeSampler, parts: List[Tensor], kept: Tensor,
            undirected: bool, force_same: bool = False
            ) -> Tuple[Tensor, Tensor]:
    """Draw one new edge for each node in ``kept`` (which keeps the edge),
    with a fresh other end.

    Returns the sorted new keys that are loop-free and distinct from each
    other and from every (sorted) part, and the indices (into ``kept``) of
    the edges that failed and need another try.
    """
    n = sampler.n
    src, dst = sampler.pairs(kept, force_same)
    bad = src == dst
    keys, order = torch.sort(_encode(src, dst, n, undirected))
    del src, dst
    ok = torch.ones(keys.numel(), dtype=torch.bool)
    if keys.numel() > 1:
        torch.ne(keys[1:], keys[:-1], out=ok[1:])
    ok &= ~bad[order]
    for p in parts:
        ok &= ~_present_in(p, keys)
    return keys[ok], order[~ok]
