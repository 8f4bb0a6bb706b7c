"""FusedSAGEConv against torch_geometric's SAGEConv, and FusedGraphSAGE
against an explicit sampled tree run through plain SAGEConv layers
(tests/reference_aggregate.py) and against torch_geometric's GraphSAGE."""
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv
from torch_geometric.nn.models import GraphSAGE
from torch_geometric.utils import to_torch_csr_tensor

import pyg_fusesample  # noqa: F401
from pyg_fusesample.nn import FusedGraphSAGE, FusedSAGEConv
from pyg_fusesample.sampler.fused_neighbor_sampler import draw_rng_seeds

import reference as ref
import reference_aggregate as ra
from conftest import devices

AGGRS = ['mean', 'sum', 'max']
N, IN, OUT = 50, 6, 5


@pytest.fixture(autouse=True)
def _quiet_sparse_csr_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='Sparse CSR tensor support')
        warnings.filterwarnings('ignore', message='Sparse invariant checks')
        yield


def graph(num_nodes=N, num_edges=300, seed=0, device='cpu'):
    """No multi-edges or self loops (a CSR adj_t would merge duplicates); a
    hub (node 0) and 3 isolated nodes (47..49)."""
    return ref.random_graph(num_nodes, num_edges, seed, hubs=1,
                            isolated=3).to(device)


