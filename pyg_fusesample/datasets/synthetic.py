"""Seeded, vectorised generators of SYNTHETIC graphs with real statistics.

Every graph returned here is synthetic: it is drawn from a random model whose
parameters were chosen so that its size, average in-degree, maximum in-degree,
degree skew, label homophily, feature width, class count and train/val/test
split resemble a well-known real dataset.  None of them contains any real data,
and every returned :class:`~torch_geometric.data.Data` carries
``data.synthetic = True`` and a ``data.name`` such as ``"products_like"`` so
that benchmarks, logs and plots can label the numbers as coming from a
synthetic stand-in.

The core model (:func:`power_law_graph`) is a Chung-Lu-style graph (a
degree-corrected stochastic block model with one block per class):

* **Degrees.**  Node of rank ``r`` gets the weight
  ``w_r = (r + r0) ** (-1 / (exponent - 1))`` (ranks are mapped to random
  node ids), so the in-degree tail decays like ``k ** -exponent``.  ``r0``
  is solved by bisection so that the *expected* in-degree of the heaviest
  node, ``E * w_max / sum(w)``, equals ``max_degree``; the average is
  ``avg_degree`` by construction.
* **Edges.**  ``E = round(num_nodes * avg_degree)`` edges are drawn in
  chunks of 16M.  Targets (``edge_index[1]``) are drawn proportionally to the
  weights; the source (``edge_index[0]``) of an edge is drawn by weight from
  the target's own class with probability ``p_t`` and from all nodes
  otherwise.  Weighted draws are exact inverse-CDF draws, served in O(1) from
  a class-ordered lookup table with a ``torch.searchsorted`` fallback for
  the fractional remainders (a plain ``searchsorted`` over millions of
  cumulative weights is ~10x slower; ``torch.multinomial`` cannot do it).
  ``p_t`` is solved so that the expected *edge homophily* (fraction of
  edges whose endpoints share a label, counting the chance that a random
  source shares the class anyway) equals ``homophily``; it is capped for
  class hubs whose same-class draws would exceed what their class can offer
  without duplicates.
* **Clean-up.**  Self loops are redrawn (leftovers dropped).  Duplicate
  edges are removed (sort + unique on 64-bit keys) and each one is replaced
  by a new edge that keeps one endpoint -- the target if directed, the
  heavier end if undirected -- and redraws the other, for up to six rounds;
  hubs thus keep their drawn degree and the edge count ends within ~0.1% of
  ``E`` (never above).  Same-class pairs are the likelier duplicates, so the
  repairs re-target ``p_t``, and any remaining homophily shortfall is closed
  by degree-preserving double-edge swaps (undirected: cross-class edges
  ``{a,b}``, ``{c,d}`` with ``a,c`` and ``b,d`` in the same classes become
  ``{a,c}``, ``{b,d}``) or by redrawing same-class sources for the targets
  of random cross-class edges (directed; in-degrees are preserved).  Very
  dense graphs with small classes and heavy tails may stay a little below
  the requested homophily.
* **Undirected** graphs (products, reddit, power_law_1m) draw ``E / 2``
  pairs and store both directions, so in-degree equals out-degree.
* **Labels** are i.i.d. over classes, uniform or Zipf-skewed
  (``P(c) ~ (c + 1) ** -class_skew``, class 0 most frequent) -- real
  product/paper categories are skewed.  Labels are independent of degree.
* **Features** are ``centroid[y] + feature_noise * N(0, I)`` with one seeded
  standard-normal centroid per class.  The noise is large enough that a
  linear model on ``x`` alone is clearly worse than one that also sees the
  mean of the in-neighbours' features (homophily makes neighbour averaging
  denoise), i.e. labels are learnable from neighbourhoods as for the real
  graphs.
* **Masks** are a random split by the given fractions.

All randomness comes from a local :class:`torch.Generator` seeded with
``seed`` (the global RNG is never touched), so the same seed gives bitwise
identical tensors (also across thread counts).  Everything is torch tensor
code; there are no Python loops over nodes or edges (only over chunks,
classes-independent rounds and lists of key arrays).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch_geometric.data import Data

__all__ = [
    "power_law_graph",
    "products_like",
    "arxiv_like",
    "reddit_like",
    "hub_skewed",
    "erdos_renyi",
    "power_law_1m",
    "get_dataset",
    "graph_stats",
    "DATASET_NAMES",
]

# Edges are drawn in chunks of this many so that temporaries stay bounded
# (a chunk costs a few hundred MB).  It is a fixed constant, not derived from
# the machine, so generation is reproducible everywhere.
_CHUNK = 1 << 24
# Rounds of replacing duplicate edges (and of retrying failed rewirings).
_TOPUP_ROUNDS = 6
# Rounds of redrawing the sources of self loops before dropping leftovers.
_SELF_LOOP_ROUNDS = 8
# A target draws at most this multiple of its class's effective size
# (participation ratio of the weights) in same-class sources; beyond that
# most same-class draws would be duplicates.
_SAME_CLASS_BUDGET = 1.0
# Rounds of rewiring/swapping cross-class edges when homophily falls short.
_HOMOPHILY_ROUNDS = 4

SplitT = Tuple[float, float, float]


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------
def _check_positive_int(name: str, value: int) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


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


def _labels(num_nodes: int, num_classes: int, class_skew: float,
            gen: torch.Generator) -> Tensor:
    if class_skew == 0.0:
        return torch.randint(num_classes, (num_nodes,), generator=gen)
    p = torch.arange(1, num_classes + 1, dtype=torch.float64).pow_(-class_skew)
    cdf = p.cumsum(0)
    u = torch.rand(num_nodes, dtype=torch.float64, generator=gen) * cdf[-1]
    return torch.searchsorted(cdf, u, right=True).clamp_(max=num_classes - 1)


class _ClassTable:
    """Exact O(1) weighted sampling of nodes, overall or within one class.

    Binary search on a multi-million entry CDF costs ~0.5 us per draw (cache
    misses), so most of the probability mass is served by a lookup table:
    with ``mass_v = L * w_v / sum(w)`` node ``v`` owns ``floor(mass_v)``
    slots of an int32 table laid out class by class, and the fractional
    remainders form a small residual distribution sampled with
    ``searchsorted``.  One uniform ``u`` in ``[0, Q_c + F_c)`` (slots plus
    residual mass of class ``c``) picks a slot if ``u < Q_c`` and the
    residual otherwise, which is exactly the requested distribution; the
    residual serves ``~n / (2L)`` of the draws.  Class index ``num_classes``
    is a virtual class covering all nodes.
    """

    def __init__(self, w: Tensor, order: Tensor, y_sorted: Tensor,
                 seg_start: Tensor, seg_end: Tensor, num_classes: int):
        n = w.numel()
        self.n = n
        self.order = order
        size = int(min(max(16 * n, 1 << 16), 1 << 27))
        mass = w[order].mul_(size / float(w.sum()))
        q = mass.floor()
        frac = mass.sub_(q)  # in place: mass becomes the fractional part
        q = q.long()
        self.table = torch.repeat_interleave(order.to(torch.int32), q)
        q_c = torch.zeros(num_classes, dtype=torch.long).index_add_(
            0, y_sorted, q)
        del q
        slot_end = q_c.cumsum(0)
        self.cf = frac.cumsum(0)
        del frac
        padded = torch.cat([torch.zeros(1, dtype=torch.float64), self.cf])
        f_lo = padded[seg_start]
        f_c = padded[seg_end] - f_lo
        del padded
        self.num_slots = self.table.numel()
        all_slots = torch.tensor([self.num_slots])
        all_f = self.cf[-1:].clone()
        # Per (virtual) class parameters; the last entry is "all nodes".
        self.slot_start = torch.cat([slot_end - q_c, all_slots.new_zeros(1)])
        self.slot_last = torch.cat([slot_end, all_slots]).sub_(1).clamp_(min=0)
        self.q_c = torch.cat([q_c, all_slots]).double()
        self.total_c = self.q_c + torch.cat([f_c, all_f])
        self.f_lo = torch.cat([f_lo, all_f.new_zeros(1)])
        self.seg_start = torch.cat([seg_start, seg_start.new_zeros(1)])
        self.seg_last = torch.cat([seg_end, seg_end.new_full((1,), n)]).sub_(1)
        self.mass_c = self.total_c / float(self.total_c[-1])  # class shares

    def _residual(self, r: Tensor, c: Tensor) -> Tensor:
        """Nodes for residual values ``r`` (offset within class ``c``)."""
        p = torch.searchsorted(self.cf, r.add_(self.f_lo[c]), right=True)
        # Guard against float round-off at segment edges.
        p = torch.clamp(p, min=self.seg_start[c], max=self.seg_last[c])
        return self.order[p]

    def draw_any(self, m: int, gen: torch.Generator) -> Tensor:
        """``m`` nodes drawn by weight from all nodes (int64)."""
        u = torch.rand(m, dtype=torch.float64, generator=gen)
        u.mul_(float(self.total_c[-1]))
        q = float(self.q_c[-1])
        slot = u.long().clamp_(max=max(self.num_slots - 1, 0))
        node = (self.table[slot].long() if self.num_slots
                else torch.zeros(m, dtype=torch.long))
        del slot
        rest = (u >= q).nonzero().view(-1)
        if rest.numel():
            c = torch.full_like(rest, self.f_lo.numel() - 1)
            node[rest] = self._residual(u[rest].sub_(q), c)
        return node

    def draw(self, cls: Tensor, gen: torch.Generator) -> Tensor:
        """One node per entry of ``cls`` (``num_classes`` = any class)."""
        m = cls.numel()
        u = torch.rand(m, dtype=torch.float64, generator=gen)
        u.mul_(self.total_c[cls])
        q_c = self.q_c[cls]
        slot = torch.minimum(self.slot_start[cls] + u.long(),
                             self.slot_last[cls])
        node = (self.table[slot].long() if self.num_slots
                else torch.zeros(m, dtype=torch.long))
        del slot
        rest = (u >= q_c).nonzero().view(-1)
        if rest.numel():
            node[rest] = self._residual(u[rest].sub_(q_c[rest]), cls[rest])
        return node


class _EdgeSampler:
    """Draws (source, target) pairs of the Chung-Lu + homophily model.

    Works on internal node ids ``0..n-1`` ordered by decreasing in-weight
    (so for undirected graphs the smaller id of a pair is the heavier end);
    they are mapped to random node ids at the end.  Targets are drawn by
    in-weight; the source of an edge with target ``t`` is drawn by
    out-weight from ``t``'s class with probability ``p_node[t]`` and from
    all nodes otherwise.
    """

    def __init__(self, y: Tensor, num_classes: int, in_w: Tensor,
                 out_w: Optional[Tensor], homophily: float, num_draws: int,
                 gen: torch.Generator):
        if not 0.0 <= homophily <= 1.0:
            raise ValueError(f"homophily must be in [0, 1], got {homophily}")
        n = y.numel()
        self.n = n
        self.num_classes = num_classes
        self.gen = gen
        self.y = y
        # Compact copy of the labels for the many random gathers.
        self.y_small = y.to(torch.int16 if num_classes < 2 ** 15
                            else torch.int32)
        self.same_drawn = 0  # same-class pairs among everything drawn
        self.weight = in_w
        order = torch.argsort(y, stable=True)
        y_sorted = y[order]
        counts = torch.bincount(y, minlength=num_classes)
        seg_end = counts.cumsum(0)
        seg_start = seg_end - counts
        self.tab_in = _ClassTable(in_w, order, y_sorted, seg_start, seg_end,
                                  num_classes)
        wout = in_w if out_w is None else out_w
        self.tab_out = (self.tab_in if out_w is None else
                        _ClassTable(out_w, order, y_sorted, seg_start,
                                    seg_end, num_classes))
        del order, y_sorted
        # Share of source weight per class = chance that a weight-
        # proportional source lands in that class.
        share_out = self.tab_out.mass_c[:num_classes]
        # Effective number of distinct sources a class offers (participation
        # ratio W^2 / sum w^2).  Drawing many more same-class sources than
        # that for one target mostly yields duplicates (and would cap hub
        # in-degrees near the class size), so a target's probability of a
        # same-class source is capped at _SAME_CLASS_BUDGET * n_eff / draws.
        w_c = torch.zeros(num_classes, dtype=torch.float64).index_add_(
            0, y, wout)
        sq = torch.zeros(num_classes, dtype=torch.float64).index_add_(
            0, y, wout * wout)
        n_eff = w_c.square_() / sq.clamp_(min=1e-300)
        del w_c, sq
        omega = in_w / float(in_w.sum())   # P(target = node)
        draws = omega * float(max(num_draws, 1))
        self.cap = (_SAME_CLASS_BUDGET * n_eff[y]
                    / draws.clamp_(min=1e-300)).clamp_(max=1.0)
        del draws
        s_t = share_out[y]
        # Edge homophily for a global p: sum_t omega_t (p_t + (1 - p_t) s_t)
        # with p_t = min(p, cap_t), piecewise linear in p: prefix sums over
        # the sorted caps make each evaluation O(log n).
        self.base_homophily = float((omega * s_t).sum())
        gain = omega.mul_(1.0 - s_t)
        del s_t
        self._cap_sorted, idx = torch.sort(self.cap)
        gain = gain[idx]
        del idx
        zero = torch.zeros(1, dtype=torch.float64)
        self._capgain_prefix = torch.cat(
            [zero, (self._cap_sorted * gain).cumsum(0)])
        self._gain_suffix = torch.cat([gain.flip(0).cumsum(0).flip(0), zero])
        del gain
        self.set_homophily(homophily)

    def _homophily_of(self, p: float) -> float:
        k = int(torch.searchsorted(self._cap_sorted,
                                   torch.tensor([p], dtype=torch.float64)))
        return (self.base_homophily + float(self._capgain_prefix[k])
                + p * float(self._gain_suffix[k]))

    def set_homophily(self, homophily: float) -> None:
        """Solve (bisection, monotone) for the per-target probabilities."""
        if homophily <= self.base_homophily:
            p = 0.0
        elif self._homophily_of(1.0) <= homophily:
            p = 1.0
        else:
            lo, hi = 0.0, 1.0
            for _ in range(50):
                mid = 0.5 * (lo + hi)
                if self._homophily_of(mid) < homophily:
                    lo = mid
                else:
                    hi = mid
            p = 0.5 * (lo + hi)
        self.p_same = p
        self.p_node = torch.clamp(self.cap, max=p).to(torch.float32)
        self.expected_homophily = self._homophily_of(p)

    def _sources(self, cls: Tensor, same: Tensor) -> Tensor:
        eff = torch.where(same, cls, torch.full_like(cls, self.num_classes))
        return self.tab_out.draw(eff, self.gen)

    def draw(self, m: int) -> Tuple[Tensor, Tensor]:
        """``m`` (or slightly fewer, if self loops survive) pairs."""
        src, dst = self.pairs(self.tab_in.draw_any(m, self.gen))
        keep = src != dst
        if not bool(keep.all()):
            src, dst = src[keep], dst[keep]
        self.same_drawn += int((self.y_small[src] == self.y_small[dst]).sum())
        return src, dst

    def pairs(self, dst: Tensor,
              force_same: bool = False) -> Tuple[Tensor, Tensor]:
        """``(src, dst)`` with fresh sources for the targets ``dst``; self
        loops are redrawn a few times, leftovers are left to the caller."""
        m = dst.numel()
        cls = self.y_small[dst].long()
        if force_same:
            same = torch.ones(m, dtype=torch.bool)
        elif self.p_same > 0.0:
            same = torch.rand(m, generator=self.gen) < self.p_node[dst]
        else:
            same = torch.zeros(m, dtype=torch.bool)
        src = self._sources(cls, same)
        for _ in range(_SELF_LOOP_ROUNDS):
            loop = (src == dst).nonzero().view(-1)
            if loop.numel() == 0:
                break
            src[loop] = self._sources(cls[loop], same[loop])
        return src, dst

    def same_label_count(self, keys: Tensor) -> int:
        """Number of edge keys (``a * n + b``) within one class."""
        same = 0
        for s in range(0, keys.numel(), _CHUNK):
            a, b = _decode(keys[s:s + _CHUNK], self.n)
            same += int((self.y_small[a] == self.y_small[b]).sum())
        return same


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


def _features(y: Tensor, num_features: int, num_classes: int,
              feature_noise: float, gen: torch.Generator) -> Tensor:
    centroids = torch.randn(num_classes, num_features, generator=gen)
    x = torch.randn(y.numel(), num_features, generator=gen)
    if feature_noise != 1.0:
        x.mul_(feature_noise)
    # Add centroids chunk by chunk to avoid an [N, F] temporary.
    step = max(1, _CHUNK // max(1, num_features))
    for start in range(0, y.numel(), step):
        x[start:start + step].add_(centroids[y[start:start + step]])
    return x


def _build(*, num_nodes: int, num_edges: int, num_features: int,
           num_classes: int, in_weights: Callable[[], Tensor],
           out_weights: Optional[Callable[[], Tensor]],
           homophily: float, feature_noise: float, class_skew: float,
           undirected: bool, dedup: bool, split: Sequence[float], seed: int,
           name: str) -> Data:
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
    x = _features(y, num_features, num_classes, feature_noise, gen)
    train_mask, val_mask, test_mask = _split_masks(num_nodes, split, gen)

    data = Data(x=x, edge_index=edge_index, y=y, train_mask=train_mask,
                val_mask=val_mask, test_mask=test_mask)
    data.num_nodes = num_nodes
    data.name = name
    data.synthetic = True
    data.seed = int(seed)
    return data


def _scaled(num_nodes: int, scale: float) -> int:
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    return max(2, int(round(num_nodes * scale)))


def _scaled_max_degree(max_degree: float, scale: float,
                       num_nodes: int) -> float:
    # The natural maximum shrinks with the graph; sqrt(scale) keeps a clearly
    # heavy tail on tiny test graphs while staying below half the node count.
    return min(max_degree * math.sqrt(scale), 0.5 * (num_nodes - 1))


def _split_from_counts(train: int, val: int, total: int) -> Tuple[float, float, float]:
    """(train, val, test) fractions of a real data set's split sizes."""
    return (train / total, val / total, 1.0 - (train + val) / total)


