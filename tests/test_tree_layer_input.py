"""TreeLayerInput (FusedGraphSAGE's input of the layers above the first, with
its hand-written backward) against a plain autograd reference, float64
gradcheck, its in-place ReLU and dropout, and the model paths that use it."""
import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample.nn import FusedGraphSAGE
from pyg_fusesample.nn.tree_layer_input import TreeLayerInput, child_slots

import reference as ref
import reference_aggregate as ra
from conftest import devices

AGGRS = ['mean', 'sum', 'max']
# (seeds, fan-outs of the parent levels): the last case stacks three levels,
# so level-1 rows are both children and parents (their gradients add up).
LAYOUTS = [(4, [3]), (3, [2, 3]), (5, [0]), (2, [1, 2])]


def tree(num_seeds, fanouts, seed=0, device='cpu'):
    """Level node ids (``-1`` = padded slot, about a quarter of them; one
    parent of the first level has no child at all)."""
    g = torch.Generator().manual_seed(seed)
    levels = [torch.arange(num_seeds)]
    for k in fanouts:
        ids = torch.randint(0, 100, (levels[-1].numel(), k), generator=g)
        ids[torch.rand(ids.shape, generator=g) < 0.25] = -1
        if len(levels) == 1 and k > 0:
            ids[0] = -1
        levels.append(ids.reshape(-1))
    return [lv.to(device) for lv in levels]


def reference(z, levels, fanouts, aggr, relu):
    """The same input built with autograd over plain torch ops."""
    h = torch.relu(z) if relu else z
    rows, row = [], 0
    for parent, child, k in zip(levels, levels[1:], fanouts):
        n = parent.numel()
        for p in range(n):
            kids = [row + n + p * k + i for i in range(k)
                    if int(child[p * k + i]) >= 0]
            if not kids:
                rows.append(h[:0].sum(0))
            elif aggr == 'max':
                rows.append(h[kids].amax(0))
            else:
                s = h[kids].sum(0)
                rows.append(s / len(kids) if aggr == 'mean' else s)
        row += n
    n_parents = row
    return torch.cat([torch.stack(rows), h[:n_parents]], dim=1)


def rows_of(levels):
    return sum(lv.numel() for lv in levels)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('layout', LAYOUTS, ids=str)
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('relu', [True, False])
def test_matches_autograd_reference(device, layout, aggr, relu):
    num_seeds, fanouts = layout
    levels = tree(num_seeds, fanouts, device=device)
    g = torch.Generator().manual_seed(1)
    z0 = torch.randn(rows_of(levels), 5, generator=g,
                     dtype=torch.float64).to(device)
    z_ref = z0.clone().requires_grad_()
    expected = reference(z_ref, levels, fanouts, aggr, relu)
    grad = torch.randn(expected.shape, generator=g,
                       dtype=torch.float64).to(device)
    expected.backward(grad)

    z = z0.clone().requires_grad_()
    pre = z * 1.0  # a non-leaf: the ReLU overwrites it in place
    out, h = TreeLayerInput.apply(pre, child_slots(levels, fanouts), fanouts,
                                  aggr, relu, 0.0)
    torch.testing.assert_close(out, expected)
    if relu:  # the pre-activation now holds the activation (until backward)
        assert h.data_ptr() == pre.data_ptr()
        torch.testing.assert_close(pre, torch.relu(z0))
    out.backward(grad)
    torch.testing.assert_close(z.grad, z_ref.grad)


@pytest.mark.parametrize('layout', LAYOUTS, ids=str)
@pytest.mark.parametrize('aggr', AGGRS)
@pytest.mark.parametrize('relu', [True, False])
@pytest.mark.parametrize('p', [0.0, 0.4])
def test_gradcheck(layout, aggr, relu, p):
    if p > 0 and not relu:
        pytest.skip('dropout is applied here only together with the ReLU')
    num_seeds, fanouts = layout
    levels = tree(num_seeds, fanouts, seed=3)
    valid = child_slots(levels, fanouts)
    z = torch.randn(rows_of(levels), 4, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(2))
    z.requires_grad_()

    def fn(z):  # the same dropout mask on every call
        torch.manual_seed(0)
        return TreeLayerInput.apply(z.clone(), valid, fanouts, aggr, relu,
                                    p, False)[0]

    assert torch.autograd.gradcheck(fn, (z,))


def test_dropout_keeps_and_scales():
    levels = tree(64, [4])
    valid = child_slots(levels, [4])
    z = torch.rand(rows_of(levels), 64, dtype=torch.float64) + 0.5  # all > 0
    torch.manual_seed(0)
    out, h = TreeLayerInput.apply(z.clone(), valid, [4], 'sum', True, 0.25)
    kept = h != 0
    assert abs(kept.double().mean().item() - 0.75) < 0.02
    z_kept = z[kept]
    torch.testing.assert_close(h[kept], z_kept / 0.75)
    # the roots are the dropped-out activations, the sums add them up
    torch.testing.assert_close(out[:, 64:], h[:64])


