"""AutoSpMMConv against PyG: GCNConv (state dicts load both ways; edge_index,
edge weights, SparseTensor and torch CSR adj_t), sum/mean aggregation of
lin(x), multi-head CSR attention against a dense masked reference,
gradients, the per-input CSRGraph memo, repr and bad arguments.

The kernel is whatever pyg_fusesample.autotune.run_spmm picks (decision file
off, a small probe budget), and each forced backend in turn.
"""
import math
import os

import pytest
import torch
from torch_geometric.nn import GCNConv, SimpleConv
from torch_geometric.utils import scatter, to_torch_csr_tensor

import pyg_fusesample.autotune
from pyg_fusesample.autotune import config
from pyg_fusesample.nn import AutoSpMMConv, auto_spmm_conv
from pyg_fusesample.sparse import CSRGraph

from conftest import devices

pytestmark = [pytest.mark.filterwarnings('ignore:Sparse CSR tensor support'),
              pytest.mark.filterwarnings('ignore:Sparse invariant checks')]

N, IN, OUT = 40, 12, 8
TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(autouse=True)
def autotune_env(monkeypatch):
    """No user toggles leak in, no decision file is written, probes short."""
    for name in list(os.environ):
        if name.startswith(config.PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.setenv(config.PREFIX + 'CACHE', 'off')
    monkeypatch.setenv(config.PREFIX + 'BUDGET_MS', '5')


def backend_params():
    """(device, FUSESAMPLE_AUTOTUNE_FORCE): the scheduler's own choice (None)
    and every kernel forced, cuSPARSE / torch.sparse.mm included."""
    out = [pytest.param('cpu', f, id=f'cpu-{f or "auto"}')
           for f in (None, 'cpu', 'cusparse')]
    out += [pytest.param('cuda', f, marks=pytest.mark.cuda,
                         id=f'cuda-{f or "auto"}')
            for f in (None, 'warp', 'subwarp', 'hub:2', 'hub:0', 'cusparse')]
    return out


def force(monkeypatch, backend):
    if backend is not None:
        monkeypatch.setenv(config.PREFIX + 'FORCE', backend)


def graph(seed=0, num_nodes=N, num_edges=160, duplicates=True,
          self_loops=True):
    """Random edges, the last 4 nodes without in-edges (one without any
    edge); duplicates and a few self-loops unless switched off."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes - 1, (num_edges,), generator=g)
    dst = torch.randint(0, num_nodes - 4, (num_edges,), generator=g)
    ei = torch.stack([src, dst])
    if not self_loops:
        ei = ei[:, ei[0] != ei[1]]
    else:
        loops = torch.arange(0, 12, 3)
        ei = torch.cat([ei, torch.stack([loops, loops])], dim=1)
    if duplicates:
        ei = torch.cat([ei, ei[:, :10]], dim=1)
    else:
        key = torch.unique(ei[0] * num_nodes + ei[1])
        ei = torch.stack([key // num_nodes, key % num_nodes])
        ei = ei[:, torch.randperm(ei.size(1), generator=g)]
    return ei


def features(seed=1, num_nodes=N, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(num_nodes, IN, generator=g).to(dtype)


def edge_weight(ei, seed=2):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(ei.size(1), generator=g) + 0.1


def pair(device, seed=0, **kwargs):
    """An AutoSpMMConv with a random bias and a GCNConv with its weights."""
    torch.manual_seed(seed)
    conv = AutoSpMMConv(IN, OUT, **kwargs)
    with torch.no_grad():
        conv.bias.normal_()
    gcn_kwargs = {k: v for k, v in kwargs.items()
                  if k in ('improved', 'add_self_loops', 'normalize')}
    gcn = GCNConv(IN, OUT, **gcn_kwargs)
    gcn.load_state_dict(conv.state_dict())
    return conv.to(device), gcn.to(device)


# gcn == GCNConv ##############################################################

@pytest.mark.parametrize('device,backend', backend_params())
@pytest.mark.parametrize('weighted', [False, True])
def test_gcn_matches_gcnconv(device, backend, weighted, monkeypatch):
    force(monkeypatch, backend)
    conv, gcn = pair(device)
    ei = graph().to(device)
    x = features().to(device)
    w = edge_weight(ei).to(device) if weighted else None
    out = conv(x, ei, w)
    assert out.shape == (N, OUT) and out.device.type == device
    torch.testing.assert_close(out, gcn(x, ei, w), **TOL)
    # again: the memoised graph and decision give the same result
    torch.testing.assert_close(conv(x, ei, w), out, **TOL)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('kwargs', [
    dict(improved=True), dict(add_self_loops=False),
    dict(normalize=False, add_self_loops=False),
    dict(improved=True, add_self_loops=False)], ids=str)
def test_gcn_options_match_gcnconv(device, kwargs):
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, **kwargs).to(device)
    gcn = GCNConv(IN, OUT, **kwargs).to(device)
    gcn.load_state_dict(conv.state_dict())
    ei = graph().to(device)
    x = features().to(device)
    w = edge_weight(ei).to(device)
    torch.testing.assert_close(conv(x, ei), gcn(x, ei), **TOL)
    torch.testing.assert_close(conv(x, ei, w), gcn(x, ei, w), **TOL)


def test_normalize_false_matches_gcnconv():
    """GCNConv(normalize=False) adds no self-loops (its add_self_loops
    defaults to normalize, and it refuses self-loops without
    normalisation). Fails today: AutoSpMMConv's add_self_loops defaults to
    True and _build adds unit self-loops whenever normalize is False and
    add_self_loops is True, so AutoSpMMConv(normalize=False) computes
    (A + I) X W instead of GCNConv's A X W."""
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, normalize=False)
    gcn = GCNConv(IN, OUT, normalize=False)
    gcn.load_state_dict(conv.state_dict())
    ei, x = graph(self_loops=False), features()
    torch.testing.assert_close(conv(x, ei), gcn(x, ei), **TOL)


