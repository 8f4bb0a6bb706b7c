"""pyg_fusesample.nn.GATConv / RGCNConv against PyG's layers (same weights):
outputs and gradients on random graphs (isolated targets, duplicate edges,
self-loops, a hub), bipartite inputs, FusedNeighborLoader batches and their
trimmed hops; float64 gradcheck; the options that run PyG's code."""
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch_geometric.nn as pyg_nn
from torch_geometric.data import Data

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import devices  # noqa: E402
from pyg_fusesample import FusedNeighborLoader  # noqa: E402
from pyg_fusesample.nn import GATConv, RGCNConv, SAGEConv  # noqa: E402
from pyg_fusesample.nn import gat_conv, rgcn_conv  # noqa: E402

ATOL = 1e-5


def graph(num_nodes=60, num_edges=300, seed=0, isolated=5):
    """Random edges over the first num_nodes - isolated nodes, plus a hub
    (node 1 receives from half the nodes), duplicates and self-loops, in
    random order; the last nodes receive and send nothing."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - isolated
    src = torch.randint(active, (num_edges, ), generator=g)
    dst = torch.randint(active, (num_edges, ), generator=g)
    hub = torch.randperm(active, generator=g)[:active // 2]
    loops = torch.arange(0, active, 7)
    src = torch.cat([src, hub, loops, src[:20], loops[:3]])
    dst = torch.cat([dst, torch.ones_like(hub), loops, dst[:20], loops[:3]])
    perm = torch.randperm(src.numel(), generator=g)
    return torch.stack([src[perm], dst[perm]])


def twins(ours_cls, theirs_cls, *args, device='cpu', **kwargs):
    torch.manual_seed(0)
    ours = ours_cls(*args, **kwargs).to(device)
    theirs = theirs_cls(*args, **kwargs).to(device)
    with torch.no_grad():  # non-zero bias, as after training
        for p in ours.parameters():
            p.add_(0.1 * torch.randn_like(p))
    theirs.load_state_dict(ours.state_dict())
    return ours, theirs


@pytest.fixture(autouse=True)
def relation_loop(monkeypatch):
    """PyG's RGCNConv as its relation loop (mean within each relation):
    with pyg-lib, its segment_matmul path averages over all relations."""
    import torch_geometric.backend
    monkeypatch.setattr(torch_geometric.backend, 'use_segment_matmul', False)


@pytest.fixture
def fast_only(monkeypatch):
    """Fails a test whose call would run PyG's code path."""
    def fail(layer, reason):
        raise AssertionError(f'took the PyG path: {reason}')
    monkeypatch.setattr(gat_conv, 'warn_pyg_path', fail)
    monkeypatch.setattr(rgcn_conv, 'warn_pyg_path', fail)


def run(layer, inputs, call, seed=1):
    """Output and the gradients of (float inputs, parameters) of
    call(layer, *inputs) under a fixed random output weighting."""
    leaves = []

    def leaf(t):
        if isinstance(t, tuple):
            return tuple(leaf(u) for u in t)
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            t = t.detach().clone().requires_grad_()
            leaves.append(t)
        return t
    out = call(layer, *[leaf(t) for t in inputs])
    main = out[0] if isinstance(out, tuple) else out
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(main.shape, generator=g).to(main.device, main.dtype)
    loss = (main * w).sum()
    if isinstance(out, tuple):
        alpha = out[1][1]
        loss = loss + (alpha * torch.randn(alpha.shape, generator=g).to(
            alpha.device, alpha.dtype)).sum()
    loss.backward()
    grads = [t.grad for t in leaves] + [p.grad for p in layer.parameters()]
    return out, grads


