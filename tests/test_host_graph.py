"""Sampling a graph that lives in pinned host memory on a GPU (zero-copy,
through unified addressing): the op's results equal the all-GPU ones."""
import pytest
import torch

from pyg_fusesample.ops import neighbor_sample
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import weighted_csc

pytestmark = pytest.mark.cuda


def _graph(n=3000, e=60000, seed=0):
    g = torch.Generator().manual_seed(seed)
    return build_csc(torch.randint(n, (2, e), generator=g), n)


def _pinned(t):
    return None if t is None else t.contiguous().pin_memory()


@pytest.mark.parametrize('fused', [True, False])
@pytest.mark.parametrize('fanouts', [[10, 5], [-1, 3]])
def test_host_graph_equals_device_graph(fused, fanouts):
    graph = _graph()
    seed = torch.randint(3000, (256, ), generator=torch.Generator().manual_seed(1))
    on_gpu = neighbor_sample(graph.colptr.cuda(), graph.row.cuda(),
                             graph.edge_id.cuda(), seed.cuda(), fanouts,
                             rng_seed=7, fused=fused)
    on_host = neighbor_sample(_pinned(graph.colptr), _pinned(graph.row),
                              _pinned(graph.edge_id), seed.cuda(), fanouts,
                              rng_seed=7, fused=fused)
    for a, b in zip(on_gpu[:4], on_host[:4]):
        assert b.is_cuda and torch.equal(a, b)


def test_weighted_host_graph():
    graph = _graph()
    rule = weighted_csc(graph, torch.rand(graph.num_edges, dtype=torch.float64))
    g = rule.graph
    seed = torch.arange(0, 3000, 7)
    on_gpu = neighbor_sample(g.colptr.cuda(), g.row.cuda(), g.edge_id.cuda(),
                             seed.cuda(), [5, 5], rng_seed=3,
                             weight_cumsum=rule.weight_cumsum.cuda())
    on_host = neighbor_sample(_pinned(g.colptr), _pinned(g.row),
                              _pinned(g.edge_id), seed.cuda(), [5, 5],
                              rng_seed=3,
                              weight_cumsum=_pinned(rule.weight_cumsum))
    assert torch.equal(on_gpu.node, on_host.node)
    assert torch.equal(on_gpu.edge, on_host.edge)


def test_unpinned_host_graph_is_refused():
    graph = _graph()
    with pytest.raises(RuntimeError, match="pinned host memory"):
        neighbor_sample(graph.colptr, graph.row.pin_memory(), None,
                        torch.tensor([1], device='cuda'), [2])
