"""Draws the (source, target) pairs of the Chung-Lu + homophily model.

Targets (``edge_index[1]``) are drawn proportionally to the weights; the
source (``edge_index[0]``) of an edge is drawn by weight from the target's
own class with probability ``p_t`` and from all nodes otherwise.  ``p_t`` is
solved so that the expected *edge homophily* (fraction of edges whose
endpoints share a label, counting the chance that a random source shares the
class anyway) equals ``homophily``; it is capped for class hubs whose
same-class draws would exceed what their class can offer without
duplicates.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from .chunking import _CHUNK
from .class_table import _ClassTable
from .edge_keys import _decode


# Rounds of redrawing the sources of self loops before dropping leftovers.
_SELF_LOOP_ROUNDS = 8
# A target draws at most this multiple of its class's effective size
# (participation ratio of the weights) in same-class sources; beyond that
# most same-class draws would be duplicates.
_SAME_CLASS_BUDGET = 1.0


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
