"""Temporal, weighted and weighted temporal sampling in
fusesample::neighbor_sample: bitwise against the Python reference
(tests/reference.py, same arithmetic), CUDA == CPU, the statistics (weights,
successive sampling without replacement, time bounds, 'last', weights among
the in-edges the time rule admits), edge cases and bad inputs."""
import itertools

import pytest
import torch
from scipy.stats import chisquare

import reference as ref
from conftest import devices
from pyg_fusesample.ops import neighbor_sample, neighbor_sample_async
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import (slot_values, temporal_csc,
                                               weighted_csc,
                                               weighted_temporal_csc)


def weighted_graph(num_nodes=60, num_edges=500, seed=0, zero_frac=0.2):
    edge_index = ref.random_graph(num_nodes, num_edges, seed=seed, hubs=1,
                                  isolated=3)
    g = torch.Generator().manual_seed(seed)
    weight = torch.rand(edge_index.size(1), generator=g, dtype=torch.float64)
    weight[torch.rand(weight.numel(), generator=g) < zero_frac] = 0.0
    graph = build_csc(edge_index, num_nodes)
    return weighted_csc(graph, slot_values(graph, weight)), weight, edge_index


def temporal_graph(num_nodes=60, num_edges=500, seed=0):
    edge_index = ref.random_graph(num_nodes, num_edges, seed=seed, hubs=1,
                                  isolated=3)
    g = torch.Generator().manual_seed(seed)
    edge_time = torch.randint(0, 50, (edge_index.size(1),), generator=g)
    graph = build_csc(edge_index, num_nodes)
    return temporal_csc(graph, slot_values(graph, edge_time)), edge_time, edge_index


def weighted_temporal_graph(num_nodes=60, num_edges=500, seed=0,
                            zero_frac=0.2):
    edge_index = ref.random_graph(num_nodes, num_edges, seed=seed, hubs=1,
                                  isolated=3)
    g = torch.Generator().manual_seed(seed)
    weight = torch.rand(edge_index.size(1), generator=g, dtype=torch.float64)
    weight[torch.rand(weight.numel(), generator=g) < zero_frac] = 0.0
    edge_time = torch.randint(0, 50, (edge_index.size(1),), generator=g)
    graph = build_csc(edge_index, num_nodes)
    return (weighted_temporal_csc(graph, slot_values(graph, weight),
                                  slot_values(graph, edge_time)),
            weight, edge_time, edge_index)


def seeds_and_times(num_nodes, count=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, num_nodes, (count,), generator=g),
            torch.randint(0, 60, (count,), generator=g))


def run(csc, seed, fanout, replace, device, rng_seed=7, fused=True, **rule):
    g = csc.graph.to(device)
    rule = {k: v.to(device) if isinstance(v, torch.Tensor) else v
            for k, v in rule.items()}
    return neighbor_sample(g.colptr, g.row, g.edge_id, seed.to(device), fanout,
                           replace, rule.pop('disjoint', False), rng_seed, fused,
                           **rule)


def assert_matches_reference(out, expected):
    for name, got, want in zip(('node', 'row', 'col', 'edge', 'batch', 'nsn',
                                'nse'), out, expected):
        if want is None:
            assert got is None, name
        else:
            assert torch.equal(got.cpu(), want), name