def test_rows_must_match_the_tree():
    levels = tree(3, [2])
    with pytest.raises(ValueError, match='9 rows'):
        TreeLayerInput.apply(torch.randn(5, 2), child_slots(levels, [2]), [2],
                             'mean', False, 0.0)


# The model's two activation paths ###########################################

N = 60


def graph(device='cpu'):
    return ref.random_graph(N, 400, 0, hubs=1, isolated=3).to(device)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('act', ['relu', 'tanh'])
@pytest.mark.parametrize('aggr', AGGRS)
def test_graph_sage_activation_paths_match_tree_reference(device, act, aggr):
    """ReLU runs inside TreeLayerInput; any other activation runs through
    autograd before it. Both equal the explicit tree through SAGEConv."""
    ei = graph(device)
    seeds = torch.tensor([0, 4, 57, 4, 9], device=device)
    torch.manual_seed(0)
    model = FusedGraphSAGE(6, 7, 3, 3, [3, 2, 2], aggr=aggr, act=act,
                           generator=torch.Generator().manual_seed(5))
    model = model.to(device, torch.float64).train()
    x = torch.randn(N, 6, dtype=torch.float64, device=device)
    x.requires_grad_()
    out = model(x, ei, seeds)
    out.square().sum().backward()
    x_ref = x.detach().clone().requires_grad_()
    exp, convs = ra.tree_reference(model, x_ref, ei, seeds, _key(5),
                                   return_convs=True)
    exp.square().sum().backward()
    torch.testing.assert_close(out, exp)
    torch.testing.assert_close(x.grad, x_ref.grad)
    for fused, conv in zip(model.convs, convs):
        torch.testing.assert_close(fused.lin_l.weight.grad, conv.lin_l.weight.grad)
        torch.testing.assert_close(fused.lin_r.weight.grad, conv.lin_r.weight.grad)


def _key(seed):
    from pyg_fusesample.sampler.fused_neighbor_sampler import draw_rng_seeds
    return draw_rng_seeds(1, torch.Generator().manual_seed(seed))[0]


@pytest.mark.parametrize('act', ['relu', 'tanh'])
def test_graph_sage_dropout(act):
    """Dropout between layers in training (inside TreeLayerInput with ReLU,
    F.dropout otherwise): outputs change with the dropout mask, gradients
    are finite, and eval ignores it."""
    ei = graph()
    seeds = torch.arange(8)
    model = FusedGraphSAGE(6, 16, 3, 2, [4, 3], act=act, dropout=0.5,
                           generator=torch.Generator().manual_seed(1))
    x = torch.randn(N, 6)
    model.generator.manual_seed(1)
    a = model.train()(x, ei, seeds)
    model.generator.manual_seed(1)  # same tree, another dropout mask
    b = model(x, ei, seeds)
    assert not torch.equal(a, b)
    a.sum().backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in model.parameters())
    model.eval()
    torch.testing.assert_close(model(x, ei, seeds), model(x, ei, seeds))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
@pytest.mark.parametrize('aggr', ['mean', 'sum'])
def test_bf16_cuda_close_to_float64(aggr):
    levels = tree(32, [4, 3], device='cuda')
    fanouts = [4, 3]
    valid = child_slots(levels, fanouts)
    z0 = torch.randn(rows_of(levels), 64, dtype=torch.float64, device='cuda')
    grad = torch.randn(32 + 128, 128, dtype=torch.float64, device='cuda')
    outs = []
    for dtype in (torch.float64, torch.bfloat16):
        z = z0.to(dtype).clone().requires_grad_()
        out, _ = TreeLayerInput.apply(z * 1, valid, fanouts, aggr, True, 0.0)
        out.backward(grad.to(dtype))
        outs.append((out.double(), z.grad.double()))
    torch.testing.assert_close(outs[1][0], outs[0][0], rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(outs[1][1], outs[0][1], rtol=2e-2, atol=2e-2)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_bf16_cuda_max_routes_each_gradient_to_one_child():
    """bf16 rounding can tie or reorder the children, so the arg-max may
    differ from float64's; the values stay close, and every parent's
    gradient lands on exactly one of its children (sums are preserved)."""
    levels = tree(32, [4], device='cuda')
    valid = child_slots(levels, [4])
    z0 = torch.randn(rows_of(levels), 64, dtype=torch.float64, device='cuda')
    grad = torch.randn(32, 128, dtype=torch.float64, device='cuda')
    z = z0.bfloat16().requires_grad_()
    out, _ = TreeLayerInput.apply(z, valid, [4], 'max', False, 0.0)
    expected = reference(z0.bfloat16().double(), levels, [4], 'max', False)
    torch.testing.assert_close(out.double(), expected, rtol=1e-2, atol=1e-2)
    out.backward(grad.bfloat16())
    has_child = valid[0].any(dim=1)
    children_grad = z.grad[32:].double().view(32, 4, 64).sum(1)
    routed = grad[:, :64].bfloat16().double() * has_child.unsqueeze(-1)
    torch.testing.assert_close(children_grad, routed, rtol=1e-2, atol=1e-2)


def test_second_backward_is_refused():
    """With the ReLU the backward turns the saved activation into the
    gradient, so a retained graph cannot be differentiated twice."""
    levels = tree(4, [3])
    z = torch.randn(rows_of(levels), 5, requires_grad=True)
    out, _ = TreeLayerInput.apply(z * 1, child_slots(levels, [3]), [3],
                                  'mean', True, 0.0)
    out.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match='retain_graph'):
        out.sum().backward()