def _preset_name(base: str, scale: float) -> str:
    return base if scale == 1.0 else f"{base}(scale={scale:g})"


# ---------------------------------------------------------------------------
# Public generators
# ---------------------------------------------------------------------------
def power_law_graph(num_nodes: int, avg_degree: float, num_features: int,
                    num_classes: int, max_degree: Optional[float] = None,
                    exponent: float = 2.1, homophily: float = 0.7,
                    feature_noise: float = 5.0, class_skew: float = 0.0,
                    undirected: bool = False,
                    source_exponent: Optional[float] = None,
                    max_out_degree: Optional[float] = None,
                    dedup: bool = True,
                    split: SplitT = (0.6, 0.2, 0.2), seed: int = 0,
                    name: Optional[str] = None) -> Data:
    r"""A synthetic Chung-Lu power-law graph with homophilous labels.

    This is the core generator behind all presets.  It mimics the statistics
    of real sparse graphs (heavy-tailed in-degree, label homophily, noisy
    class-dependent features); it contains no real data and the result is
    marked ``data.synthetic = True``.

    Args:
        num_nodes: Number of nodes ``N``.
        avg_degree: Target average in-degree; ``E = round(N * avg_degree)``
            directed edges are drawn (with ``dedup``, typically <0.1% fewer
            remain: duplicates that cannot be replaced are dropped).
        num_features: Feature width ``F``.
        num_classes: Number of classes ``C``.
        max_degree: Expected in-degree of the heaviest node (the weights'
            offset is solved for it); the realised maximum is usually within
            a few percent.  ``None`` uses ``sqrt(E)``; capped at ``N - 1``.
        exponent: Power-law exponent of the in-degree tail
            (``P(k) ~ k ** -exponent``); ``None`` gives uniform weights.
        homophily: Target edge homophily, the fraction of edges whose
            endpoints share a label; realised to within ~0.01 unless it is
            below the chance level (which is then what you get) or
            infeasible without duplicates (dense graphs whose classes are
            not much larger than the degrees).
        feature_noise: Std of the Gaussian noise added to the unit-variance
            class centroids.
        class_skew: ``0`` for uniform labels, otherwise Zipf exponent of the
            class frequencies (class 0 most frequent).
        undirected: Draw ``E // 2`` pairs and store both directions (in-degree
            equals out-degree).
        source_exponent: Directed graphs only.  ``None`` draws sources with
            the same weights as targets (independently); a float gives the
            out-degrees their own power law with this exponent and
            ``max_out_degree`` (default ``sqrt(E)``).
        max_out_degree: See ``source_exponent``.
        dedup: Remove duplicate edges, replacing each by a new edge that
            keeps one endpoint (see the module docstring).  ``False`` keeps
            the raw multigraph draw (exact edge count and homophily in
            expectation, a few percent duplicates).
        split: ``(train, val, test)`` fractions; if they sum to 1 the test
            set is all remaining nodes.
        seed: Seed of the local generator; same seed, same tensors.
        name: ``data.name``; defaults to ``"power_law(N=..,d=..)"``.

    Returns:
        ``Data(x float32 [N, F], edge_index int64 [2, E], y int64 [N],
        train_mask, val_mask, test_mask)`` plus ``name``, ``synthetic=True``
        and ``seed``.  ``edge_index[0]`` is the source and ``edge_index[1]``
        the target; edges are in no meaningful order.
    """
    num_nodes = _check_positive_int("num_nodes", num_nodes)
    if avg_degree < 0:
        raise ValueError(f"avg_degree must be >= 0, got {avg_degree}")
    num_edges = int(round(num_nodes * avg_degree))
    if name is None:
        name = f"power_law(N={num_nodes},d={avg_degree:g})"
    avg = max(avg_degree, 1e-12)

    def in_weights() -> Tensor:
        return _rank_weights(num_nodes, avg, max_degree, exponent)

    out_weights = None
    if source_exponent is not None:
        if undirected:
            raise ValueError("source_exponent only applies to directed graphs")

        def out_weights() -> Tensor:
            return _rank_weights(num_nodes, avg, max_out_degree,
                                 source_exponent)

    return _build(num_nodes=num_nodes, num_edges=num_edges,
                  num_features=num_features, num_classes=num_classes,
                  in_weights=in_weights, out_weights=out_weights,
                  homophily=homophily, feature_noise=feature_noise,
                  class_skew=class_skew, undirected=undirected, dedup=dedup,
                  split=split, seed=seed, name=name)


