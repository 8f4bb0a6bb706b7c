"""Pure-Python references for the sampling ops (slow, obviously correct).

The RNG is re-implemented from kernels/common/rng.h so the references draw
the very same samples as the kernels: tests compare outputs exactly.
"""
from typing import List, Optional

import torch

M64 = (1 << 64) - 1


def mix64(z: int) -> int:
    z &= M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def random_bits(seed: int, a: int, b: int, c: int) -> int:
    h = mix64(seed + 0x9e3779b97f4a7c15)
    h = mix64(h ^ ((a + 0x632be59bd9b4e019) & M64))
    h = mix64(h ^ ((b + 0x8cb92ba72f3d8dd7) & M64))
    return mix64(h ^ ((c + 0xd6e8feb86659fd93) & M64))


def uniform_below(bits: int, n: int) -> int:
    return (bits * n) >> 64


def sample_positions(d: int, k: int, replace: bool, seed: int, hop: int,
                     pos: int) -> List[int]:
    """Positions in a target's in-edge list, in draw order."""
    if k < 0 or (not replace and k >= d):
        return list(range(d))
    if replace:
        return [uniform_below(random_bits(seed, hop, pos, s), d)
                for s in range(k)] if d > 0 else []
    picks = []  # Floyd's algorithm
    for s in range(k):
        j = d - k + s
        t = uniform_below(random_bits(seed, hop, pos, s), j + 1)
        picks.append(j if t in picks else t)
    return picks


# Temporal and weighted sampling (kernels/sampler/segment_rule.h), with the
# same arithmetic: Python floats are IEEE doubles and + - * / round alone,
# as the kernels' FS_ADD/FS_MUL/... do, so the draws match bit for bit.

def rule_range(colptr, seg, k, edge_time=None, limit=None, last=False,
               cum=None):
    """A segment's drawable positions [start, start + d)."""
    start, d = colptr[seg], colptr[seg + 1] - colptr[seg]
    if edge_time is not None:
        d = sum(1 for e in range(start, start + d) if edge_time[e] <= limit)
        if last and k >= 0 and d > k:
            start, d = start + d - k, k
    return start, d


def det_neg_log(m: int) -> float:
    e = m.bit_length() - 1
    f = float(m) / float(1 << e)
    ex = e
    if f > 1.4142135623730951:
        f, ex = f * 0.5, ex + 1
    s = (f - 1.0) / (f + 1.0)
    s2 = s * s
    acc = 1.0 / 23.0
    for n in range(21, 0, -2):
        acc = acc * s2 + 1.0 / n  # two roundings, as FS_MUL then FS_ADD
    log_f = (2.0 * s) * acc
    return -(float(ex - 53) * 0.6931471805599453 + log_f)


WEIGHTED_ATTEMPTS = 128


def weighted_key(seed, a, b, j, cum, start):
    w = cum[start] if j == 0 else cum[start + j] - cum[start + j - 1]
    m = (random_bits(seed, a, b, j | (1 << 62)) >> 11) + 1
    return det_neg_log(m) / w


def weighted_draw(seed, a, b, s, cum, start, d):
    r = float(random_bits(seed, a, b, s) >> 11) * 2.0**-53 * cum[start + d - 1]
    return next((i for i in range(d) if cum[start + i] > r), d - 1)


def weighted_positions(d, k, replace, seed, a, b, cum, start):
    if k < 0 or (not replace and k >= d):
        return list(range(d))
    if replace:
        return [weighted_draw(seed, a, b, s, cum, start, d)
                for s in range(k)] if d > 0 else []
    picks = []  # successive sampling: rejection of repeats, then keys
    for s in range(WEIGHTED_ATTEMPTS):
        if len(picks) == k:
            break
        j = weighted_draw(seed, a, b, s, cum, start, d)
        if j not in picks:
            picks.append(j)
    keys = sorted((weighted_key(seed, a, b, j, cum, start), j)
                  for j in range(d) if j not in picks)
    return picks + [j for _, j in keys[:k - len(picks)]]


