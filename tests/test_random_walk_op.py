"""fusesample::random_walk: exact agreement with the Python reference,
every step an edge, and the walk laws (uniform, weighted, node2vec p/q,
restart) checked statistically."""
import math

import pytest
import torch
from reference_walk import random_walk as reference_walk
from scipy.stats import chisquare

from conftest import devices
from pyg_fusesample.ops import random_walk
from pyg_fusesample.sparse import WalkGraph


def _graph(num_nodes=40, num_edges=200, seed=0, sinks=(0, 1)):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(num_nodes, (2, num_edges), generator=g)
    keep = ~torch.isin(ei[0], torch.tensor(sinks))   # nodes without out-edges
    return ei[:, keep]


def _reference(graph: WalkGraph, start, walk_length, p=1.0, q=1.0,
               restart_prob=0.0, rng_seed=0):
    cum = None if graph.weight_cumsum is None else graph.weight_cumsum.tolist()
    nodes, edges = reference_walk(
        graph.rowptr.tolist(), graph.col.tolist(), graph.edge_id.tolist(), cum,
        start.tolist(), walk_length, p, q, restart_prob, rng_seed)
    return torch.tensor(nodes), torch.tensor(edges).view(len(nodes), -1)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('p,q', [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25)])
@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('restart_prob', [0.0, 0.3])
def test_matches_reference(device, p, q, weighted, restart_prob):
    ei = _graph()
    weight = torch.rand(ei.size(1), generator=torch.Generator().manual_seed(1))
    weight[::7] = 0  # zero-weight edges are never taken
    graph = WalkGraph.from_edge_index(ei, 40, weight if weighted else None)
    start = torch.arange(40).repeat(2)
    node, edge = random_walk(graph.to(device), start.to(device), 12, p=p, q=q,
                             restart_prob=restart_prob, rng_seed=123,
                             return_edge_indices=True)
    ref_node, ref_edge = _reference(graph, start, 12, p, q, restart_prob, 123)
    assert torch.equal(node.cpu(), ref_node)
    assert torch.equal(edge.cpu(), ref_edge)


@pytest.mark.parametrize('p,q', [(1.0, 1.0), (0.5, 2.0)])
@pytest.mark.parametrize('weighted', [False, True])
def test_every_step_is_an_edge(p, q, weighted):
    ei = _graph(num_nodes=60, num_edges=500, seed=3)
    weight = torch.rand(ei.size(1)) if weighted else None
    start = torch.arange(60)
    node, edge = random_walk(ei, start, 30, p=p, q=q, edge_weight=weight,
                             num_nodes=60, return_edge_indices=True, rng_seed=7)
    assert node.shape == (60, 31) and edge.shape == (60, 30)
    assert torch.equal(node[:, 0], start)
    moved = edge >= 0
    src, dst = node[:, :-1][moved], node[:, 1:][moved]
    assert torch.equal(ei[0, edge[moved]], src)
    assert torch.equal(ei[1, edge[moved]], dst)
    if weighted:
        assert bool((weight[edge[moved]] > 0).all())
    # Without restarts a walk stays put only at a sink.
    out_degree = torch.bincount(ei[0], minlength=60)
    stay = ~moved
    assert bool((node[:, :-1][stay] == node[:, 1:][stay]).all())
    assert bool((out_degree[node[:, :-1][stay]] == 0).all())


def test_sinks_and_isolated_nodes():
    ei = torch.tensor([[0, 1], [1, 2]])  # 2 is a sink, 3 isolated
    node, edge = random_walk(ei, torch.tensor([0, 2, 3]), 4, num_nodes=4,
                             return_edge_indices=True, rng_seed=0)
    assert node.tolist() == [[0, 1, 2, 2, 2], [2] * 5, [3] * 5]
    assert edge.tolist() == [[0, 1, -1, -1], [-1] * 4, [-1] * 4]


def test_empty_start_and_empty_graph():
    ei = torch.empty(2, 0, dtype=torch.long)
    node, edge = random_walk(ei, torch.empty(0, dtype=torch.long), 3,
                             num_nodes=5, return_edge_indices=True)
    assert node.shape == (0, 4) and edge.shape == (0, 3)
    node = random_walk(ei, torch.tensor([4]), 2, num_nodes=5)
    assert node.tolist() == [[4, 4, 4]]