def features(num_rows=N, num_features=IN, seed=0, device='cpu',
             dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(num_rows, num_features, generator=g).to(device, dtype)


def as_format(edge_index, fmt, num_src=N, num_dst=N):
    """The graph as FusedSAGEConv accepts it; adj_t rows are targets."""
    if fmt == 'edge_index':
        return edge_index
    if fmt == 'sparse_tensor':
        torch_sparse = pytest.importorskip('torch_sparse')
        if edge_index.is_cuda and torch.ops.torch_sparse.cuda_version() == -1:
            pytest.skip('this torch_sparse build has no CUDA kernels')
        return torch_sparse.SparseTensor(row=edge_index[1], col=edge_index[0],
                                         sparse_sizes=(num_dst, num_src))
    if fmt == 'csr':
        return to_torch_csr_tensor(edge_index.flip(0),
                                   size=(num_dst, num_src))
    raise ValueError(fmt)


def pair(aggr, in_channels=IN, out_channels=OUT, device='cpu', **kwargs):
    """A FusedSAGEConv and a SAGEConv sharing one set of weights."""
    fused = FusedSAGEConv(in_channels, out_channels, aggr=aggr,
                          **kwargs).to(device)
    sage = SAGEConv(in_channels, out_channels, aggr=aggr,
                    **kwargs_for_sage(kwargs)).to(device)
    assert not sage.load_state_dict(fused.state_dict()).missing_keys
    return fused, sage


def kwargs_for_sage(kwargs):
    return {k: v for k, v in kwargs.items()
            if k not in ('num_neighbors', 'replace', 'generator')}


def seeded_key(seed):
    """The RNG key a layer or model with generator=manual_seed(seed) draws
    for its next call."""
    return draw_rng_seeds(1, torch.Generator().manual_seed(seed))[0]


# FusedSAGEConv ##############################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('fmt', ['edge_index', 'sparse_tensor', 'csr'])
def test_conv_eval_matches_sageconv(device, aggr, fmt):
    ei, x = graph(device=device), features(device=device)
    fused, sage = pair(aggr, device=device, num_neighbors=3)
    fused.eval()
    expected = sage(x, ei)
    torch.testing.assert_close(fused(x, as_format(ei, fmt)), expected)
    # and the other way: SAGEConv weights loaded into a fresh FusedSAGEConv
    other = FusedSAGEConv(IN, OUT, num_neighbors=3, aggr=aggr).to(device)
    other.load_state_dict(sage.state_dict())
    other.eval()
    torch.testing.assert_close(other(x, as_format(ei, fmt)), expected)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('fmt', ['edge_index', 'sparse_tensor', 'csr'])
def test_conv_train_all_neighbours_matches_sageconv(device, aggr, fmt):
    """num_neighbors=-1 in training: exact, forward and backward."""
    ei = graph(device=device)
    fused, sage = pair(aggr, device=device, num_neighbors=-1)
    fused.train()
    x1 = features(device=device).requires_grad_()
    x2 = features(device=device).requires_grad_()
    out1, out2 = fused(x1, as_format(ei, fmt)), sage(x2, ei)
    torch.testing.assert_close(out1, out2)
    grad = features(N, OUT, seed=1, device=device)
    out1.backward(grad)
    out2.backward(grad)
    torch.testing.assert_close(x1.grad, x2.grad)
    for (name, p1), p2 in zip(fused.named_parameters(), sage.parameters()):
        torch.testing.assert_close(p1.grad, p2.grad, msg=name)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('fmt', ['edge_index', 'sparse_tensor', 'csr'])
def test_conv_target_subset(device, aggr, fmt):
    ei, x = graph(device=device), features(device=device)
    fused, sage = pair(aggr, device=device)
    fused.eval()
    target = torch.tensor([5, 0, 48, 5, 17], device=device)  # 48: isolated
    torch.testing.assert_close(fused(x, as_format(ei, fmt), target=target),
                               sage(x, ei)[target])


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('num_src,num_dst', [(40, 25), (25, 40)])
@pytest.mark.parametrize('fmt', ['edge_index', 'sparse_tensor', 'csr'])
def test_conv_bipartite(device, aggr, num_src, num_dst, fmt):
    g = torch.Generator().manual_seed(0)
    keys = torch.randperm(num_src * num_dst, generator=g)[:150]
    ei = torch.stack([keys // num_dst, keys % num_dst]).to(device)
    x_src = features(num_src, 6, device=device)
    x_dst = features(num_dst, 3, seed=1, device=device)
    fused, sage = pair(aggr, (6, 3), OUT, device=device, num_neighbors=4)
    fused.eval()
    adj = as_format(ei, fmt, num_src, num_dst)
    torch.testing.assert_close(fused((x_src, x_dst), adj),
                               sage((x_src, x_dst), ei))
    target = torch.tensor([3, 0, 7], device=device)
    torch.testing.assert_close(fused((x_src, x_dst), adj, target=target),
                               sage((x_src, x_dst), ei)[target])
    # k = -1 in training: exact too
    fused.train()
    fused.num_neighbors = -1
    torch.testing.assert_close(fused((x_src, x_dst), adj),
                               sage((x_src, x_dst), ei))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
def test_conv_bipartite_without_x_dst(device, aggr):
    ei, x = graph(device=device), features(device=device)
    fused, sage = pair(aggr, (IN, IN), OUT, device=device)
    fused.eval()
    torch.testing.assert_close(fused((x, None), ei), sage((x, None), ei))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('options', [
    dict(normalize=True), dict(root_weight=False),
    dict(normalize=True, root_weight=False, bias=False)])
def test_conv_options(device, aggr, options):
    ei, x = graph(device=device), features(device=device)
    fused, sage = pair(aggr, device=device, **options)
    assert [n for n, _ in fused.named_parameters()] == \
        [n for n, _ in sage.named_parameters()]
    fused.eval()
    out = fused(x, ei)
    torch.testing.assert_close(out, sage(x, ei))
    if options.get('normalize'):  # unit rows (zero rows stay zero)
        norm = out.norm(dim=-1)
        nonzero = norm > 0
        assert int(nonzero.sum()) >= N - 3  # only isolated nodes can be 0
        torch.testing.assert_close(norm[nonzero], torch.ones_like(
            norm[nonzero]))


def test_conv_aggr_add_alias():
    ei, x = graph(), features()
    fused = FusedSAGEConv(IN, OUT, aggr='add').eval()
    sage = SAGEConv(IN, OUT, aggr='sum')
    sage.load_state_dict(fused.state_dict())
    assert fused.aggr == 'sum'
    torch.testing.assert_close(fused(x, ei), sage(x, ei))


def test_conv_repr():
    assert repr(FusedSAGEConv(16, 32)) == \
        'FusedSAGEConv(16, 32, num_neighbors=10, aggr=mean)'
    assert repr(FusedSAGEConv((16, 8), 4, num_neighbors=-1, aggr='add')) == \
        'FusedSAGEConv((16, 8), 4, num_neighbors=-1, aggr=sum)'


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('replace', [False, True])
def test_conv_training_matches_reference(device, aggr, replace):
    """Training draws keyed by the layer's generator; output and gradients
    equal the Python reference with the same key."""
    ei = graph(device=device)
    gen = torch.Generator().manual_seed(3)
    fused = FusedSAGEConv(IN, OUT, num_neighbors=3, aggr=aggr,
                          replace=replace, generator=gen).to(device)
    x = features(device=device).requires_grad_()
    target = torch.tensor([0, 5, 48, 5, 12, 30], device=device)
    out = fused(x, ei, target=target)
    out.backward(torch.ones_like(out))

    x_ref = features().requires_grad_()
    colptr, row, _ = ref.csc_from_coo(ei.cpu(), N)
    agg, _, _ = ra.sample_aggregate(colptr, row, x_ref, target.cpu(), 3, aggr,
                                    replace, seeded_key(3), 0)
    lin_l_w = fused.lin_l.weight.detach().cpu().clone().requires_grad_()
    lin_l_b = fused.lin_l.bias.detach().cpu()
    lin_r_w = fused.lin_r.weight.detach().cpu().clone().requires_grad_()
    exp = (F.linear(agg, lin_l_w, lin_l_b) +
           F.linear(x_ref[target.cpu()], lin_r_w))
    exp.backward(torch.ones_like(exp))
    torch.testing.assert_close(out.detach().cpu(), exp.detach())
    torch.testing.assert_close(x.grad.cpu(), x_ref.grad)
    torch.testing.assert_close(fused.lin_l.weight.grad.cpu(), lin_l_w.grad)
    torch.testing.assert_close(fused.lin_r.weight.grad.cpu(), lin_r_w.grad)


@pytest.mark.parametrize('device', devices())
def test_conv_training_gradients_flow(device):
    ei = graph(device=device)
    fused = FusedSAGEConv(IN, OUT, num_neighbors=2).to(device).train()
    x = features(device=device).requires_grad_()
    fused(x, ei).square().sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for name, p in fused.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    # sources that no target drew get no gradient through aggregation; the
    # isolated nodes still get one through the root weight
    assert bool((x.grad[47:].abs().sum(-1) > 0).all())


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fmt', ['edge_index', 'csr'])
def test_conv_training_with_large_k_equals_eval(device, fmt):
    ei, x = graph(device=device), features(device=device)
    adj = as_format(ei, fmt)
    max_degree = int(torch.bincount(ei[1].cpu(), minlength=N).max())
    fused = FusedSAGEConv(IN, OUT, num_neighbors=max_degree).to(device)
    fused.eval()
    expected = fused(x, adj)
    fused.train()
    torch.testing.assert_close(fused(x, adj), expected)


@pytest.mark.parametrize('device', devices())
def test_conv_training_randomness(device):
    """Training with k < degree is random and repeatable under
    torch.manual_seed (the default key source is the global RNG)."""
    ei, x = graph(device=device), features(device=device)
    fused = FusedSAGEConv(IN, OUT, num_neighbors=2).to(device).train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        a, b = fused(x, ei), fused(x, ei)
        torch.manual_seed(0)
        c = fused(x, ei)
    assert not torch.equal(a, b)
    assert torch.equal(a, c)
    fused.eval()  # eval is deterministic and ignores the RNG
    assert torch.equal(fused(x, ei), fused(x, ei))


def test_conv_eval_leaves_global_rng_alone():
    """Eval (k = -1: nothing is sampled) must not advance torch's global
    RNG, as SAGEConv does not: a validation pass between training steps
    must not change the neighbours training draws next."""
    ei, x = graph(), features()
    fused = FusedSAGEConv(IN, OUT, num_neighbors=3).eval()
    assert_leaves_global_rng(lambda: fused(x, ei))


def assert_leaves_global_rng(fn):
    """``fn()`` does not advance torch's default CPU generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        expected = torch.rand(3)
        torch.manual_seed(0)
        fn()
        assert torch.equal(torch.rand(3), expected)


def test_conv_invalid_arguments():
    with pytest.raises(ValueError, match="'aggr' must be one of"):
        FusedSAGEConv(IN, OUT, aggr='min')
    with pytest.raises(ValueError, match="'num_neighbors' must be >= 0"):
        FusedSAGEConv(IN, OUT, num_neighbors=-2)
    conv = FusedSAGEConv(IN, OUT).eval()
    ei, x = graph(), features()
    with pytest.raises(ValueError, match="'target' must be a 1-D int64"):
        conv(x, ei, target=torch.tensor([0.0]))
    with pytest.raises(ValueError, match="'target' must be a 1-D int64"):
        conv(x, ei, target=torch.tensor([[0]]))
    with pytest.raises(ValueError, match="'adj_t' has shape"):
        conv(x, as_format(ei, 'csr', num_src=N, num_dst=N + 1))
    with pytest.raises(ValueError, match='COO'):
        conv(x, as_format(ei, 'csr').to_sparse_coo())
    with pytest.raises(RuntimeError, match="'x' must be float"):
        conv(x.long(), ei)


def _compile_step(conv, x, graph_arg):
    compiled = torch.compile(conv, backend='aot_eager', fullgraph=False)
    results = []
    for fn in (compiled, conv):
        conv.generator.manual_seed(1)
        conv.zero_grad()
        x.grad = None
        out = fn(x, graph_arg)
        out.square().sum().backward()
        results.append((out.detach(), x.grad.clone(),
                        conv.lin_l.weight.grad.clone()))
    return results


@pytest.mark.parametrize('training', [False, True])
def test_conv_torch_compile_aot_eager(training):
    """Forward + backward under torch.compile(backend='aot_eager') equals
    eager (graph given as a CSR adj_t)."""
    torch._dynamo.reset()
    ei = graph()
    conv = FusedSAGEConv(IN, OUT, num_neighbors=3,
                         generator=torch.Generator()).train(training)
    x = features().requires_grad_()
    compiled, eager = _compile_step(conv, x, as_format(ei, 'csr'))
    for a, b in zip(compiled, eager):
        torch.testing.assert_close(a, b)


def test_conv_torch_compile_aot_eager_edge_index():
    """The same with a fresh edge_index, the most common input (its CSC
    memo sits behind the fusesample::edge_index_csc op)."""
    torch._dynamo.reset()
    ei = graph(seed=11)  # a tensor the CSC memo has never seen
    conv = FusedSAGEConv(IN, OUT, num_neighbors=3,
                         generator=torch.Generator()).train()
    x = features().requires_grad_()
    compiled, eager = _compile_step(conv, x, ei)
    for a, b in zip(compiled, eager):
        torch.testing.assert_close(a, b)


def test_graph_sage_compiles_fullgraph_with_edge_index():
    """torch.compile(FusedGraphSAGE, fullgraph=True) on an edge_index: no
    graph break; the step (sampling from torch's default generator, the
    forward, the loss's backward) equals the eager one."""
    from pyg_fusesample.nn import FusedGraphSAGE
    torch._dynamo.reset()
    ei, x = graph(seed=12), features()
    y = torch.randint(0, OUT, (N, ), generator=torch.Generator().manual_seed(0))
    seeds = torch.arange(0, N, 3)
    model = FusedGraphSAGE(IN, 16, OUT, 2, [4, 3])

    def step(fn):
        torch.manual_seed(3)
        model.zero_grad()
        out = fn(x, ei, seeds)
        torch.nn.functional.cross_entropy(out, y[seeds]).backward()
        return [out.detach()] + [p.grad.clone() for p in model.parameters()]

    eager = step(model)
    compiled = torch.compile(model, fullgraph=True)
    for _ in range(2):
        got = step(compiled)
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b)


def test_edge_index_csc_opcheck():
    from pyg_fusesample.nn.graph_input import edge_index_csc
    ei = graph(seed=13)
    torch.library.opcheck(edge_index_csc, (ei, N, N))
    colptr, row = edge_index_csc(ei, N, N)
    assert colptr.shape == (N + 1, ) and row.shape == (ei.size(1), )
    order = torch.argsort(ei[1], stable=True)
    assert torch.equal(row, ei[0][order])


@pytest.mark.parametrize('reduce', ['mean', 'max'])
def test_sample_aggregate_ei_equals_the_op_on_the_csc(reduce):
    # What a compiled FusedGraphSAGE calls: the same draws, outputs and
    # gradient as sample_aggregate on the memoised CSC; opcheck'd.
    from pyg_fusesample.nn.edge_index_aggregate import sample_aggregate_ei
    from pyg_fusesample.nn.graph_input import as_csc
    from pyg_fusesample.ops import sample_aggregate
    ei = graph(seed=14)
    x = features().double().requires_grad_(True)
    target = torch.arange(0, N, 2)
    got = sample_aggregate_ei(ei, N, x, target, 3, reduce, False, 11, 1)
    colptr, row = as_csc(ei, N, N)
    ref = sample_aggregate(colptr, row, x, target, 3, reduce, False, 11, 1)
    for a, b in zip(got, ref):
        assert torch.equal(a, b)
    g = torch.randn_like(ref.out)
    (ga, ), (gb, ) = (torch.autograd.grad(o, x, g) for o in (got[0], ref.out))
    assert torch.equal(ga, gb)
    torch.library.opcheck(sample_aggregate_ei,
                          (ei, N, x, target, 3, reduce, False, 11, 1))


@pytest.mark.cuda
@pytest.mark.parametrize('aggr', AGGRS)
def test_conv_autocast_bf16(aggr):
    ei, x = graph(device='cuda'), features(device='cuda')
    fused = FusedSAGEConv(IN, OUT, num_neighbors=-1, aggr=aggr).cuda()
    expected = fused(x, ei)
    x = x.clone().requires_grad_()
    with torch.autocast('cuda', dtype=torch.bfloat16):
        out = fused(x, ei)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), expected, rtol=3e-2, atol=3e-2)
    out.float().sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())
    # bf16 features in, under autocast, with sampling
    fused.num_neighbors = 3
    with torch.autocast('cuda', dtype=torch.bfloat16):
        out = fused(x.detach().bfloat16(), ei)
    assert out.dtype == torch.bfloat16 and bool(torch.isfinite(out).all())