def test_bias_false_matches_gcnconv():
    """Fails today: AutoSpMMConv(bias=False) raises KeyError("attribute
    'bias' already exists"): __init__ assigns self.bias = None (a plain
    attribute) and then calls self.register_parameter('bias', None)."""
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, bias=False)
    gcn = GCNConv(IN, OUT, bias=False)
    assert conv.bias is None and set(conv.state_dict()) == {'lin.weight'}
    gcn.load_state_dict(conv.state_dict())
    ei, x = graph(), features()
    torch.testing.assert_close(conv(x, ei), gcn(x, ei), **TOL)


def test_state_dict_loads_both_ways():
    torch.manual_seed(0)
    conv, gcn = AutoSpMMConv(IN, OUT), GCNConv(IN, OUT)
    with torch.no_grad():
        gcn.bias.normal_()
    assert set(conv.state_dict()) == set(gcn.state_dict())
    conv.load_state_dict(gcn.state_dict())  # strict: the same names
    ei, x = graph(), features()
    torch.testing.assert_close(conv(x, ei), gcn(x, ei), **TOL)
    torch.manual_seed(1)
    conv2, gcn2 = AutoSpMMConv(IN, OUT), GCNConv(IN, OUT)
    with torch.no_grad():
        conv2.bias.normal_()
    gcn2.load_state_dict(conv2.state_dict())
    torch.testing.assert_close(conv2(x, ei), gcn2(x, ei), **TOL)


def test_gcn_float64():
    conv, gcn = pair('cpu')
    conv, gcn = conv.double(), gcn.double()
    ei, x = graph(), features(dtype=torch.float64)
    w = edge_weight(ei).double()
    out = conv(x, ei, w)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, gcn(x, ei, w), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('weighted', [False, True])