FANOUTS = [[3, 2], [1], [0, 4], [-1, 2], [5, 5, 5]]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanout', FANOUTS)
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('disjoint', [False, True])
def test_weighted_matches_reference(device, fanout, replace, disjoint):
    csc, _, _ = weighted_graph()
    seed, _ = seeds_and_times(60)
    out = run(csc, seed, fanout, replace, device, disjoint=disjoint,
              weight_cumsum=csc.weight_cumsum)
    g = csc.graph
    expected = ref.neighbor_sample(g.colptr, g.row, g.edge_id, seed, fanout,
                                   replace, disjoint, 7,
                                   weight_cumsum=csc.weight_cumsum)
    assert_matches_reference(out, expected)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanout', FANOUTS)
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('strategy', ['uniform', 'last'])
def test_temporal_matches_reference(device, fanout, replace, strategy):
    csc, _, _ = temporal_graph()
    seed, seed_time = seeds_and_times(60)
    out = run(csc, seed, fanout, replace, device, disjoint=True,
              edge_time=csc.edge_time, seed_time=seed_time,
              temporal_strategy=strategy)
    g = csc.graph
    expected = ref.neighbor_sample(g.colptr, g.row, g.edge_id, seed, fanout,
                                   replace, True, 7, edge_time=csc.edge_time,
                                   seed_time=seed_time,
                                   temporal_strategy=strategy)
    assert_matches_reference(out, expected)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanout', FANOUTS)
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('strategy', ['uniform', 'last'])
def test_weighted_temporal_matches_reference(device, fanout, replace,
                                             strategy):
    if replace and strategy == 'last':
        pytest.skip("refused (test_bad_op_inputs_name_the_argument)")
    csc, _, _, _ = weighted_temporal_graph()
    seed, seed_time = seeds_and_times(60)
    out = run(csc, seed, fanout, replace, device, disjoint=True,
              edge_time=csc.edge_time, seed_time=seed_time,
              temporal_strategy=strategy, weight_cumsum=csc.weight_cumsum)
    g = csc.graph
    expected = ref.neighbor_sample(g.colptr, g.row, g.edge_id, seed, fanout,
                                   replace, True, 7, edge_time=csc.edge_time,
                                   seed_time=seed_time,
                                   temporal_strategy=strategy,
                                   weight_cumsum=csc.weight_cumsum)
    assert_matches_reference(out, expected)


@pytest.mark.cuda
@pytest.mark.parametrize('kind', ['weighted', 'temporal', 'weighted_temporal'])
@pytest.mark.parametrize('replace', [False, True])
def test_cuda_equals_cpu_on_a_larger_graph(kind, replace):
    # Both launch modes and the async op, against the CPU kernel.
    if kind == 'weighted':
        csc, _, _ = weighted_graph(3000, 60000, seed=5)
        rule = dict(weight_cumsum=csc.weight_cumsum)
    elif kind == 'temporal':
        csc, _, _ = temporal_graph(3000, 60000, seed=5)
        rule = dict(edge_time=csc.edge_time, temporal_strategy='last')
    else:
        csc, _, _, _ = weighted_temporal_graph(3000, 60000, seed=5)
        rule = dict(edge_time=csc.edge_time, weight_cumsum=csc.weight_cumsum)
    seed, seed_time = seeds_and_times(3000, count=256, seed=5)
    if kind != 'weighted':
        rule['seed_time'] = seed_time
    disjoint = kind != 'weighted'
    cpu = run(csc, seed, [10, 5, 3], replace, 'cpu', disjoint=disjoint, **rule)
    for fused in (True, False):
        cuda = run(csc, seed, [10, 5, 3], replace, 'cuda', fused=fused,
                   disjoint=disjoint, **rule)
        for a, b in zip(cpu, cuda):
            assert (a is None and b is None) or torch.equal(a, b.cpu())
    g = csc.graph.to('cuda')
    cuda_rule = {k: v.cuda() if isinstance(v, torch.Tensor) else v
                 for k, v in rule.items()}
    pending = neighbor_sample_async(g.colptr, g.row, g.edge_id, seed.cuda(),
                                    [10, 5, 3], replace, disjoint, 7,
                                    **cuda_rule).wait()
    for a, b in zip(cpu[:4], pending[:4]):
        assert torch.equal(a, b.cpu())


def star(weights):
    # One target (node 0) with an in-edge from node i + 1 of weight w_i.
    n = len(weights)
    edge_index = torch.stack([torch.arange(1, n + 1), torch.zeros(n, dtype=torch.long)])
    graph = build_csc(edge_index, n + 1)
    return weighted_csc(graph, slot_values(graph, torch.tensor(weights,
                                                               dtype=torch.float64)))


def draws(csc, k, replace, trials, device):
    # The in-edge ids drawn at node 0 over `trials` keys.
    g = csc.graph.to(device)
    cum = csc.weight_cumsum.to(device)
    seed = torch.zeros(1, dtype=torch.long, device=device)
    out = []
    for key in range(trials):
        o = neighbor_sample(g.colptr, g.row, g.edge_id, seed, [k], replace,
                            False, key, weight_cumsum=cum)
        out.append(o.edge.tolist())
    return out


