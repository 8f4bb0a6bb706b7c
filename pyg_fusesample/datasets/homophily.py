"""Closes a graph's shortfall of edge homophily after duplicate repair.

Any remaining homophily shortfall is closed by degree-preserving double-edge
swaps (undirected: cross-class edges ``{a,b}``, ``{c,d}`` with ``a,c`` and
``b,d`` in the same classes become ``{a,c}``, ``{b,d}``) or by redrawing
same-class sources for the targets of random cross-class edges (directed;
in-degrees are preserved).  Very dense graphs with small classes and heavy
tails may stay a little below the requested homophily.
"""

from __future__ import annotations

from typing import List, Tuple

import torch
from torch import Tensor

from .edge_keys import _decode, _encode, _present_in, _sample_keys
from .edge_sampler import _EdgeSampler
from .repair import _TOPUP_ROUNDS, _repair


# Rounds of rewiring/swapping cross-class edges when homophily falls short.
_HOMOPHILY_ROUNDS = 4


def _raise_homophily(sampler: _EdgeSampler, parts: List[Tensor], count: int,
                     homophily: float, same_total: int,
                     undirected: bool) -> None:
    """Rewire random cross-class edges to same-class ones until the edge
    homophily reaches ``homophily`` (within 0.1%).

    Candidates are sampled at random; only edges with an end that has room
    for same-class neighbours (uncapped same-class probability, i.e. not a
    class hub) are rewired: that end keeps the edge and gets a new
    same-class neighbour, the other end loses the edge.  Edges that
    cannot be rewired without a duplicate within ``_TOPUP_ROUNDS`` tries are
    restored, so the edge count does not change.  Works in place on
    ``parts``.
    """
    n = sampler.n
    y = sampler.y_small

    def kept_end(keys: Tensor) -> Tuple[Tensor, Tensor]:
        """(qualifies, end to keep): a cross-class edge qualifies if the
        target (directed) or either end (undirected; the lighter one is
        preferred) has an uncapped same-class probability."""
        a, b = _decode(keys, n)
        free_b = sampler.cap[b] >= 1.0
        if undirected:
            free = free_b | (sampler.cap[a] >= 1.0)
            end = torch.where(free_b, b, a)
        else:
            free, end = free_b, b
        return (y[a] != y[b]) & free, end

    def qualifies(keys: Tensor) -> Tensor:
        return kept_end(keys)[0]

    factor = 1.0  # removed / placed in the previous round
    for _ in range(_HOMOPHILY_ROUNDS):
        short = int(round(homophily * count)) - same_total
        total = sum(p.numel() for p in parts)
        if short <= max(1, count // 1000) or total == 0:
            return
        short = int(short * factor)
        # Pilot sample to size the real one.
        rate = float(qualifies(_sample_keys(parts, 1 << 16,
                                            sampler.gen)[2]).float().mean())
        if rate == 0.0:
            return
        k = min(total, int(1.3 * short / rate) + 1024)
        part_of, local, keys = _sample_keys(parts, k, sampler.gen)
        # First ``short`` qualifying draws, without repeats.
        chosen = qualifies(keys).nonzero().view(-1)[:short]
        flat = torch.unique(part_of[chosen] * total + local[chosen])
        del part_of, local, keys, chosen
        part_of, local = flat // total, flat % total
        removed = []
        for i, p in enumerate(parts):
            sel = local[part_of == i]
            if sel.numel() == 0:
                continue
            removed.append(p[sel])
            keep = torch.ones(p.numel(), dtype=torch.bool)
            keep[sel] = False
            parts[i] = p[keep]
        if not removed:
            return
        pending = torch.cat(removed)
        del removed
        kept = kept_end(pending)[1]
        num_removed, placed = pending.numel(), 0
        for _ in range(_TOPUP_ROUNDS):
            if pending.numel() == 0:
                break
            new, failed = _repair(sampler, parts, kept, undirected,
                                  force_same=True)
            parts.append(new)
            placed += new.numel()  # forced same-class, loop-free
            pending, kept = pending[failed], kept[failed]
        same_total += placed
        if pending.numel():  # could not be rewired: restore the originals
            parts.append(torch.sort(pending).values)
        factor = min(3.0, num_removed / max(placed, 1))


def _swap_homophily(sampler: _EdgeSampler, parts: List[Tensor], count: int,
                    homophily: float, same_total: int) -> None:
    """Raise the edge homophily of an undirected graph with degree-
    preserving double-edge swaps.

    Random cross-class edges ``{a, b}`` and ``{c, d}`` joining the same two
    classes (``a``, ``c`` in one, ``b``, ``d`` in the other) become the
    same-class edges ``{a, c}`` and ``{b, d}``: every node keeps its degree
    and the graph gains two same-class edges.  Swaps that would create a
    self loop or a duplicate are skipped.  Works in place on ``parts``.
    """
    n = sampler.n
    y = sampler.y_small
    num_classes = sampler.num_classes
    gen = sampler.gen
    w = sampler.weight.to(torch.float32)
    # Median weight of an edge endpoint (weights are sorted descending).
    cw = sampler.weight.cumsum(0)
    w_ref = float(w[torch.searchsorted(cw, cw[-1:] * 0.5).clamp_(
        max=n - 1)])
    del cw

    def candidate(keys: Tensor) -> Tensor:
        """Cross-class edges, accepted with probability ``min(1, w_ref /
        sqrt(w_a w_b))``: swaps among heavy nodes mostly hit existing
        edges, so lighter nodes take most of the rewiring."""
        a, b = _decode(keys, n)
        accept = (w[a] * w[b]).rsqrt_().mul_(w_ref)
        u = torch.rand(keys.numel(), generator=gen)
        return (y[a] != y[b]) & (u < accept)

    factor = 1.0  # attempted / successful swaps in the previous round
    for _ in range(_HOMOPHILY_ROUNDS):
        short = int(round(homophily * count)) - same_total
        total = sum(p.numel() for p in parts)
        if short <= max(1, count // 1000) or total < 2:
            return
        want = int(min(total, short * factor + 16))  # edges to pair up
        rate = float(candidate(_sample_keys(parts, 1 << 16, gen)[2])
                     .float().mean())
        if rate == 0.0:
            return
        k = min(total, int(1.3 * want / rate) + 1024)
        part_of, local, keys = _sample_keys(parts, k, gen)
        cross = candidate(keys).nonzero().view(-1)
        # Distinct candidate edges (sampling was with replacement).
        flat = torch.unique(part_of[cross] * total + local[cross])
        part_of, local = flat // total, flat % total
        keys = torch.empty(flat.numel(), dtype=torch.long)
        for i, p in enumerate(parts):
            sel = (part_of == i).nonzero().view(-1)
            keys[sel] = p[local[sel]]
        a, b = _decode(keys, n)
        ya, yb = y[a].long(), y[b].long()
        lo_first = ya < yb
        x = torch.where(lo_first, a, b)   # end in the smaller class
        z = torch.where(lo_first, b, a)   # end in the larger class
        pair_class = (torch.minimum(ya, yb) * num_classes
                      + torch.maximum(ya, yb))
        del a, b, ya, yb, lo_first
        m = flat.numel()
        # Random order within each class pair, then pair neighbours.
        sort_key = pair_class * m + torch.randperm(m, generator=gen)
        order = torch.argsort(sort_key)
        del sort_key
        pc = pair_class[order]
        idx = torch.arange(m)
        start = torch.ones(m, dtype=torch.bool)
        if m > 1:
            torch.ne(pc[1:], pc[:-1], out=start[1:])
        group_start = torch.cummax(torch.where(start, idx, 0), 0).values
        even = ((idx - group_start) % 2 == 0) & (idx + 1 < m)
        even[:-1] &= pc[1:] == pc[:-1]
        even[-1:] = False
        i = order[even.nonzero().view(-1)]
        j = order[even.nonzero().view(-1) + 1]
        del order, pc, idx, start, group_start, even
        if i.numel() > (want + 1) // 2:  # random order: keep a random subset
            sel = torch.randperm(i.numel(), generator=gen)[:(want + 1) // 2]
            i, j = i[sel], j[sel]
        s = i.numel()
        if s == 0:
            return
        k1 = _encode(x[i], x[j], n, True)
        k2 = _encode(z[i], z[j], n, True)
        ok = (x[i] != x[j]) & (z[i] != z[j])
        both = torch.cat([k1, k2])
        sorted_keys, pos = torch.sort(both)
        dup = torch.zeros(2 * s, dtype=torch.bool)
        if 2 * s > 1:
            same_next = sorted_keys[1:] == sorted_keys[:-1]
            dup[pos[1:][same_next]] = True
            dup[pos[:-1][same_next]] = True
        for p in parts:
            dup |= _present_in(p, both)
        ok &= ~(dup[:s] | dup[s:])
        del both, sorted_keys, pos, dup
        good = ok.nonzero().view(-1)
        if good.numel() == 0:
            return
        gone = torch.cat([i[good], j[good]])
        gone_part, gone_local = part_of[gone], local[gone]
        for q, p in enumerate(parts):
            sel = gone_local[gone_part == q]
            if sel.numel():
                keep = torch.ones(p.numel(), dtype=torch.bool)
                keep[sel] = False
                parts[q] = p[keep]
        parts.append(torch.sort(torch.cat([k1[good], k2[good]])).values)
        same_total += 2 * good.numel()
        factor = min(10.0, s / good.numel())
