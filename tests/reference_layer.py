"""A pure-Python reference of fusesample::layer_sample (slow, obviously
correct), drawing with the same keys as kernels/layer/layer_draws.h."""
from collections import Counter

from reference import det_neg_log, random_bits, weighted_draw


def layer_sample(colptr, row, edge_id, edge_value, node_cumsum, seed,
                 num_samples, rng_seed):
    node = list(seed)
    rows, cols, edges, weights = [], [], [], []
    nsn, nse = [len(node)], []
    for layer, s in enumerate(num_samples):
        slots = [(t, e) for t, v in enumerate(node)
                 for e in range(colptr[v], colptr[v + 1])]
        src = [row[e] for _, e in slots]
        val = [1.0 if edge_value is None else edge_value[e] for _, e in slots]
        mult = None
        exact = False
        if node_cumsum is None:
            q = {}
            for u, a in zip(src, val):
                q[u] = q.get(u, 0.0) + a * a
            live = sorted(u for u in q if q[u] > 0)
            if s < 0 or s >= len(live):
                chosen, exact = live, True
            elif s == 0:
                chosen, exact = [], True
            else:
                def key(u):
                    m = (random_bits(rng_seed, layer, u, 0) >> 11) + 1
                    return (det_neg_log(m) / q[u], u)
                chosen = sorted(sorted(live, key=key)[:s])
            total = sum(q.values())
            prob = {u: q[u] / total for u in q}
        else:
            n = len(node_cumsum)
            weight = [node_cumsum[0]] + [node_cumsum[i] - node_cumsum[i - 1]
                                         for i in range(1, n)]
            if s < 0:
                chosen, exact = [u for u in range(n) if weight[u] > 0], True
            else:
                draws = [weighted_draw(rng_seed, layer, j, 1, node_cumsum, 0, n)
                         for j in range(s)]
                mult = Counter(draws)
                chosen = sorted(mult)
            prob = {u: weight[u] / node_cumsum[-1] for u in range(n)}
        fresh = [u for u in chosen if u not in node]
        node += fresh
        nsn.append(len(fresh))
        pool = set(node) if node_cumsum is None else set(chosen)
        kept = 0
        for (t, e), u, a in zip(slots, src, val):
            if u not in pool:
                continue
            rows.append(node.index(u))
            cols.append(t)
            edges.append(e if edge_id is None else edge_id[e])
            if exact:
                weights.append(a)
            else:
                m = 1 if mult is None else mult[u]
                p = prob[u]
                weights.append(a * m / (s * p) if p > 0 else 0.0)
            kept += 1
        nse.append(kept)
    return node, rows, cols, edges, weights, nsn, nse