@pytest.mark.parametrize('device', devices())
def test_weighted_with_replacement_chi_square(device):
    weights = [1.0, 2.0, 3.0, 4.0, 0.0, 10.0]
    picks = list(itertools.chain(*draws(star(weights), 3, True, 4000, device)))
    counts = torch.bincount(torch.tensor(picks), minlength=len(weights))
    assert counts[4] == 0  # zero weight: never drawn
    positive = [i for i, w in enumerate(weights) if w > 0]
    total = sum(weights)
    expected = [len(picks) * weights[i] / total for i in positive]
    assert chisquare(counts[positive].tolist(), expected).pvalue > 1e-3


@pytest.mark.parametrize('device', devices())
def test_weighted_without_replacement_is_successive_sampling(device):
    # k = 2 of 4 weighted in-edges: each unordered pair {i, j} has
    # probability w_i/W * w_j/(W - w_i) + w_j/W * w_i/(W - w_j).
    weights = [1.0, 2.0, 3.0, 6.0, 0.0]
    trials = 6000
    samples = draws(star(weights), 2, False, trials, device)
    assert all(len(set(s)) == 2 and 4 not in s for s in samples)
    W = sum(weights)
    pairs = list(itertools.combinations(range(4), 2))
    prob = {(i, j): weights[i] / W * weights[j] / (W - weights[i])
            + weights[j] / W * weights[i] / (W - weights[j]) for i, j in pairs}
    observed = {p: 0 for p in pairs}
    for s in samples:
        observed[tuple(sorted(s))] += 1
    assert abs(sum(prob.values()) - 1) < 1e-12
    result = chisquare([observed[p] for p in pairs],
                       [trials * prob[p] for p in pairs])
    assert result.pvalue > 1e-3


@pytest.mark.parametrize('device', devices())
def test_zero_weights_are_never_drawn_even_when_taking_all(device):
    csc = star([0.0, 1.0, 0.0, 2.0])
    for k, replace in ((-1, False), (10, False), (3, False), (2, True)):
        for s in draws(csc, k, replace, 20, device):
            assert set(s) <= {1, 3}
    assert all(sorted(s) == [1, 3] for s in draws(csc, -1, False, 3, device))
    # Only zero weights: nothing is drawn.
    assert all(s == [] for s in draws(star([0.0, 0.0]), 2, True, 5, device))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('strategy', ['uniform', 'last'])
def test_no_future_edges_and_last_takes_the_latest(device, strategy):
    csc, _, _ = temporal_graph(200, 4000, seed=2)
    g = csc.graph
    colptr, edge_time = g.colptr, csc.edge_time
    for key in range(20):
        seed, seed_time = seeds_and_times(200, count=16, seed=key)
        out = run(csc, seed, [4, 3], False, device, rng_seed=key, disjoint=True,
                  edge_time=edge_time, seed_time=seed_time,
                  temporal_strategy=strategy)
        # Every sampled edge is no later than its root seed's time.
        slot = {int(e): i for i, e in enumerate(g.edge_id.tolist())}
        slots = torch.tensor([slot[int(e)] for e in out.edge.cpu()],
                             dtype=torch.long)
        root = out.batch.cpu()[out.col.cpu()]
        assert (edge_time[slots] <= seed_time[root]).all()
        if strategy == 'last':
            # Hop 0: each seed takes exactly its latest min(k, allowed).
            nse0 = int(out.num_sampled_edges[0])
            for i in range(seed.numel()):
                v, t = int(seed[i]), int(seed_time[i])
                allowed = [e for e in range(int(colptr[v]), int(colptr[v + 1]))
                           if int(edge_time[e]) <= t]
                want = sorted(int(g.edge_id[e]) for e in allowed[-4:])
                got = sorted(out.edge.cpu()[:nse0][out.col.cpu()[:nse0] == i].tolist())
                assert got == want


def timed_star(weights, times):
    # Node 0's in-edges from nodes 1..n, weights and times per edge.
    n = len(weights)
    edge_index = torch.stack([torch.arange(1, n + 1),
                              torch.zeros(n, dtype=torch.long)])
    graph = build_csc(edge_index, n + 1)
    return weighted_temporal_csc(
        graph, slot_values(graph, torch.tensor(weights, dtype=torch.float64)),
        slot_values(graph, torch.tensor(times)))


