"""Exact O(1) weighted node sampling, overall or within one class.

Weighted draws are exact inverse-CDF draws, served in O(1) from a
class-ordered lookup table with a ``torch.searchsorted`` fallback for the
fractional remainders (a plain ``searchsorted`` over millions of cumulative
weights is ~10x slower; ``torch.multinomial`` cannot do it).
"""

from __future__ import annotations

import torch
from torch import Tensor


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