def assert_same(ours, theirs, inputs, call):
    out_a, grads_a = run(ours, inputs, call)
    out_b, grads_b = run(theirs, inputs, call)
    if isinstance(out_a, tuple):
        assert torch.equal(out_a[1][0], out_b[1][0])  # PyG's edge order
        torch.testing.assert_close(out_a[1][1], out_b[1][1], atol=ATOL,
                                   rtol=1e-4)
        out_a, out_b = out_a[0], out_b[0]
    torch.testing.assert_close(out_a, out_b, atol=ATOL, rtol=1e-4)
    assert len(grads_a) == len(grads_b)
    for a, b in zip(grads_a, grads_b):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, atol=ATOL, rtol=1e-4)


# GATConv ####################################################################

def gat_call(layer, x, edge_index, edge_attr=None, **kw):
    return layer(x, edge_index, edge_attr, **kw)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('kwargs', [
    dict(),
    dict(heads=3),
    dict(heads=3, concat=False, negative_slope=0.1),
    dict(heads=2, add_self_loops=False),
    dict(heads=2, bias=False, residual=True),
    dict(heads=2, residual=True, concat=False),
])
def test_gat_matches_pyg(fast_only, device, kwargs):
    ei = graph().to(device)
    x = torch.randn(60, 8, device=device)
    ours, theirs = twins(GATConv, pyg_nn.GATConv, 8, 4, device=device,
                         **kwargs)
    assert repr(ours) == repr(theirs)
    assert_same(ours, theirs, (x, ei), gat_call)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fill_value', ['mean', 'add', 'max', 'min', 'mul',
                                        0.5, 'tensor', None])
@pytest.mark.parametrize('one_dim', [False, True])
def test_gat_edge_features(fast_only, device, fill_value, one_dim):
    ei = graph(seed=2).to(device)
    x = torch.randn(60, 8, device=device)
    D = 1 if one_dim else 3
    ea = torch.randn(ei.size(1), D, device=device)
    ea = ea.view(-1) if one_dim else ea
    if fill_value == 'tensor':
        fill_value = torch.randn(D)
    ours, theirs = twins(GATConv, pyg_nn.GATConv, 8, 4, heads=2, edge_dim=D,
                         fill_value=fill_value, device=device)
    assert_same(ours, theirs, (x, ei, ea), gat_call)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('add_self_loops', [True, False])
def test_gat_return_attention_weights(fast_only, device, add_self_loops):
    ei = graph(seed=3).to(device)
    x = torch.randn(60, 8, device=device)
    ea = torch.randn(ei.size(1), 2, device=device)
    ours, theirs = twins(GATConv, pyg_nn.GATConv, 8, 4, heads=2, edge_dim=2,
                         add_self_loops=add_self_loops, device=device)
    assert_same(ours, theirs, (x, ei, ea), lambda m, *a: gat_call(
        m, *a, return_attention_weights=True))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('shared_lin', [True, False])
@pytest.mark.parametrize('num_dst', [25, 60])
def test_gat_bipartite(fast_only, device, shared_lin, num_dst):
    # Targets are the first rows of the sources (a trimmed batch) or not
    # related at all: PyG's self-loops are by index either way.
    ei = graph(seed=4)
    ei = ei[:, ei[1] < num_dst].to(device)
    x_src = torch.randn(60, 8, device=device)
    x_dst = x_src[:num_dst] if shared_lin else torch.randn(num_dst, 6,
                                                           device=device)
    in_channels = 8 if shared_lin else (8, 6)
    ours, theirs = twins(GATConv, pyg_nn.GATConv, in_channels, 4, heads=2,
                         residual=True, edge_dim=2, device=device)
    ea = torch.randn(ei.size(1), 2, device=device)
    assert_same(ours, theirs, ((x_src, x_dst), ei, ea), gat_call)
    # No target features: the targets come from 'size'.
    assert_same(ours, theirs, ((x_src, None), ei), lambda m, x, e: m(
        x, e, size=(60, num_dst)))