def test_uniform_first_step():
    # Node 0 has 5 out-neighbours, one of them twice (a multi-edge counts
    # twice).
    ei = torch.tensor([[0, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 5]])
    start = torch.zeros(60000, dtype=torch.long)
    node = random_walk(ei, start, 1, num_nodes=6, rng_seed=11)
    counts = torch.bincount(node[:, 1], minlength=6)[1:].double()
    expected = torch.tensor([1, 1, 1, 1, 2.], dtype=torch.float64) / 6 * start.numel()
    assert chisquare(counts, expected).pvalue > 1e-3


def test_weighted_first_step():
    ei = torch.tensor([[0, 0, 0, 0], [1, 2, 3, 4]])
    weight = torch.tensor([1.0, 0.0, 3.0, 6.0])
    start = torch.zeros(50000, dtype=torch.long)
    node = random_walk(ei, start, 1, edge_weight=weight, num_nodes=5,
                       rng_seed=5)
    counts = torch.bincount(node[:, 1], minlength=5).double()
    assert counts[2] == 0
    expected = torch.tensor([1, 3, 6.], dtype=torch.float64) / 10 * start.numel()
    assert chisquare(counts[[1, 3, 4]], expected).pvalue > 1e-3


def _second_step_law(p, q, num_walks=80000, seed=3):
    # t = 0 -> v = 1; from 1: back to 0 (1/p), to 2 (also a neighbour of 0:
    # weight 1), to 3 and 4 (not neighbours of 0: 1/q).
    ei = torch.tensor([[0, 0, 1, 1, 1, 1],
                       [1, 2, 0, 2, 3, 4]])
    start = torch.zeros(num_walks, dtype=torch.long)
    node = random_walk(ei, start, 2, p=p, q=q, num_nodes=5, rng_seed=seed)
    node = node[node[:, 1] == 1]
    counts = torch.bincount(node[:, 2], minlength=5).double()
    alpha = torch.tensor([1 / p, 0, 1, 1 / q, 1 / q], dtype=torch.float64)
    return counts, alpha / alpha.sum() * node.size(0)


@pytest.mark.parametrize('p,q', [(1.0, 1.0), (0.5, 2.0), (2.0, 0.5),
                                 (4.0, 1.0)])
def test_node2vec_transition_probabilities(p, q):
    counts, expected = _second_step_law(p, q)
    assert counts[1] == 0
    keep = [0, 2, 3, 4]
    assert chisquare(counts[keep], expected[keep]).pvalue > 1e-3


def test_node2vec_extreme_pq_uses_exact_fallback():
    # From v = 1 with 100 out-neighbours, coming from t = 0: alpha = 100 for
    # the way back, 0.01 for the other 99; a trial is accepted with
    # probability ~0.01, so about half the steps exhaust the 64 trials and
    # take the exact draw. The law must not change.
    others = torch.arange(2, 101)
    ei = torch.cat([torch.tensor([[0], [1]]),
                    torch.stack([torch.ones_like(others), others]),
                    torch.tensor([[1], [0]])], dim=1)
    start = torch.zeros(20000, dtype=torch.long)
    node = random_walk(ei, start, 2, p=0.01, q=100.0, num_nodes=101,
                       rng_seed=9)
    back = (node[:, 2] == 0).double().mean().item()
    expected = 100 / (100 + 99 * 0.01)
    sd = math.sqrt(expected * (1 - expected) / start.numel())
    assert abs(back - expected) < 5 * sd


def test_restart_frequency():
    ei = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])  # a cycle: no sinks
    start = torch.zeros(4000, dtype=torch.long)
    node, edge = random_walk(ei, start, 20, restart_prob=0.3, num_nodes=4,
                             return_edge_indices=True, rng_seed=2)
    restarted = edge == -1
    assert bool((node[:, 1:][restarted] == 0).all())
    rate = restarted.double().mean().item()
    sd = math.sqrt(0.3 * 0.7 / restarted.numel())
    assert abs(rate - 0.3) < 5 * sd