def test_gcn_sparse_tensor_adj_t(device, weighted):
    torch_sparse = pytest.importorskip('torch_sparse')
    if device == 'cuda' and torch.ops.torch_sparse.cuda_version() == -1:
        pytest.skip('torch_sparse built without CUDA')
    conv, gcn = pair(device)
    # no duplicates and no self-loops: PyG's own adj_t paths differ from its
    # edge_index path there (fill_diag / add_self_loops vs
    # add_remaining_self_loops)
    ei = graph(duplicates=False, self_loops=False).to(device)
    x = features().to(device)
    value = edge_weight(ei).to(device) if weighted else None
    adj_t = torch_sparse.SparseTensor(row=ei[1], col=ei[0], value=value,
                                      sparse_sizes=(N, N))
    out = conv(x, adj_t)
    torch.testing.assert_close(out, gcn(x, adj_t), **TOL)
    # and the same as on edge_index
    torch.testing.assert_close(out, conv(x, ei, value), **TOL)
    # with self-loops in the input, the layer reads adj_t as it reads
    # edge_index (existing self-loops kept: add_remaining_self_loops)
    ei = graph(duplicates=False).to(device)
    value = edge_weight(ei).to(device) if weighted else None
    adj_t = torch_sparse.SparseTensor(row=ei[1], col=ei[0], value=value,
                                      sparse_sizes=(N, N))
    torch.testing.assert_close(conv(x, adj_t), gcn(x, ei, value), **TOL)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('weighted', [False, True])
def test_gcn_torch_csr_adj_t(device, weighted):
    conv, gcn = pair(device)
    # no duplicates and no self-loops: PyG's own adj_t paths differ from its
    # edge_index path there (fill_diag / add_self_loops vs
    # add_remaining_self_loops)
    ei = graph(duplicates=False, self_loops=False).to(device)
    x = features().to(device)
    value = edge_weight(ei).to(device) if weighted else None
    # adj_t: rows are targets
    adj_t = to_torch_csr_tensor(ei.flip(0), value, size=(N, N))
    out = conv(x, adj_t)
    torch.testing.assert_close(out, gcn(x, adj_t), **TOL)
    torch.testing.assert_close(out, conv(x, ei, value), **TOL)
    # with self-loops in the input: read as edge_index is
    ei = graph(duplicates=False).to(device)
    value = edge_weight(ei).to(device) if weighted else None
    adj_t = to_torch_csr_tensor(ei.flip(0), value, size=(N, N))
    torch.testing.assert_close(conv(x, adj_t), gcn(x, ei, value), **TOL)


# sum / mean ##################################################################

def ref_aggregate(conv, x, ei, w, aggr):
    """lin(x) aggregated over in-neighbours (weighted), plus bias."""
    h = conv.lin(x)
    msg = h[ei[0]] if w is None else h[ei[0]] * w.unsqueeze(-1)
    out = scatter(msg, ei[1], 0, dim_size=x.size(0), reduce='sum')
    if aggr == 'mean':
        deg = torch.bincount(ei[1], minlength=x.size(0)).clamp(min=1)
        out = out / deg.unsqueeze(-1).to(out.dtype)
    return out + conv.bias


@pytest.mark.parametrize('device,backend', backend_params())
@pytest.mark.parametrize('aggr', ['sum', 'mean'])
@pytest.mark.parametrize('weighted', [False, True])
def test_sum_mean_match_reference(device, backend, aggr, weighted,
                                  monkeypatch):
    force(monkeypatch, backend)
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, aggr=aggr).to(device)
    with torch.no_grad():
        conv.bias.normal_()
    ei = graph().to(device)
    x = features().to(device)
    w = edge_weight(ei).to(device) if weighted else None
    out = conv(x, ei, w)
    with torch.no_grad():
        exp = ref_aggregate(conv, x, ei, w, aggr)
        simple = SimpleConv(aggr=aggr).to(device)(conv.lin(x), ei, w)
        simple = simple + conv.bias
    torch.testing.assert_close(out, exp, **TOL)
    torch.testing.assert_close(out, simple, **TOL)
    # no self-loops for sum / mean: nodes without in-edges get the bias only
    isolated = torch.bincount(ei[1], minlength=N) == 0
    assert isolated.sum() >= 4
    torch.testing.assert_close(out[isolated],
                               conv.bias.expand(int(isolated.sum()), OUT),
                               **TOL)


# attention ###################################################################

