"""The edge set of the Chung-Lu model: chunked draw, de-duplication, top-up.

``E = round(num_nodes * avg_degree)`` edges are drawn in chunks of 16M.
Self loops are redrawn (leftovers dropped).  Duplicate edges are removed
(sort + unique on 64-bit keys) and each one is replaced by a new edge that
keeps one endpoint -- the target if directed, the heavier end if undirected
-- and redraws the other, for up to six rounds; hubs thus keep their drawn
degree and the edge count ends within ~0.1% of ``E`` (never above).
Same-class pairs are the likelier duplicates, so the repairs re-target
``p_t``, and any remaining homophily shortfall is closed by
:mod:`.homophily`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .chunking import _CHUNK
from .edge_keys import _encode, _kept_end, _sorted_split
from .edge_sampler import _EdgeSampler
from .homophily import _raise_homophily, _swap_homophily
from .repair import _TOPUP_ROUNDS, _repair


def _draw_edge_keys(sampler: _EdgeSampler, count: int,
                    undirected: bool) -> Tensor:
    """Keys of ``count`` freshly drawn edges, generated in chunks."""
    parts = []
    remaining = count
    while remaining > 0:
        m = min(_CHUNK, remaining)
        src, dst = sampler.draw(m)
        parts.append(_encode(src, dst, sampler.n, undirected))
        del src, dst
        remaining -= m
    if not parts:
        return torch.empty(0, dtype=torch.long)
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _edges(sampler: _EdgeSampler, count: int, undirected: bool,
           dedup: bool, homophily: float) -> Tensor:
    """Draw ``count`` edges; return their keys (``src * n + dst``, or
    ``min * n + max`` if undirected) in internal ids.

    With ``dedup``, every duplicate is replaced by an edge that keeps one
    endpoint (:func:`_kept_end`) and gets a fresh other end (up to
    ``_TOPUP_ROUNDS`` rounds, leftovers are dropped), so hubs keep their
    drawn degree.  Same-class pairs are more often duplicates, so the
    repair rounds re-target the same-class probability, and if the edge
    homophily is still short of ``homophily``, random cross-class edges of
    non-hub nodes are rewired within their class (:func:`_raise_homophily`).
    """
    sampler.same_drawn = 0
    keys = _draw_edge_keys(sampler, count, undirected)
    if not dedup:
        return keys
    uniq, pending = _sorted_split(keys)
    del keys
    parts = [uniq]
    adapt = sampler.p_same > 0.0
    if adapt:
        same_total = sampler.same_drawn - sampler.same_label_count(pending)
    kept = _kept_end(pending, sampler.n, undirected)
    del pending
    for _ in range(_TOPUP_ROUNDS):
        if kept.numel() == 0:
            break
        if adapt:
            want = (homophily * count - same_total) / kept.numel()
            sampler.set_homophily(min(1.0, max(0.0, want)))
        new, failed = _repair(sampler, parts, kept, undirected)
        kept = kept[failed]
        parts.append(new)
        if adapt:
            same_total += sampler.same_label_count(new)
    if adapt:
        sampler.set_homophily(homophily)
        if undirected:
            _swap_homophily(sampler, parts, count, homophily, same_total)
        else:
            _raise_homophily(sampler, parts, count, homophily, same_total,
                             undirected)
    return parts[0] if len(parts) == 1 else torch.cat(parts)