def test_deterministic_under_seed_and_generator():
    ei = _graph()
    start = torch.arange(40)
    a = random_walk(ei, start, 10, p=0.5, q=2.0, num_nodes=40, rng_seed=4)
    b = random_walk(ei, start, 10, p=0.5, q=2.0, num_nodes=40, rng_seed=4)
    c = random_walk(ei, start, 10, p=0.5, q=2.0, num_nodes=40, rng_seed=5)
    assert torch.equal(a, b) and not torch.equal(a, c)
    torch.manual_seed(0)
    d = random_walk(ei, start, 10, num_nodes=40)
    torch.manual_seed(0)
    assert torch.equal(d, random_walk(ei, start, 10, num_nodes=40))
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(random_walk(ei, start, 10, num_nodes=40, generator=g1),
                       random_walk(ei, start, 10, num_nodes=40, generator=g2))


def test_graph_forms_agree():
    ei = _graph()
    graph = WalkGraph.from_edge_index(ei, 40)
    start = torch.arange(40)
    from_ei = random_walk(ei, start, 8, num_nodes=40, rng_seed=1)
    from_graph = random_walk(graph, start, 8, rng_seed=1)
    from_csr = random_walk((graph.rowptr, graph.col.long()), start, 8,
                           rng_seed=1)
    assert torch.equal(from_ei, from_graph) and torch.equal(from_ei, from_csr)
    # A (rowptr, col) CSR's edge ids are its slots, as in torch_cluster.
    _, edge = random_walk((graph.rowptr, graph.col), start, 8, rng_seed=1,
                          return_edge_indices=True)
    node = from_csr
    moved = edge >= 0
    assert torch.equal(graph.col.long()[edge[moved]], node[:, 1:][moved])


def test_unsorted_csr_rows_are_sorted():
    rowptr = torch.tensor([0, 3, 4, 4])
    col = torch.tensor([2, 0, 1, 0])
    graph = WalkGraph.from_csr(rowptr, col)
    assert graph.col.tolist() == [0, 1, 2, 0]
    assert graph.edge_id.tolist() == [1, 2, 0, 3]


def test_opcheck():
    graph = WalkGraph.from_edge_index(_graph(), 40,
                                      torch.rand(_graph().size(1)))
    args = (graph.rowptr, graph.col, graph.edge_id, graph.weight_cumsum,
            torch.arange(40), 5, 0.5, 2.0, 0.1, 3)
    for return_edge in (True, False):
        torch.library.opcheck(torch.ops.fusesample.random_walk.default,
                              args + (return_edge, ))