def ref_attention(conv, x, ei, add_self_loops=True):
    """Dense masked multi-head attention from the layer's own weights."""
    n, H = x.size(0), conv.heads
    C = conv.out_channels // H
    q = conv.lin_query(x).view(n, H, C).double()
    k = conv.lin_key(x).view(n, H, C).double()
    v = conv.lin(x).view(n, H, C).double()
    mask = torch.zeros(n, n, dtype=torch.bool, device=x.device)
    mask[ei[1], ei[0]] = True  # row: target
    if add_self_loops:
        mask.fill_diagonal_(True)
    scores = torch.einsum('ihc,jhc->hij', q, k) / math.sqrt(C)
    p = torch.softmax(scores.masked_fill(~mask, -math.inf), -1).nan_to_num(0.0)
    out = torch.einsum('hij,jhc->ihc', p, v).reshape(n, conv.out_channels)
    return out.to(x.dtype) + conv.bias


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('heads', [1, 2])
@pytest.mark.parametrize('add_self_loops', [True, False])
def test_attention_matches_dense(device, heads, add_self_loops):
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, attention=True, heads=heads,
                        add_self_loops=add_self_loops).to(device)
    with torch.no_grad():
        conv.bias.normal_()
    ei = graph(duplicates=False).to(device)  # existing self-loops kept
    x = features().to(device)
    out = conv(x, ei)
    assert out.shape == (N, OUT)
    with torch.no_grad():
        exp = ref_attention(conv, x, ei, add_self_loops)
    torch.testing.assert_close(out, exp, **TOL)
    # edge weights do not enter attention
    torch.testing.assert_close(conv(x, ei, edge_weight(ei).to(device)), out,
                               **TOL)


# gradients ###################################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('kwargs', [
    dict(), dict(aggr='sum'), dict(aggr='mean'),
    dict(attention=True, heads=1), dict(attention=True, heads=2)], ids=str)
def test_gradients_reach_all_parameters(device, kwargs):
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, **kwargs).to(device)
    ei = graph(duplicates=False).to(device)
    x = features().to(device).requires_grad_()
    g = torch.Generator().manual_seed(3)
    seed = torch.randn(N, OUT, generator=g).to(device)
    (conv(x, ei) * seed).sum().backward()
    names = {n for n, _ in conv.named_parameters()}
    expected = {'lin.weight', 'bias'} | (
        {'lin_query.weight', 'lin_key.weight'} if kwargs.get('attention')
        else set())
    assert names == expected
    for name, p in conv.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
    assert x.grad is not None and x.grad.abs().sum() > 0


@pytest.mark.parametrize('device', devices())
def test_gcn_gradients_match_gcnconv(device):
    conv, gcn = pair(device)
    ei = graph().to(device)
    w = edge_weight(ei).to(device)
    x1 = features().to(device).requires_grad_()
    x2 = x1.detach().clone().requires_grad_()
    g = torch.Generator().manual_seed(3)
    seed = torch.randn(N, OUT, generator=g).to(device)
    (conv(x1, ei, w) * seed).sum().backward()
    (gcn(x2, ei, w) * seed).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, **TOL)
    torch.testing.assert_close(conv.lin.weight.grad, gcn.lin.weight.grad,
                               **TOL)
    torch.testing.assert_close(conv.bias.grad, gcn.bias.grad, **TOL)


# the CSRGraph memo ###########################################################

def test_csr_memo_reused_and_invalidated(monkeypatch):
    seen = []
    run_spmm = pyg_fusesample.autotune.run_spmm

    def spy(graph, x, reduce='sum'):
        seen.append(graph)
        return run_spmm(graph, x, reduce)

    # The layer's own reference (imported at module level).
    monkeypatch.setattr(auto_spmm_conv, 'run_spmm', spy)
    conv = AutoSpMMConv(IN, OUT)
    ei, x = graph(), features()
    g1 = conv.csr(ei, N)
    assert isinstance(g1, CSRGraph) and g1.num_rows == N
    assert conv.csr(ei, N) is g1
    out = conv(x, ei)
    conv(x, ei)
    assert seen == [g1, g1]  # forward used the memo, twice
    # another dtype is another graph (its weights are cast)
    assert conv.csr(ei, N, dtype=torch.float64) is not g1
    g1 = conv.csr(ei, N)
    # an in-place edit of edge_index gives a new graph
    ei[0, 0] = (ei[0, 0] + 1) % N
    g2 = conv.csr(ei, N)
    assert g2 is not g1
    assert conv.csr(ei, N) is g2
    assert not torch.allclose(conv(x, ei), out)
    assert seen[-1] is g2
    # a clone is another tensor: another graph, same values
    g3 = conv.csr(ei.clone(), N)
    assert g3 is not g2 and torch.equal(g3.rowptr, g2.rowptr)
    # edge weights are part of the key, in-place edits too
    w = edge_weight(ei)
    gw = conv.csr(ei, N, w)
    assert gw is not conv.csr(ei, N) and conv.csr(ei, N, w) is not None
    gw = conv.csr(ei, N, w)
    assert conv.csr(ei, N, w) is gw
    w.mul_(2)
    assert conv.csr(ei, N, w) is not gw