def timed_draws(csc, k, replace, trials, device, seed_time, strategy='uniform'):
    g = csc.graph.to(device)
    out = []
    for key in range(trials):
        o = neighbor_sample(
            g.colptr, g.row, g.edge_id, torch.zeros(1, dtype=torch.long,
                                                    device=device),
            [k], replace, True, key, edge_time=csc.edge_time.to(device),
            seed_time=torch.tensor([seed_time], device=device),
            temporal_strategy=strategy,
            weight_cumsum=csc.weight_cumsum.to(device))
        out.append(o.edge.tolist())
    return out


# Edge i: weight WEIGHTS[i], time TIMES[i]; the seed's time 5 admits edges
# 0, 1, 3, 4 (edge 4 has weight 0: never drawn), not 2 and 5 (later).
WEIGHTS = [1.0, 3.0, 50.0, 2.0, 0.0, 40.0, 4.0]
TIMES = [1, 5, 6, 0, 2, 9, 3]
ADMITTED = [0, 1, 3, 6]


@pytest.mark.parametrize('device', devices())
def test_weighted_temporal_with_replacement_chi_square(device):
    picks = list(itertools.chain(*timed_draws(
        timed_star(WEIGHTS, TIMES), 3, True, 4000, device, seed_time=5)))
    counts = torch.bincount(torch.tensor(picks), minlength=len(WEIGHTS))
    assert counts[[2, 4, 5]].sum() == 0  # future or weightless: never
    total = sum(WEIGHTS[i] for i in ADMITTED)
    expected = [len(picks) * WEIGHTS[i] / total for i in ADMITTED]
    assert chisquare(counts[ADMITTED].tolist(), expected).pvalue > 1e-3


@pytest.mark.parametrize('device', devices())
def test_weighted_temporal_without_replacement_is_successive_sampling(device):
    trials = 6000
    samples = timed_draws(timed_star(WEIGHTS, TIMES), 2, False, trials, device,
                          seed_time=5)
    assert all(len(set(s)) == 2 and set(s) <= set(ADMITTED) for s in samples)
    W = sum(WEIGHTS[i] for i in ADMITTED)
    pairs = list(itertools.combinations(ADMITTED, 2))
    w = WEIGHTS
    prob = {(i, j): w[i] / W * w[j] / (W - w[i]) + w[j] / W * w[i] / (W - w[j])
            for i, j in pairs}
    observed = {p: 0 for p in pairs}
    for s in samples:
        observed[tuple(sorted(s))] += 1
    assert abs(sum(prob.values()) - 1) < 1e-12
    assert chisquare([observed[p] for p in pairs],
                     [trials * prob[p] for p in pairs]).pvalue > 1e-3


@pytest.mark.parametrize('device', devices())
def test_weighted_temporal_last_and_no_future(device):
    csc = timed_star(WEIGHTS, TIMES)
    # 'last': the latest 2 admitted positive-weight in-edges (times 5, 3).
    for s in timed_draws(csc, 2, False, 5, device, seed_time=5,
                         strategy='last'):
        assert sorted(s) == [1, 6]
    # k = -1 takes every admitted positive-weight in-edge, nothing else.
    for s in timed_draws(csc, -1, False, 3, device, seed_time=5):
        assert sorted(s) == ADMITTED
    # A time before every edge: nothing.
    assert all(s == [] for s in timed_draws(csc, 3, True, 5, device,
                                            seed_time=-1))
    # On a random graph: no sampled edge is later than its root's time or
    # weightless.
    big, weight, edge_time, _ = weighted_temporal_graph(200, 4000, seed=3)
    for key in range(10):
        seed, seed_time = seeds_and_times(200, count=16, seed=key)
        out = run(big, seed, [4, 3], key % 2 == 1, device, rng_seed=key,
                  disjoint=True, edge_time=big.edge_time, seed_time=seed_time,
                  weight_cumsum=big.weight_cumsum)
        root = out.batch.cpu()[out.col.cpu()]
        e = out.edge.cpu()
        assert (edge_time[e] <= seed_time[root]).all()
        assert (weight[e] > 0).all()


@pytest.mark.parametrize('device', devices())
def test_edge_cases(device):
    csc, _, _ = weighted_graph()
    empty = torch.empty(0, dtype=torch.long)
    out = run(csc, empty, [3, 2], False, device, weight_cumsum=csc.weight_cumsum)
    assert out.node.numel() == 0 and out.edge.numel() == 0
    tcsc, _, _ = temporal_graph()
    # A seed time before every edge: no neighbours, the seeds alone.
    seed = torch.tensor([0, 1, 2])
    out = run(tcsc, seed, [3, 2], False, device, disjoint=True,
              edge_time=tcsc.edge_time, seed_time=torch.full((3,), -1))
    assert out.node.tolist() == [0, 1, 2] and out.edge.numel() == 0