def test_gat_dropout_and_empty(fast_only):
    ei = graph(seed=5)
    x = torch.randn(60, 8)
    ours = GATConv(8, 4, heads=2, dropout=1.0).train()
    assert torch.equal(ours(x, ei), ours.bias.expand(60, 8))
    ours.dropout = 0.3
    out = ours(x, ei)
    assert out.shape == (60, 8) and torch.isfinite(out).all()
    ours, theirs = twins(GATConv, pyg_nn.GATConv, 8, 4, heads=2,
                         add_self_loops=False)
    empty = torch.empty(2, 0, dtype=torch.long)
    assert_same(ours, theirs, (x, empty), gat_call)


def test_gat_gradcheck():
    ei = graph(12, 30, seed=6, isolated=2)
    layer = GATConv(3, 2, heads=2, edge_dim=2, residual=True).double()
    x = torch.randn(12, 3, dtype=torch.double, requires_grad=True)
    ea = torch.randn(ei.size(1), 2, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, ea: layer(x, ei, ea), (x, ea))


@pytest.mark.parametrize('reason,call', [
    ('torch.sparse graph', lambda m, x, ei: m(
        x, torch.sparse_coo_tensor(ei, torch.ones(ei.size(1)), (60, 60)))),
    ('size off the inputs', lambda m, x, ei: m((x, None), ei,
                                               size=(59, 60))),
    ('mean edge features, more targets than loops', lambda m, x, ei: m(
        (x[:40], x), ei[:, ei[0] < 40], torch.ones(int((ei[0] < 40).sum()),
                                                   2))),
])
def test_gat_falls_back(reason, call):
    ei = graph(seed=7)
    x = torch.randn(60, 8)
    ours, theirs = twins(GATConv, pyg_nn.GATConv, 8, 4, heads=2, edge_dim=2)
    try:
        expected = call(theirs, x, ei)
    except Exception as e:  # noqa: BLE001 (PyG's own error, unchanged)
        with pytest.raises(type(e)), warnings.catch_warnings():
            warnings.simplefilter('ignore')
            call(ours, x, ei)
        return
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.testing.assert_close(call(ours, x, ei), expected)


# RGCNConv ###################################################################

def rgcn_call(layer, x, edge_index, edge_type):
    return layer(x, edge_index, edge_type)


def edge_types(num_edges, num_relations, seed=0, invalid=False):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(num_relations, (num_edges, ), generator=g)
    if invalid:  # types PyG's loop never selects
        t[::11] = num_relations
        t[::13] = -1
    return t


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', ['mean', 'add', 'max'])
@pytest.mark.parametrize('kwargs', [
    dict(), dict(num_bases=2), dict(num_blocks=2), dict(root_weight=False),
    dict(bias=False)])
def test_rgcn_matches_pyg(fast_only, device, aggr, kwargs):
    ei = graph(seed=8).to(device)
    et = edge_types(ei.size(1), 5).to(device)
    x = torch.randn(60, 8, device=device)
    ours, theirs = twins(RGCNConv, pyg_nn.RGCNConv, 8, 6, 5, aggr=aggr,
                         device=device, **kwargs)
    assert repr(ours) == repr(theirs)
    assert_same(ours, theirs, (x, ei, et), rgcn_call)
    assert_same(ours, theirs, (x, ei, et), rgcn_call)  # cached grouping


@pytest.mark.parametrize('kwargs', [dict(), dict(num_blocks=2)])
def test_rgcn_types_out_of_range(fast_only, kwargs):
    # PyG's relation loop selects none of them (its count of edges per type
    # fails on them, but with num_blocks): they count for nothing.
    ei = graph(seed=8)
    et = edge_types(ei.size(1), 5, invalid=True)
    x = torch.randn(60, 8)
    ours, theirs = twins(RGCNConv, pyg_nn.RGCNConv, 8, 6, 5, **kwargs)
    valid = (et >= 0) & (et < 5)
    torch.testing.assert_close(ours(x, ei, et),
                               theirs(x, ei[:, valid], et[valid]))