# ogbn-products: 2,449,029 nodes, 123,718,280 directed (= 2 x 61,859,140
# undirected) edges, 100 features, 47 classes, 196,615 / 39,323 / 2,213,091.
_PRODUCTS_N = 2_449_029
_PRODUCTS_E = 123_718_280


def products_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **ogbn-products** (Amazon co-purchase graph).

    Statistics at ``scale=1``: 2,449,029 nodes, ~123.7M directed edges
    (undirected, both directions stored; average in-degree ~50.5), expected
    maximum in-degree ~20,605, power-law exponent 2.1, edge homophily 0.81,
    100 features, 47 Zipf-skewed classes, split 196,615 train / 39,323 val /
    rest test (~8.0% / 1.6% / 90.4%).  ``scale`` multiplies the node count
    at constant average degree (the maximum degree shrinks with
    ``sqrt(scale)``).  Purely synthetic (``data.synthetic = True``); extra
    keyword arguments override :func:`power_law_graph` parameters.

    Measured (seed 0, full scale): 123,713,516 edges (avg in-degree 50.52),
    max in-degree 21,159, median 17, edge homophily 0.810; ~41 s and
    3.6 GiB peak RSS on 2 CPU cores.
    """
    n = _scaled(_PRODUCTS_N, scale)
    params = dict(
        num_nodes=n, avg_degree=_PRODUCTS_E / _PRODUCTS_N, num_features=100,
        num_classes=47, max_degree=_scaled_max_degree(20_605, scale, n),
        exponent=2.1, homophily=0.81, feature_noise=6.0, class_skew=1.0,
        undirected=True,
        split=_split_from_counts(196_615, 39_323, _PRODUCTS_N),
        seed=seed, name=_preset_name("products_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


_ARXIV_N = 169_343
_ARXIV_E = 1_166_243


def arxiv_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **ogbn-arxiv** (directed citation graph).

    Statistics at ``scale=1``: 169,343 nodes, ~1,166,243 directed edges
    (average in-degree ~6.9), heavy-tailed in-degree with expected maximum
    ~13,155 (exponent 2.1), milder out-degree tail (exponent 3, max ~500),
    edge homophily 0.65, 128 features, 40 Zipf-skewed classes, split
    90,941 / 29,799 / rest (~53.7% / 17.6% / 28.7%).  ``scale`` multiplies
    the node count at constant average degree.  Purely synthetic
    (``data.synthetic = True``); extra keyword arguments override
    :func:`power_law_graph` parameters.

    Measured (seed 0, full scale): 1,166,212 edges, max in-degree 13,046,
    15% of nodes never cited, edge homophily 0.650; ~1 s.
    """
    n = _scaled(_ARXIV_N, scale)
    params = dict(
        num_nodes=n, avg_degree=_ARXIV_E / _ARXIV_N, num_features=128,
        num_classes=40, max_degree=_scaled_max_degree(13_155, scale, n),
        exponent=2.1, source_exponent=3.0,
        max_out_degree=_scaled_max_degree(500, scale, n),
        homophily=0.65, feature_noise=4.0, class_skew=0.7, undirected=False,
        split=_split_from_counts(90_941, 29_799, _ARXIV_N),
        seed=seed, name=_preset_name("arxiv_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


_REDDIT_N = 232_965
_REDDIT_E = 114_615_892


def reddit_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **Reddit** (GraphSAGE post-to-post graph).

    Statistics at ``scale=1``: 232,965 nodes, ~114.6M directed edges
    (undirected, both directions stored; dense, average in-degree ~492),
    expected maximum in-degree ~21,657, a broad but lighter tail than the
    sparse graphs (exponent 3; a heavier one cannot be this dense *and*
    this homophilous without duplicate edges), edge homophily 0.76, 602
    features, 41 mildly skewed classes, split 153,431 / 23,831 / rest
    (~65.9% / 10.2% / 23.9%).  At full scale the features alone are
    232,965 x 602 float32 (~560 MB).  ``scale`` multiplies the node count at
    constant average degree (tiny versions are very dense and fall short
    of the homophily).  Purely synthetic (``data.synthetic = True``); extra
    keyword arguments override :func:`power_law_graph` parameters.

    Measured (seed 0, full scale): 114,475,398 edges (avg in-degree 491.4),
    max in-degree 21,550, median 357, edge homophily 0.761; ~30-50 s and
    3.1 GiB peak RSS on 2 CPU cores.
    """
    n = _scaled(_REDDIT_N, scale)
    params = dict(
        num_nodes=n, avg_degree=_REDDIT_E / _REDDIT_N, num_features=602,
        num_classes=41, max_degree=_scaled_max_degree(21_657, scale, n),
        exponent=3.0, homophily=0.76, feature_noise=8.0, class_skew=0.5,
        undirected=True,
        split=_split_from_counts(153_431, 23_831, _REDDIT_N),
        seed=seed, name=_preset_name("reddit_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


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


def power_law_1m(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic 1M-node power-law graph: the CPU benchmark graph.

    Products-like statistics at a size that fits CPU benchmarks: 1,000,000
    nodes, 50M directed edges (undirected, both directions stored; average
    in-degree 50), expected maximum in-degree ~10,000 (exponent 2.1), edge
    homophily 0.8, 100 features, 47 uniform classes, split 60/20/20.
    ``scale`` multiplies the node count.  Purely synthetic
    (``data.synthetic = True``); extra keyword arguments override
    :func:`power_law_graph` parameters.

    Measured (seed 0): 49,995,242 edges, max in-degree 10,228, median 18,
    edge homophily 0.800; ~20-40 s and 2 GiB peak RSS on 2 CPU cores.
    """
    n = _scaled(1_000_000, scale)
    params = dict(
        num_nodes=n, avg_degree=50.0, num_features=100, num_classes=47,
        max_degree=_scaled_max_degree(10_000, scale, n), exponent=2.1,
        homophily=0.8, feature_noise=6.0, class_skew=0.0, undirected=True,
        split=(0.6, 0.2, 0.2), seed=seed,
        name=_preset_name("power_law_1m", scale))
    params.update(kwargs)
    return power_law_graph(**params)


_REGISTRY: Dict[str, Callable[..., Data]] = {
    "products": products_like,
    "arxiv": arxiv_like,
    "reddit": reddit_like,
    "hub": hub_skewed,
    "er": erdos_renyi,
    "power_law_1m": power_law_1m,
}
DATASET_NAMES: Tuple[str, ...] = tuple(_REGISTRY)


def get_dataset(name: str, **kwargs) -> Data:
    """Build a synthetic dataset by name.

    Valid names: ``'products'`` (:func:`products_like`), ``'arxiv'``
    (:func:`arxiv_like`), ``'reddit'`` (:func:`reddit_like`), ``'hub'``
    (:func:`hub_skewed`), ``'er'`` (:func:`erdos_renyi`) and
    ``'power_law_1m'`` (:func:`power_law_1m`).  The function names
    themselves (e.g. ``'products_like'``) are accepted too.  Keyword
    arguments (``seed``, ``scale``, ...) are passed on.  Every result is
    synthetic (``data.synthetic = True``).

    Raises:
        ValueError: for an unknown name; the message lists the valid names.
    """
    key = str(name).strip().lower().replace("-", "_")
    fn = _REGISTRY.get(key)
    if fn is None:
        fn = {f.__name__: f for f in _REGISTRY.values()}.get(key)
    if fn is None:
        raise ValueError(f"Unknown synthetic dataset {name!r}; valid names: "
                         f"{', '.join(repr(k) for k in DATASET_NAMES)}")
    return fn(**kwargs)


def graph_stats(data: Data) -> Dict[str, object]:
    """Summary statistics of a (synthetic or real) graph.

    Returns a dict with ``name``, ``synthetic``, ``num_nodes``,
    ``num_edges``, ``num_features``, ``num_classes``, ``avg_in_degree``,
    ``max_in_degree``, ``median_in_degree``, ``zero_in_degree_frac``
    (fraction of nodes with no in-edges), ``top_hub_edge_share`` (share of
    in-edges received by the top 0.01% of nodes by in-degree, at least one
    node) and ``edge_homophily`` (fraction of edges whose endpoints share a
    label; ``nan`` without labels).  In-degree counts edges with
    ``edge_index[1] == node``.
    """
    n = int(data.num_nodes)
    ei = data.edge_index
    e = int(ei.size(1))
    deg = torch.bincount(ei[1], minlength=n) if e else torch.zeros(
        n, dtype=torch.long)
    k = max(1, n // 10_000)
    top = float(torch.topk(deg, k).values.sum()) / e if e else 0.0
    y = getattr(data, "y", None)
    if y is not None and e:
        same = 0
        for s in range(0, e, _CHUNK):  # chunked: no [E] int64 temporaries
            src, dst = ei[0, s:s + _CHUNK], ei[1, s:s + _CHUNK]
            same += int((y[src] == y[dst]).sum())
        homophily = same / e
        num_classes = int(y.max()) + 1 if y.numel() else 0
    else:
        homophily, num_classes = float("nan"), 0
    x = getattr(data, "x", None)
    return {
        "name": getattr(data, "name", None),
        "synthetic": bool(getattr(data, "synthetic", False)),
        "num_nodes": n,
        "num_edges": e,
        "num_features": (int(x.size(1)) if x is not None and x.dim() == 2
                         else 0),
        "num_classes": num_classes,
        "avg_in_degree": e / n if n else 0.0,
        "max_in_degree": int(deg.max()) if n else 0,
        "median_in_degree": float(deg.median()) if n else 0.0,
        "zero_in_degree_frac": float((deg == 0).sum()) / n if n else 0.0,
        "top_hub_edge_share": top,
        "edge_homophily": homophily,
    }
