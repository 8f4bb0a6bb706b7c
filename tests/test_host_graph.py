"""Sampling a graph that lives in pinned host memory on a GPU (zero-copy,
through unified addressing): the op's results and the loader's batches
equal the all-GPU ones; the loader's argument checks."""
import pytest
import torch

from pyg_fusesample.ops import neighbor_sample, neighbor_sample_async
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import weighted_csc

def _graph(n=3000, e=60000, seed=0):
    g = torch.Generator().manual_seed(seed)
    return build_csc(torch.randint(n, (2, e), generator=g), n)


def _pinned(t):
    return None if t is None else t.contiguous().pin_memory()


@pytest.mark.cuda
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


@pytest.mark.cuda
def test_async_host_graph_waits_for_its_kernels():
    # The loader's lookahead path. With GPU work queued before the sample,
    # wait() finds the kernels not yet run: it must wait for them, not read
    # the sizes before they are written (it did, for a host graph, until it
    # took the seeds' stream instead of colptr's: the one-GPU DDP example
    # with --host-memory all then indexed out of range).
    graph = _graph()
    seed = torch.arange(0, 3000, 11, device='cuda')
    ref = neighbor_sample(graph.colptr.cuda(), graph.row.cuda(),
                          graph.edge_id.cuda(), seed, [10, 5], rng_seed=5)
    # (held until the kernels have read them: the GPU reads them in place)
    host = [_pinned(t) for t in (graph.colptr, graph.row, graph.edge_id)]
    torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time ahead of the sample
    pending = neighbor_sample_async(*host, seed, [10, 5], rng_seed=5)
    out = pending.wait()
    for a, b in zip(ref[:4], out[:4]):
        assert torch.equal(a, b)
    assert torch.equal(ref.num_sampled_nodes, out.num_sampled_nodes.to(
        ref.num_sampled_nodes.device))


@pytest.mark.cuda
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


@pytest.mark.cuda
def test_unpinned_host_graph_is_refused():
    graph = _graph()
    with pytest.raises(RuntimeError, match="pinned host memory"):
        neighbor_sample(graph.colptr, graph.row.pin_memory(), None,
                        torch.tensor([1], device='cuda'), [2])


def _data(n=600, e=6000):
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(0)
    return Data(x=torch.randn(n, 8, generator=g),
                y=torch.randint(3, (n, ), generator=g),
                edge_index=torch.randint(n, (2, e), generator=g))


@pytest.mark.cuda
@pytest.mark.parametrize('prefetch', [False, True])
@pytest.mark.parametrize('weighted', [False, True])
def test_loader_with_graph_in_host_memory(prefetch, weighted):
    from pyg_fusesample import FusedNeighborLoader
    data = _data()
    kwargs = {}
    if weighted:
        data.w = torch.rand(data.num_edges)
        kwargs['weight_attr'] = 'w'
    on_gpu = data.clone().to('cuda')
    host = data.clone()
    host.x = host.x.pin_memory()
    a = FusedNeighborLoader(on_gpu, [5, 5], batch_size=50, seed=1,
                            prefetch=prefetch, **kwargs)
    b = FusedNeighborLoader(host, [5, 5], batch_size=50, seed=1,
                            prefetch=prefetch, graph_in_host_memory=True,
                            device='cuda', **kwargs)
    assert b.node_sampler.graph.colptr.is_pinned()
    for x, y in zip(a, b):
        assert torch.equal(x.n_id, y.n_id) and torch.equal(x.e_id, y.e_id)
        assert torch.equal(x.edge_index, y.edge_index)
        assert y.x.is_cuda and torch.equal(x.x, y.x)


def test_graph_in_host_memory_arguments():
    from pyg_fusesample import FusedNeighborLoader
    data = _data()
    with pytest.raises(ValueError, match="pass device='cuda'"):
        FusedNeighborLoader(data, [2], graph_in_host_memory=True)
    data.t = torch.arange(data.num_nodes)
    with pytest.raises(NotImplementedError, match="directional sampling"):
        FusedNeighborLoader(data, [2], graph_in_host_memory=True,
                            device='cuda', time_attr='t')
    with pytest.raises(NotImplementedError, match="directional sampling"):
        FusedNeighborLoader(data, [2], graph_in_host_memory=True,
                            device='cuda', subgraph_type='induced')