# FusedGraphSAGE #############################################################

FANOUTS = [[3], [4, 2], [3, 2, 2], [3, -1], [2, 2, -1], [3, 0], [0, 3]]
SEEDS = [0, 5, 48, 5, 12, 33, 1]  # 0: hub, 48: isolated, 5 twice


def model_pair(fanouts, aggr, replace=False, seed=0, device='cpu'):
    torch.manual_seed(seed)
    model = FusedGraphSAGE(IN, 7, 4, len(fanouts), fanouts, aggr=aggr,
                           replace=replace,
                           generator=torch.Generator().manual_seed(seed))
    return model.to(device, torch.float64)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanouts', FANOUTS, ids=str)
@pytest.mark.parametrize('aggr', AGGRS)
def test_graph_sage_matches_tree_reference(device, fanouts, aggr):
    replace = fanouts == [3, 2, 2]  # one deep tree with replacement
    ei = graph(device=device)
    model = model_pair(fanouts, aggr, replace, seed=7, device=device).train()
    seeds = torch.tensor(SEEDS, device=device)
    x = features(device=device, dtype=torch.float64).requires_grad_()
    out = model(x, ei, seeds)
    grad = features(len(SEEDS), 4, seed=2, device=device,
                    dtype=torch.float64)
    out.backward(grad)

    x_ref = features(device=device, dtype=torch.float64).requires_grad_()
    exp, convs = ra.tree_reference(model, x_ref, ei, seeds, seeded_key(7),
                                   return_convs=True)
    exp.backward(grad)
    torch.testing.assert_close(out, exp)
    torch.testing.assert_close(x.grad, x_ref.grad)
    for i, (fused, conv) in enumerate(zip(model.convs, convs)):
        for (name, p), q in zip(fused.named_parameters(), conv.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=f'convs.{i}.{name}')