@pytest.mark.parametrize('kind', ['torch_csr', 'sparse_tensor'])
def test_csr_memo_reused_for_sparse_adj_t(kind):
    """Repeated calls with the same adj_t (SparseTensor or torch CSR) should
    reuse the cached CSRGraph, as they do for edge_index (the layer's
    docstring: "memoised per input tensors"). Fails today: csr() converts
    adj_t into a fresh edge_index tensor (torch.stack / indices().flip(0))
    and keys the memo by that temporary's id, so every forward rebuilds the
    graph (gcn_norm, sort) and, the scheduler's memo living in the graph's
    cache, decides the kernel again."""
    conv = AutoSpMMConv(IN, OUT)
    ei = graph(duplicates=False)
    if kind == 'torch_csr':
        adj_t = to_torch_csr_tensor(ei.flip(0), size=(N, N))
    else:
        torch_sparse = pytest.importorskip('torch_sparse')
        adj_t = torch_sparse.SparseTensor(row=ei[1], col=ei[0],
                                          sparse_sizes=(N, N))
    same = conv.csr(adj_t, N) is conv.csr(adj_t, N)
    assert same, f'{kind} adj_t: CSRGraph rebuilt on a repeated call'


def test_flow_target_to_source_matches_gcnconv():
    """flow='target_to_source' (a MessagePassing kwarg the layer accepts)
    must aggregate into edge_index[0] as GCNConv does, or be rejected.
    Fails today: gcn_norm normalises by the flow, but
    CSRGraph.from_edge_index always makes edge_index[1] the rows, so the
    result is neither GCNConv's nor the default flow's."""
    torch.manual_seed(0)
    conv = AutoSpMMConv(IN, OUT, flow='target_to_source')
    gcn = GCNConv(IN, OUT, flow='target_to_source')
    gcn.load_state_dict(conv.state_dict())
    ei, x = graph(), features()
    torch.testing.assert_close(conv(x, ei), gcn(x, ei), **TOL)


# repr and bad arguments ######################################################

def test_repr():
    assert repr(AutoSpMMConv(IN, OUT)) == \
        f'AutoSpMMConv({IN}, {OUT}, aggr=gcn)'
    assert repr(AutoSpMMConv(IN, OUT, aggr='mean')) == \
        f'AutoSpMMConv({IN}, {OUT}, aggr=mean)'
    assert repr(AutoSpMMConv(IN, OUT, attention=True, heads=2)) == \
        f'AutoSpMMConv({IN}, {OUT}, aggr=gcn, heads=2, attention=True)'


def test_bad_arguments():
    with pytest.raises(ValueError, match="'aggr'"):
        AutoSpMMConv(IN, OUT, aggr='max')
    with pytest.raises(ValueError, match="'heads'"):
        AutoSpMMConv(IN, OUT, attention=True, heads=3)
    AutoSpMMConv(IN, OUT, heads=3)  # heads only matter with attention


# torch.compile ###############################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr,weighted', [('gcn', False), ('gcn', True),
                                           ('sum', True), ('mean', False)])
def test_compiled_fullgraph_matches_eager(device, aggr, weighted, monkeypatch):
    """fullgraph=True traces the layer (the graph's construction and the
    kernel choice stay behind fusesample::layer_spmm); outputs and
    gradients equal the eager layer's, and the graph is built once."""
    ei, x = graph(), features()
    ei, x = ei.to(device), x.to(device).requires_grad_()
    w = edge_weight(ei).to(device) if weighted else None
    conv = AutoSpMMConv(IN, OUT, aggr=aggr).to(device)
    out = conv(x, ei, w)
    out.square().sum().backward()
    grads = [x.grad.clone()] + [p.grad.clone() for p in conv.parameters()]
    x.grad = None
    conv.zero_grad()
    builds = []
    build = conv._build
    monkeypatch.setattr(conv, '_build',
                        lambda *a: builds.append(1) or build(*a))
    conv._graphs.clear()
    compiled = torch.compile(conv, fullgraph=True)
    for _ in range(3):
        c_out = compiled(x, ei, w)
    torch.testing.assert_close(c_out, out, **TOL)
    c_out.square().sum().backward()
    c_grads = [x.grad] + [p.grad for p in conv.parameters()]
    for a, b in zip(c_grads, grads):
        torch.testing.assert_close(a, b, **TOL)
    assert len(builds) == 1