@pytest.mark.parametrize('kwargs,match', [
    (dict(p=0.0), "'p' must be > 0"),
    (dict(q=-1.0), "'q' must be > 0"),
    (dict(restart_prob=1.0), "'restart_prob' must be in"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(RuntimeError, match=match):
        random_walk(_graph(), torch.arange(3), 4, num_nodes=40, **kwargs)


def test_bad_inputs():
    ei = _graph()
    with pytest.raises(RuntimeError, match="'walk_length' must be >= 1"):
        random_walk(ei, torch.arange(3), 0, num_nodes=40)
    with pytest.raises(ValueError, match="'start' holds ids outside"):
        random_walk(ei, torch.tensor([1, 40]), 3, num_nodes=40)
    with pytest.raises(RuntimeError, match="'start' holds id 40, outside"):
        random_walk(ei, torch.tensor([1, 40]), 3, num_nodes=40,
                    check_start=False)
    with pytest.raises(ValueError, match="'edge_index' holds ids outside"):
        random_walk(ei, torch.arange(3), 3, num_nodes=10)
    with pytest.raises(ValueError, match="'edge_weight' must be finite"):
        random_walk(ei, torch.arange(3), 3, num_nodes=40,
                    edge_weight=-torch.ones(ei.size(1)))
    with pytest.raises(ValueError, match="one weight per edge"):
        random_walk(ei, torch.arange(3), 3, num_nodes=40,
                    edge_weight=torch.ones(3))
    with pytest.raises(ValueError, match="'start' must be a tensor"):
        random_walk(ei, torch.zeros(2, 2, 2, dtype=torch.long), 3,
                    num_nodes=40)
    with pytest.raises(RuntimeError, match="multi-root walks .* first-order"):
        random_walk(ei, torch.zeros(2, 2, dtype=torch.long), 3, num_nodes=40,
                    p=2.0)
    with pytest.raises(TypeError, match="'graph' must be"):
        random_walk('graph', torch.arange(3), 3)
    with pytest.raises(RuntimeError, match="'rowptr' must be Long"):
        torch.ops.fusesample.random_walk(
            torch.tensor([0, 1], dtype=torch.int32), torch.tensor([0]), None,
            None, torch.tensor([0]), 2, 1.0, 1.0, 0.0, 0, True)


@pytest.mark.cuda
def test_cuda_matches_cpu_bitwise_on_a_larger_graph():
    ei = _graph(num_nodes=2000, num_edges=40000, seed=8)
    weight = torch.rand(ei.size(1), dtype=torch.float64)
    for w in (None, weight):
        graph = WalkGraph.from_edge_index(ei, 2000, w)
        start = torch.randint(2000, (5000,))
        for p, q, r in [(1.0, 1.0, 0.0), (0.3, 3.0, 0.1), (0.01, 100.0, 0.0)]:
            cpu = random_walk(graph, start, 40, p=p, q=q, restart_prob=r,
                              rng_seed=17, return_edge_indices=True)
            gpu = random_walk(graph.to('cuda'), start.cuda(), 40, p=p, q=q,
                              restart_prob=r, rng_seed=17,
                              return_edge_indices=True)
            assert torch.equal(cpu[0], gpu[0].cpu())
            assert torch.equal(cpu[1], gpu[1].cpu())


@pytest.mark.cuda
def test_cuda_start_out_of_range():
    ei = _graph()
    with pytest.raises(ValueError, match="'start' holds ids outside"):
        random_walk(ei.cuda(), torch.tensor([1, 40], device='cuda'), 3,
                    num_nodes=40)
    node = random_walk(ei.cuda(), torch.tensor([1, 40], device='cuda'), 3,
                       num_nodes=40, check_start=False)
    assert node[1].tolist() == [-1] * 4


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('weighted', [False, True])
def test_multi_root_matches_reference(device, weighted):
    from reference_walk import multi_root_walk
    ei = _graph()
    weight = torch.rand(ei.size(1), generator=torch.Generator().manual_seed(2))
    graph = WalkGraph.from_edge_index(ei, 40, weight if weighted else None)
    roots = torch.randint(40, (30, 3), generator=torch.Generator().manual_seed(1))
    roots[0] = torch.tensor([0, 1, 0])  # all sinks: -1 steps
    node, edge = random_walk(graph.to(device), roots.to(device), 9, rng_seed=6,
                             return_edge_indices=True)
    assert node.shape == (30, 12) and edge.shape == (30, 9)
    cum = None if graph.weight_cumsum is None else graph.weight_cumsum.tolist()
    ref_node, ref_edge = multi_root_walk(graph.rowptr.tolist(),
                                         graph.col.tolist(),
                                         graph.edge_id.tolist(), cum,
                                         roots.tolist(), 9, 6)
    assert node.cpu().tolist() == ref_node
    assert edge.cpu().tolist() == ref_edge
    assert node[0, 3:].tolist() == [-1] * 9


def test_multi_root_picks_by_degree():
    # Roots 0 (out-degree 1) and 1 (out-degree 3): the first step moves root
    # 1 three times as often.
    ei = torch.tensor([[0, 1, 1, 1], [2, 3, 4, 5]])
    roots = torch.tensor([[0, 1]]).repeat(20000, 1)
    node = random_walk(ei, roots, 1, num_nodes=6, rng_seed=3)
    moved_1 = torch.isin(node[:, 2], torch.tensor([3, 4, 5])).double().mean()
    assert abs(moved_1.item() - 0.75) < 5 * (0.75 * 0.25 / 20000) ** 0.5


def test_without_edge_indices_same_nodes():
    ei = _graph()
    a = random_walk(ei, torch.arange(40), 7, num_nodes=40, rng_seed=2)
    b, _ = random_walk(ei, torch.arange(40), 7, num_nodes=40, rng_seed=2,
                       return_edge_indices=True)
    assert torch.equal(a, b)