def test_graph_sage_global_rng():
    """Without a generator each level's key comes from torch's default CPU
    generator (the op's rng_seed=-1), so torch.manual_seed makes a training
    step repeatable and the next step draws a new tree."""
    ei, x = graph(), features(dtype=torch.float64)
    torch.manual_seed(0)
    model = FusedGraphSAGE(IN, 7, 4, 3, [3, 2, 2]).double().train()
    seeds = torch.tensor(SEEDS)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        out = model(x, ei, seeds)
        again = model(x, ei, seeds)
        torch.manual_seed(123)
        repeat = model(x, ei, seeds)
        torch.manual_seed(123)
        keys = [ra.default_generator_key() for _ in range(3)]
    assert torch.equal(out, repeat)
    assert not torch.equal(out, again)
    torch.testing.assert_close(out, ra.tree_reference(model, x, ei, seeds,
                                                      keys))


@pytest.mark.parametrize('device', devices())
def test_graph_sage_sample_tree(device):
    ei, x = graph(device=device), features(device=device)
    fanouts = [3, 2, -1]
    model = FusedGraphSAGE(IN, 7, 4, 3, fanouts).to(device)
    seeds = torch.tensor(SEEDS, device=device)
    levels, aggs = model.sample_tree(x, ei, seeds, rng_seed=99)
    assert [lv.numel() for lv in levels] == [7, 21, 42]
    assert [a.shape for a in aggs] == [(7, IN), (21, IN), (42, IN)]
    colptr, row, _ = ref.csc_from_coo(ei.cpu(), N)
    nodes, _ = ra.sample_tree(colptr, row, seeds.cpu(), fanouts[:2], False,
                              99)
    assert torch.cat(levels).cpu().tolist() == nodes
    # each level's aggregation is the op's over its children, exactly
    for level, (lv, agg, k) in enumerate(zip(levels, aggs, fanouts)):
        exp, _, _ = ra.sample_aggregate(colptr, row, x.cpu(), lv.cpu(), k,
                                        'mean', False, 99, level)
        torch.testing.assert_close(agg.cpu(), exp)
    # an explicit key is repeatable
    again, _ = model.sample_tree(x, ei, seeds, rng_seed=99)
    assert all(torch.equal(a, b) for a, b in zip(levels, again))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('num_layers', [1, 2, 3])