def test_compiled_refuses_what_it_cannot_trace():
    ei, x = graph(), features()
    w = edge_weight(ei).requires_grad_()
    with pytest.raises(Exception, match='does not differentiate'):
        torch.compile(AutoSpMMConv(IN, OUT), fullgraph=True)(x, ei, w)
    with pytest.raises(Exception, match='attention=False'):
        torch.compile(AutoSpMMConv(IN, OUT, attention=True),
                      fullgraph=True)(x, ei)


def test_layer_spmm_opcheck():
    from pyg_fusesample.nn.graph_spmm_op import layer_spmm
    conv = AutoSpMMConv(IN, OUT, aggr='mean')
    ei = graph()
    x = torch.randn(N, OUT, dtype=torch.float64, requires_grad=True)
    args = (x, ei, None, N, conv._handle, 'mean')
    torch.library.opcheck(layer_spmm, args)
    assert torch.autograd.gradcheck(lambda x: layer_spmm(x, *args[1:]), (x, ))


def test_compiled_copy_has_its_own_handle():
    import copy
    import gc
    ei, x = graph(), features()
    conv = AutoSpMMConv(IN, OUT)
    clone = copy.deepcopy(conv)
    assert clone._handle != conv._handle
    want = conv(x, ei)
    del conv
    gc.collect()
    torch.testing.assert_close(torch.compile(clone, fullgraph=True)(x, ei),
                               want, **TOL)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16])
def test_autocast_runs_the_16_bit_kernels(device, dtype, monkeypatch,
                                          tmp_path):
    # Under autocast, x stays float32 and lin's output is 16-bit: the graph's
    # values must follow the latter, or every kernel of the shortlist refuses
    # the input ('value' is Float but 'x' is BFloat16) and the decision,
    # forward and backward, silently falls back to a reference.
    if device == 'cpu' and dtype == torch.float16:
        pytest.skip('CPU autocast takes bfloat16')
    log = tmp_path / 'telemetry.jsonl'
    monkeypatch.setenv(config.PREFIX + 'TELEMETRY', str(log))
    ei = graph()
    torch.manual_seed(0)
    x = torch.randn(N, IN, device=device, requires_grad=True)
    conv = AutoSpMMConv(IN, OUT).to(device)
    with torch.autocast(device, dtype=dtype):
        out = conv(x, ei.to(device))
    out.float().sum().backward()
    ref_x = x.detach().clone().requires_grad_(True)
    ref = conv(ref_x, ei.to(device))
    ref.sum().backward()
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(x.grad, ref_x.grad, rtol=2e-2, atol=2e-2)
    import json
    lines = [json.loads(l) for l in log.read_text().splitlines()]
    kernels = [l for l in lines if l['candidate'] not in ('cusparse', 'scatter')
               and not l['candidate'].startswith('fp32:')]
    assert kernels and all(l['error'] is None for l in kernels), [
        (l['candidate'], l['error']) for l in kernels if l['error']]


def test_no_kernel_running_warns(monkeypatch):
    # A decision whose shortlist all failed falls back to a reference: not
    # silently.
    from pyg_fusesample.autotune import scheduler
    real = scheduler.measure

    def refuse_kernels(c, *args, **kwargs):
        if not pyg_fusesample.autotune.candidates.is_reference(c):
            raise RuntimeError('refused for the test')
        return real(c, *args, **kwargs)
    monkeypatch.setattr(scheduler, 'measure', refuse_kernels)
    ei = graph()
    conv = AutoSpMMConv(IN, OUT)
    with pytest.warns(RuntimeWarning, match='no kernel of the shortlist ran'
                      '.*refused for the test'):
        conv(torch.randn(N, IN), ei)