def neighbor_sample(colptr, row, edge_id, seed, num_neighbors, replace=False,
                    disjoint=False, rng_seed=0, num_edge_types=1,
                    edge_time=None, seed_time=None, temporal_strategy='uniform',
                    weight_cumsum=None):
    """With num_edge_types T > 1: the typed CSC (segment v*T+t holds v's
    in-edges of type t) and hop-major fan-outs [L*T]; draws keyed by
    hop*T+t, a target's segments one after the other. edge_time/seed_time:
    temporal sampling (disjoint); weight_cumsum: weighted sampling."""
    T = num_edge_types
    edge_time = edge_time.tolist() if edge_time is not None else None
    seed_time = seed_time.tolist() if seed_time is not None else None
    cum = weight_cumsum.tolist() if weight_cumsum is not None else None
    last = temporal_strategy == 'last'
    colptr, row = colptr.tolist(), row.tolist()
    eid = edge_id.tolist() if edge_id is not None else None
    node = seed.tolist()
    batch = list(range(len(node))) if disjoint else []
    key = (lambda v, b: (b, v)) if disjoint else (lambda v, b: v)
    local = {}
    for i, v in enumerate(node):
        local.setdefault(key(v, i if disjoint else 0), i)
    rows, cols, edges = [], [], []
    nsn, nse = [len(node)], []
    begin, end = 0, len(node)
    for hop in range(len(num_neighbors) // T):
        count = 0
        for t in range(begin, end):
            v = node[t]
            b = batch[t] if disjoint else 0
            for et in range(T):
                k = num_neighbors[hop * T + et]
                start, d = rule_range(colptr, v * T + et, k, edge_time,
                                      seed_time[b] if seed_time else None,
                                      last, cum)
                draws = (weighted_positions(d, k, replace, rng_seed, hop * T + et,
                                            t, cum, start) if cum is not None
                         else sample_positions(d, k, replace, rng_seed,
                                               hop * T + et, t))
                for j in draws:
                    u = row[start + j]
                    if key(u, b) not in local:
                        local[key(u, b)] = len(node)
                        node.append(u)
                        if disjoint:
                            batch.append(b)
                    rows.append(local[key(u, b)])
                    cols.append(t)
                    edges.append(eid[start + j] if eid is not None else start + j)
                    count += 1
        nse.append(count)
        nsn.append(len(node) - end)
        begin, end = end, len(node)
    t = lambda x: torch.tensor(x, dtype=torch.long)  # noqa: E731
    return (t(node), t(rows), t(cols), t(edges), t(batch) if disjoint else None,
            t(nsn), t(nse))


def induced_subgraph(colptr, row, edge_id, node):
    colptr, row, node = colptr.tolist(), row.tolist(), node.tolist()
    local = {v: i for i, v in enumerate(node)}
    rows, cols, edges = [], [], []
    for i, v in enumerate(node):
        for e in range(colptr[v], colptr[v + 1]):
            if row[e] in local:
                rows.append(local[row[e]])
                cols.append(i)
                edges.append(int(edge_id[e]) if edge_id is not None else e)
    t = lambda x: torch.tensor(x, dtype=torch.long)  # noqa: E731
    return t(rows), t(cols), t(edges)


def csc_from_coo(edge_index, num_nodes):
    col = edge_index[1]
    perm = torch.sort(col, stable=True).indices
    colptr = torch.zeros(num_nodes + 1, dtype=torch.long)
    colptr[1:] = torch.cumsum(torch.bincount(col, minlength=num_nodes), 0)
    return colptr, edge_index[0][perm], perm


def random_graph(num_nodes: int, num_edges: int, seed: int = 0,
                 hubs: int = 0, isolated: int = 0):
    """A random multigraph-free directed graph with optional hub targets
    (in-degree ~num_nodes/2) and isolated nodes (ids >= num_nodes -
    isolated receive and send no edges)."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - isolated
    src = torch.randint(active, (num_edges, ), generator=g)
    dst = torch.randint(active, (num_edges, ), generator=g)
    if hubs:
        hub_src = torch.randint(active, (hubs * active // 2, ), generator=g)
        hub_dst = torch.arange(hubs).repeat_interleave(active // 2)
        src, dst = torch.cat([src, hub_src]), torch.cat([dst, hub_dst])
    keys = torch.unique(src * num_nodes + dst)
    src, dst = keys // num_nodes, keys % num_nodes
    keep = src != dst
    perm = torch.randperm(int(keep.sum()), generator=g)
    return torch.stack([src[keep], dst[keep]])[:, perm]