def test_graph_sage_eval_matches_pyg_graphsage(device, aggr, num_layers):
    ei, x = graph(device=device), features(device=device)
    fanouts = [3] * (num_layers - 1) + [-1]
    torch.manual_seed(0)
    model = FusedGraphSAGE(IN, 7, 4, num_layers, fanouts, aggr=aggr)
    pyg = GraphSAGE(IN, 7, num_layers, 4, aggr=aggr)
    model, pyg = model.to(device).eval(), pyg.to(device).eval()
    # state dicts interchange both ways
    model.load_state_dict(pyg.state_dict())
    torch.testing.assert_close(model(x, ei), pyg(x, ei))
    model.reset_parameters()
    pyg.load_state_dict(model.state_dict())
    expected = pyg(x, ei)
    torch.testing.assert_close(model(x, ei), expected)
    seeds = torch.tensor(SEEDS, device=device)
    torch.testing.assert_close(model(x, ei, seeds), expected[seeds])
    torch.testing.assert_close(model(x, as_format(ei, 'csr')), expected)


def test_graph_sage_eval_on_cora_matches_pyg_graphsage(cora):
    torch.manual_seed(0)
    model = FusedGraphSAGE(cora.num_features, 16, 7, 2, [10, 5]).eval()
    pyg = GraphSAGE(cora.num_features, 16, 2, 7).eval()
    pyg.load_state_dict(model.state_dict())
    torch.testing.assert_close(model(cora.x, cora.edge_index),
                               pyg(cora.x, cora.edge_index))