def _op_args(csc, **change):
    g = csc.graph
    args = dict(colptr=g.colptr, row=g.row, edge_id=g.edge_id,
                seed=torch.tensor([0, 1]), num_neighbors=[2], disjoint=True,
                edge_time=None, seed_time=None, weight_cumsum=None)
    args.update(change)
    return args


@pytest.mark.parametrize('change,match', [
    (lambda t, w: dict(edge_time=t, seed_time=torch.tensor([5, 5]),
                       disjoint=False), 'needs disjoint=True'),
    (lambda t, w: dict(edge_time=t), "come together"),
    (lambda t, w: dict(edge_time=t, seed_time=torch.tensor([5])),
     "'seed_time' must have 2 entries"),
    (lambda t, w: dict(edge_time=t.float(), seed_time=torch.tensor([5, 5])),
     "'edge_time' must be Long"),
    (lambda t, w: dict(weight_cumsum=w.float()), "'weight_cumsum' must be Double"),
    (lambda t, w: dict(weight_cumsum=w[:-1]), "'weight_cumsum' must have"),
    (lambda t, w: dict(weight_cumsum=w, edge_time=t, replace=True,
                       seed_time=torch.tensor([5, 5]), temporal_last=True),
     "with replacement under temporal_strategy='last'"),
])
def test_bad_op_inputs_name_the_argument(change, match):
    tcsc, _, _ = temporal_graph()
    cumsum = torch.ones(tcsc.graph.num_edges, dtype=torch.float64).cumsum(0)
    with pytest.raises(RuntimeError, match=match):
        torch.ops.fusesample.neighbor_sample(
            **_op_args(tcsc, **change(tcsc.edge_time, cumsum)))


def test_unsorted_times_raise_on_the_cpu():
    tcsc, _, _ = temporal_graph()
    g = tcsc.graph
    seg = int(torch.argmax(g.colptr[1:] - g.colptr[:-1]))  # the hub
    bad = tcsc.edge_time.clone()
    start, end = int(g.colptr[seg]), int(g.colptr[seg + 1])
    bad[start:end] = bad[start:end].flip(0) + torch.arange(end - start)
    bad[start] = bad[end - 1] + 1
    with pytest.raises(RuntimeError, match="'edge_time' is not sorted"):
        neighbor_sample(g.colptr, g.row, g.edge_id, torch.tensor([seg]), [2],
                        False, True, 0, edge_time=bad,
                        seed_time=torch.tensor([100]))
    with pytest.raises(ValueError, match="'temporal_strategy' must be"):
        neighbor_sample(g.colptr, g.row, g.edge_id, torch.tensor([0]), [2],
                        False, True, 0, edge_time=tcsc.edge_time,
                        seed_time=torch.tensor([100]), temporal_strategy='first')


def test_rule_graph_keeps_edges_and_orders_segments():
    csc, weight, edge_index = weighted_graph()
    g = csc.graph
    # The positive-weight edges of each segment, with per-segment prefix sums.
    assert g.num_edges == int((weight > 0).sum())
    for v in range(g.num_nodes):
        s, e = int(g.colptr[v]), int(g.colptr[v + 1])
        ids = g.edge_id[s:e]
        assert (edge_index[1, ids] == v).all()
        assert torch.equal(g.row[s:e].long(), edge_index[0, ids])
        assert (weight[ids] > 0).all()
        assert int(((edge_index[1] == v) & (weight > 0)).sum()) == e - s
        assert torch.allclose(csc.weight_cumsum[s:e], weight[ids].cumsum(0))
    tcsc, edge_time, _ = temporal_graph()
    t = tcsc.edge_time
    for v in range(tcsc.graph.num_nodes):
        s, e = int(tcsc.graph.colptr[v]), int(tcsc.graph.colptr[v + 1])
        assert (t[s:e][1:] >= t[s:e][:-1]).all()
        assert torch.equal(t[s:e], edge_time[tcsc.graph.edge_id[s:e]])