@pytest.mark.parametrize('device', devices())
def test_rgcn_bipartite(fast_only, device):
    ei = graph(seed=9)
    ei = ei[:, ei[1] < 20].to(device)
    et = edge_types(ei.size(1), 3, seed=1).to(device)
    x_src, x_dst = torch.randn(60, 8, device=device), torch.randn(
        20, 5, device=device)
    ours, theirs = twins(RGCNConv, pyg_nn.RGCNConv, (8, 5), 4, 3,
                         device=device)
    assert_same(ours, theirs, ((x_src, x_dst), ei, et), rgcn_call)


def test_rgcn_gradcheck():
    ei = graph(12, 30, seed=10, isolated=2)
    et = edge_types(ei.size(1), 3, seed=2)
    x = torch.randn(12, 4, dtype=torch.double, requires_grad=True)
    for kwargs in (dict(num_bases=2), dict(num_blocks=2)):
        layer = RGCNConv(4, 4, 3, **kwargs).double()
        assert torch.autograd.gradcheck(lambda x: layer(x, ei, et), (x, ))


def test_rgcn_falls_back_featureless():
    ei = graph(seed=11)
    et = edge_types(ei.size(1), 3)
    ours, theirs = twins(RGCNConv, pyg_nn.RGCNConv, 60, 4, 3)
    with pytest.warns(UserWarning, match='featureless'):
        out = ours(None, ei, et)
    torch.testing.assert_close(out, theirs(None, ei, et))
    with pytest.raises(ValueError, match='edge_type'):
        ours(torch.randn(60, 60), ei, et[:-1])


# FusedNeighborLoader batches ################################################

@pytest.fixture(scope='module')
def batches():
    ei = graph(300, 1500, seed=12, isolated=10)
    g = torch.Generator().manual_seed(12)
    data = Data(edge_index=ei, num_nodes=300, x=torch.randn(300, 8,
                                                            generator=g),
                edge_attr=torch.randn(ei.size(1), 3, generator=g),
                edge_type=edge_types(ei.size(1), 4, seed=12))
    loader = FusedNeighborLoader(data, [6, 4], batch_size=32, seed=0,
                                 input_nodes=torch.arange(96))
    return list(loader)


def hop_inputs(batch, hop):
    """The inputs of the layer computing hop ``hop``'s targets of a
    trimmed model: (x_src, x_dst), the edge prefix and its attributes."""
    nodes = torch.tensor(batch.num_sampled_nodes).cumsum(0).tolist()
    edges = sum(batch.num_sampled_edges[:hop + 1])
    ei = batch.edge_index.narrow(1, 0, edges)
    x = batch.x[:nodes[hop + 1]]
    return (x, x[:nodes[hop]]), ei, edges


@pytest.mark.parametrize('hop', [None, 0, 1])
def test_layers_on_loader_batches(fast_only, batches, hop):
    gat, gat_pyg = twins(GATConv, pyg_nn.GATConv, 8, 4, heads=2, edge_dim=3)
    rgcn, rgcn_pyg = twins(RGCNConv, pyg_nn.RGCNConv, 8, 4, 4, num_bases=2)
    for batch in batches:
        if hop is None:
            x, ei, E = batch.x, batch.edge_index, batch.edge_index.size(1)
        else:
            x, ei, E = hop_inputs(batch, hop)
        ea, et = batch.edge_attr[:E], batch.edge_type[:E]
        assert_same(gat, gat_pyg, (x, ei, ea), gat_call)
        assert_same(rgcn, rgcn_pyg, (x, ei, et), rgcn_call)


# PyG's code path of a subclass #############################################

def test_sage_falls_back():
    # PyG compiles 'propagate' per class from the class's own source: the
    # subclass needs its base's argument types (minibatch_common.pyg_fallback).
    ei = graph(seed=13)
    x = torch.randn(60, 8)
    ours, theirs = twins(SAGEConv, pyg_nn.SAGEConv, 8, 4, aggr='median')
    with pytest.warns(UserWarning, match='median'):
        out = ours(x, ei)
    torch.testing.assert_close(out, theirs(x, ei))