@pytest.mark.parametrize('aggr', AGGRS)
def test_graph_sage_all_neighbours_training_matches_eval_one_layer(aggr):
    """One layer with fan-out -1: training computes eval's result."""
    ei, x = graph(), features()
    model = FusedGraphSAGE(IN, 7, 4, 1, [-1], aggr=aggr)
    seeds = torch.tensor(SEEDS)
    out = model.train()(x, ei, seeds)
    torch.testing.assert_close(out, model.eval()(x, ei, seeds))


@pytest.mark.parametrize('device', devices())
def test_graph_sage_zero_fanout(device):
    """k = 0: no children, so the aggregation is 0 and only the root path
    remains."""
    ei = graph(device=device)
    x = features(device=device).requires_grad_()
    model = FusedGraphSAGE(IN, 7, 4, 1, [0]).to(device).train()
    seeds = torch.tensor(SEEDS, device=device)
    out = model(x, ei, seeds)
    conv = model.convs[0]
    torch.testing.assert_close(out, conv.lin_l.bias + conv.lin_r(x[seeds]))
    out.sum().backward()
    untouched = torch.ones(N, dtype=torch.bool, device=device)
    untouched[seeds] = False
    assert bool((x.grad[untouched] == 0).all())


def test_graph_sage_inference_leaves_global_rng_alone():
    ei, x = graph(), features()
    model = FusedGraphSAGE(IN, 7, 4, 2, [3, 2]).eval()
    assert_leaves_global_rng(lambda: model(x, ei))


