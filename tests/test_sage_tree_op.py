"""fusesample::sage_tree (the eager FusedGraphSAGE step in C++) against the
model's Python path (GatherLinear + TreeLayerInput over torch ops, what
torch.compile traces): same outputs and gradients, float64 gradcheck,
opcheck, autocast, and the errors."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import pyg_fusesample  # noqa: F401
from pyg_fusesample.nn import FusedGraphSAGE
from pyg_fusesample.nn.graph_input import as_csc
from pyg_fusesample.ops import sage_tree

import reference as ref
from conftest import devices

N, IN, HID, OUT = 50, 6, 7, 4
SEEDS = [0, 5, 48, 5, 12, 33, 1]  # 0: hub, 48: isolated, 5 twice
FANOUTS = [[3], [4, 2], [3, 2, 2], [3, -1], [2, 2, -1], [3, 0], [0, 3]]


def graph(device='cpu', seed=0):
    return ref.random_graph(N, 300, seed, hubs=1, isolated=3).to(device)


def features(device='cpu', dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, IN, generator=g).to(device, dtype)


def model_for(fanouts, aggr='mean', dropout=0.0, replace=False,
              device='cpu', dtype=torch.float32):
    torch.manual_seed(0)
    model = FusedGraphSAGE(IN, HID, OUT, len(fanouts), fanouts, aggr=aggr,
                           dropout=dropout, replace=replace,
                           generator=torch.Generator().manual_seed(5))
    return model.to(device, dtype).train()


def step(model, x, ei, seeds, native, autocast=False):
    """Output and every gradient (x's too if it requires grad) of one step
    on the native op or the Python path, from the same RNG state."""
    model.zero_grad(set_to_none=True)
    if x.grad is not None:
        x.grad = None
    model.generator.manual_seed(5)
    torch.manual_seed(11)  # dropout
    dtype = torch.bfloat16 if autocast else x.dtype
    with torch.autocast(x.device.type, dtype=torch.bfloat16,
                        enabled=autocast):
        if native:
            out = model(x, ei, seeds)
        else:
            out = model._traced_forward(x, ei, seeds, dtype)
        y = torch.arange(seeds.numel(), device=x.device) % OUT
        F.cross_entropy(out.float(), y).backward()
    grads = [p.grad for p in model.parameters()]
    if x.requires_grad:
        grads.append(x.grad)
    return out.detach(), grads


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanouts', FANOUTS, ids=str)
@pytest.mark.parametrize('aggr', ['mean', 'sum', 'max'])
def test_native_step_matches_python_path(device, fanouts, aggr):
    ei, x = graph(device), features(device).requires_grad_()
    model = model_for(fanouts, aggr, dropout=0.3,
                      replace=fanouts == [3, 2, 2], device=device)
    seeds = torch.tensor(SEEDS, device=device)
    out, grads = step(model, x, ei, seeds, native=True)
    exp_out, exp_grads = step(model, x, ei, seeds, native=False)
    torch.testing.assert_close(out, exp_out)
    assert len(grads) == len(exp_grads)
    for g, e in zip(grads, exp_grads):
        torch.testing.assert_close(g, e)


@pytest.mark.cuda
@pytest.mark.parametrize('aggr', ['mean', 'max'])
@pytest.mark.parametrize('fanouts', [[4, 2], [3, 2, 2]], ids=str)
def test_native_step_autocast_bf16(fanouts, aggr):
    ei, x = graph('cuda'), features('cuda')
    model = model_for(fanouts, aggr, device='cuda')
    seeds = torch.tensor(SEEDS, device='cuda')
    out, grads = step(model, x, ei, seeds, native=True, autocast=True)
    exp_out, exp_grads = step(model, x, ei, seeds, native=False,
                              autocast=True)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, exp_out, rtol=2e-2, atol=2e-2)
    for g, e in zip(grads, exp_grads):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g, e, rtol=2e-2, atol=2e-2)


def _op_args(device, fanouts, aggr, bias=True, dtype=torch.float64):
    ei = graph(device)
    colptr, row = as_csc(ei, N, N)
    x = features(device, dtype).requires_grad_()
    model = model_for(fanouts, aggr, device=device, dtype=dtype)
    if not bias:
        params = [p for n, p in model.named_parameters() if 'bias' not in n]
    else:
        params = model._params()
    seeds = torch.tensor(SEEDS, device=device)
    return x, colptr, row, seeds, params


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', ['mean', 'sum', 'max'])
@pytest.mark.parametrize('bias', [True, False])
def test_gradcheck(device, aggr, bias):
    x, colptr, row, seeds, params = _op_args(device, [3, 2, 2], aggr, bias)

    def fn(x, *params):
        return sage_tree(x, colptr, row, seeds, params, [3, 2, 2],
                         torch.float64, aggr, rng_seed=17, bias=bias,
                         inplace_backward=False)

    assert torch.autograd.gradcheck(fn, (x, *params))


@pytest.mark.parametrize('device', devices())
def test_opcheck(device):
    x, colptr, row, seeds, params = _op_args(device, [3, 2], 'mean')
    torch.library.opcheck(
        torch.ops.fusesample.sage_tree.default,
        (x, colptr, row, seeds, params, [3, 2], torch.float64),
        dict(rng_seed=3, inplace_backward=False),
        test_utils=('test_schema', 'test_autograd_registration',
                    'test_faketensor'))


def test_inference_mode_runs_forward_only():
    x, colptr, row, seeds, params = _op_args('cpu', [3, 2], 'mean')
    expected = sage_tree(x, colptr, row, seeds, params, [3, 2],
                         torch.float64, rng_seed=4)
    with torch.inference_mode():
        out = sage_tree(x, colptr, row, seeds, params, [3, 2],
                        torch.float64, rng_seed=4)
    torch.testing.assert_close(out, expected.detach())


def test_second_backward_and_inplace_change_raise():
    x, colptr, row, seeds, params = _op_args('cpu', [3, 2], 'mean')

    def forward(**kw):
        return sage_tree(x, colptr, row, seeds, params, [3, 2],
                         torch.float64, rng_seed=4, **kw).sum()

    loss = forward()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match='inplace_backward=False'):
        loss.backward()
    for p in params:
        p.grad = None
    loss = forward(inplace_backward=False)
    loss.backward(retain_graph=True)
    first = params[0].grad.clone()
    loss.backward()  # allowed: the activations were kept
    torch.testing.assert_close(params[0].grad, 2 * first)
    loss = forward()
    with torch.no_grad():
        params[0].add_(1.0)  # e.g. optimizer.step() before backward()
    with pytest.raises(RuntimeError, match='modified in place'):
        loss.backward()


@pytest.mark.parametrize('kwargs, match', [
    (dict(num_neighbors=[3, 2, 2]), 'expected 9 parameters'),
    (dict(num_neighbors=[-1, 2]), 'only the last may be -1'),
    (dict(dropout=1.0), "'dropout' must be in"),
    (dict(dtype=torch.long), "'dtype' must be floating"),
    (dict(aggr='min'), "'reduce' must be"),
    (dict(seeds=torch.tensor([1.0])), "'seeds' must be"),
    (dict(params='transposed'), 'layer 0 expects W_l and W_r'),
])
def test_bad_inputs(kwargs, match):
    x, colptr, row, seeds, params = _op_args('cpu', [3, 2], 'mean')
    args = dict(x=x, colptr=colptr, row=row, seeds=seeds, params=params,
                num_neighbors=[3, 2], dtype=torch.float64)
    if kwargs.get('params') == 'transposed':
        kwargs = dict(params=[params[0].t()] + params[1:])
    args.update(kwargs)
    with pytest.raises(RuntimeError, match=match):
        sage_tree(**args)


def test_non_relu_act_warns_and_takes_the_python_path():
    ei, x = graph(), features()
    model = FusedGraphSAGE(IN, HID, OUT, 2, [3, 2], act='tanh').train()
    seeds = torch.tensor(SEEDS)
    with pytest.warns(UserWarning, match='not ReLU'):
        model(x, ei, seeds)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        model(x, ei, seeds)  # once per model


@pytest.mark.parametrize('device', devices())
def test_traceable_by_torch_compile(device):
    """torch.compile(fullgraph=True) traces through the op's autograd (its
    ATen calls and sample_aggregate; no replay while tracing on CUDA): the
    compiled step equals the eager one."""
    torch._dynamo.reset()
    x, colptr, row, seeds, params = _op_args(device, [3, 2], 'mean',
                                             dtype=torch.float32)
    x = x.detach()

    def step(fn):
        for p in params:
            p.grad = None
        torch.manual_seed(7)  # the op draws its keys from the generator
        out = fn(x, colptr, row, seeds, params)
        out.square().sum().backward()
        return [out.detach()] + [p.grad.clone() for p in params]

    def fwd(x, colptr, row, seeds, params):
        return sage_tree(x, colptr, row, seeds, params, [3, 2], x.dtype)

    eager = step(fwd)
    compiled = step(torch.compile(fwd, fullgraph=True))
    for a, b in zip(compiled, eager):
        torch.testing.assert_close(a, b)