@pytest.mark.parametrize('relu', [True, False])
def test_gradcheck_both_outputs(relu):
    """The activation output is differentiable too (the model never uses
    it, but a gradient reaching it must be right)."""
    levels = tree(3, [2, 3], seed=4)
    valid = child_slots(levels, [2, 3])
    z = torch.randn(rows_of(levels), 3, dtype=torch.float64,
                    requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda z: TreeLayerInput.apply(z.clone(), valid, [2, 3], 'mean', relu,
                                       0.0, False), (z,))


# GatherLinear (the first layer's transform) #################################

@pytest.mark.parametrize('bias', [True, False])
def test_gather_linear_gradcheck(bias, monkeypatch):
    from pyg_fusesample.nn import gather_linear
    monkeypatch.setattr(gather_linear, 'GATHER_CHUNK_ROWS', 3)  # 3 chunks
    g = torch.Generator().manual_seed(0)
    agg = torch.randn(8, 4, dtype=torch.float64, generator=g)
    x = torch.randn(6, 4, dtype=torch.float64, generator=g)
    nodes = torch.tensor([0, 5, 5, 2, 0, 1, 3, 5])  # repeats accumulate
    w_l = torch.randn(3, 4, dtype=torch.float64, generator=g)
    w_r = torch.randn(3, 4, dtype=torch.float64, generator=g)
    b = torch.randn(3, dtype=torch.float64, generator=g) if bias else None
    inputs = [t.requires_grad_() if t is not None else None
              for t in (agg, x, w_l, w_r, b)]
    fn = lambda a, x, wl, wr, b: gather_linear.GatherLinear.apply(  # noqa
        a, x, nodes, wl, wr, b)
    assert torch.autograd.gradcheck(fn, inputs)
    expected = agg @ w_l.t() + x[nodes] @ w_r.t() + (b if bias else 0)
    torch.testing.assert_close(fn(*inputs), expected)


@pytest.mark.parametrize('device', devices())
def test_graph_sage_autocast_bf16_close_to_float32(device):
    """Under bf16 autocast the tree's activations are bf16 end to end;
    outputs and gradients stay close to the float32 step's."""
    ei = graph(device)
    seeds = torch.arange(16, device=device)
    x = torch.randn(N, 6, device=device)
    results = []
    for amp in (False, True):
        torch.manual_seed(0)
        model = FusedGraphSAGE(6, 32, 3, 2, [4, 3],
                               generator=torch.Generator().manual_seed(2))
        model = model.to(device).train()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=amp):
            out = model(x, ei, seeds)
        assert out.dtype == (torch.bfloat16 if amp else torch.float32)
        out.float().square().sum().backward()
        results.append([out.float()] + [p.grad for p in model.parameters()])
    # Compared as whole tensors: with 16 seeds a handful of ReLUs whose
    # input is within bf16 rounding of 0 flip, which moves single gradient
    # entries a lot but the tensors little.
    names = ['out'] + [n for n, _ in model.named_parameters()]
    for name, a, b in zip(names, *results):
        assert b.dtype == a.dtype
        a, b = a.detach().flatten(), b.detach().flatten()
        err = float((b - a).norm() / a.norm())
        cos = float(torch.nn.functional.cosine_similarity(a, b, dim=0))
        assert err < 0.1 and cos > 0.99, f'{name}: rel. error {err:.4f}, cos {cos:.4f}'


def test_graph_sage_training_under_torch_compile():
    """The training path's autograd Functions (an in-place ReLU marked
    dirty, a saved activation consumed by the backward) trace under
    torch.compile(backend='aot_eager') and give eager's outputs and
    gradients."""
    ei, x = graph(), torch.randn(N, 6)
    seeds = torch.arange(8)
    torch.manual_seed(0)
    model = FusedGraphSAGE(6, 16, 3, 2, [4, 3],
                           generator=torch.Generator().manual_seed(1)).train()
    results = []
    for fn in (model, torch.compile(model, backend='aot_eager')):
        model.zero_grad()
        model.generator.manual_seed(1)  # the same tree for both
        out = fn(x, ei, seeds)
        out.square().sum().backward()
        results.append([out] + [p.grad.clone() for p in model.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(b, a)