def test_graph_sage_invalid_arguments():
    with pytest.raises(ValueError, match="'num_neighbors' needs one fan-out"):
        FusedGraphSAGE(IN, 7, 4, 2, [3])
    with pytest.raises(ValueError, match="'num_neighbors' needs one fan-out"):
        FusedGraphSAGE(IN, 7, 4, 2, [3, 2, 1])
    with pytest.raises(ValueError, match='only the last may be -1'):
        FusedGraphSAGE(IN, 7, 4, 2, [-1, 3])
    with pytest.raises(ValueError, match='only the last may be -1'):
        FusedGraphSAGE(IN, 7, 4, 2, [3, -2])
    with pytest.raises(ValueError, match="'num_layers' must be >= 1"):
        FusedGraphSAGE(IN, 7, 4, 0, [])
    model = FusedGraphSAGE(IN, 7, 4, 2, [3, 2])
    with pytest.raises(ValueError, match="'seed_nodes' must be a 1-D int64"):
        model(features(), graph(), torch.tensor([0.0]))


def test_graph_sage_repr():
    model = FusedGraphSAGE(IN, 7, 4, 2, [3, -1], aggr='add')
    assert repr(model) == ('FusedGraphSAGE(6, 4, num_layers=2, '
                           'num_neighbors=[3, -1], aggr=sum)')
    assert [c.num_neighbors for c in model.convs] == [3, -1]
