"""A pure-Python reference of fusesample::random_walk (slow, obviously
correct): the same keyed draws as kernels/walk/walk_step.h, so tests compare
walks exactly."""
from typing import List, Optional, Tuple

from reference import random_bits, uniform_below, weighted_draw

ACCEPT = 1 << 62
EXACT = (1 << 64) - 2
RESTART = (1 << 64) - 1
FRONTIER = (1 << 64) - 3
MAX_TRIALS = 64


def unit(bits: int) -> float:
    return float(bits >> 11) * 2.0**-53


def random_walk(rowptr: List[int], col: List[int], edge_id: Optional[List[int]],
                cum: Optional[List[float]], start: List[int], walk_length: int,
                p: float, q: float, restart_prob: float, seed: int
                ) -> Tuple[List[List[int]], List[List[int]]]:
    second = p != 1.0 or q != 1.0
    max_alpha = max(1.0 / p, 1.0, 1.0 / q)

    def weight(b, e):
        if cum is None:
            return 1.0
        return cum[e] if e == b else cum[e] - cum[e - 1]

    def propose(b, e, i, s, trial):
        if cum is None:
            return b + uniform_below(random_bits(seed, i, s, trial), e - b)
        return b + weighted_draw(seed, i, s, trial, cum, b, e - b)

    def alpha(t, x):
        if x == t:
            return 1.0 / p
        return 1.0 if x in col[rowptr[t]:rowptr[t + 1]] else 1.0 / q

    def step(i, s, v, t):
        b, e = rowptr[v], rowptr[v + 1]
        if b == e or (cum is not None and not cum[e - 1] > 0):
            return -1
        if not second or t < 0:
            return propose(b, e, i, s, 0)
        for trial in range(MAX_TRIALS):
            slot = propose(b, e, i, s, trial)
            a = alpha(t, col[slot])
            if unit(random_bits(seed, i, s, ACCEPT | trial)) * max_alpha < a:
                return slot
        mass = [weight(b, k) * alpha(t, col[k]) for k in range(b, e)]
        target = unit(random_bits(seed, i, s, EXACT)) * sum(mass)
        acc, last = 0.0, b
        for k, m in zip(range(b, e), mass):
            if m <= 0:
                continue
            acc += m
            last = k
            if acc > target:
                return k
        return last

    nodes, edges = [], []
    for i, v0 in enumerate(start):
        v, t, walk, eids = v0, -1, [v0], []
        for s in range(walk_length):
            slot = -1
            if restart_prob > 0 and unit(random_bits(seed, i, s, RESTART)) < restart_prob:
                v, t = v0, -1
            else:
                slot = step(i, s, v, t)
                t = -1 if slot < 0 else v
                if slot >= 0:
                    v = col[slot]
            walk.append(v)
            eids.append(-1 if slot < 0 else
                        (edge_id[slot] if edge_id is not None else slot))
        nodes.append(walk)
        edges.append(eids)
    return nodes, edges


def multi_root_walk(rowptr, col, edge_id, cum, roots, walk_length, seed):
    """Frontier sampling: node rows [R + walk_length], edge rows."""
    def mass(v):
        b, e = rowptr[v], rowptr[v + 1]
        if b == e:
            return 0.0
        return float(e - b) if cum is None else cum[e - 1]

    nodes, edges = [], []
    for i, r in enumerate(roots):
        frontier, walk, eids = list(r), list(r), []
        for s in range(walk_length):
            total = 0.0
            for v in frontier:
                total += mass(v)
            if not total > 0:
                walk.append(-1)
                eids.append(-1)
                continue
            target = unit(random_bits(seed, i, s, FRONTIER)) * total
            acc, mover = 0.0, None
            for k, v in enumerate(frontier):
                if mass(v) <= 0:
                    continue
                acc += mass(v)
                if acc > target:
                    mover = k
                    break
            if mover is None:
                mover = max(k for k, v in enumerate(frontier) if mass(v) > 0)
            v = frontier[mover]
            b, e = rowptr[v], rowptr[v + 1]
            if cum is None:
                slot = b + uniform_below(random_bits(seed, i, s, 0), e - b)
            else:
                slot = b + weighted_draw(seed, i, s, 0, cum, b, e - b)
            frontier[mover] = col[slot]
            walk.append(col[slot])
            eids.append(slot if edge_id is None else edge_id[slot])
        nodes.append(walk)
        edges.append(eids)
    return nodes, edges
