"""The native FusedGraphSAGE step as the two opaque ops torch.compile calls
(fusesample::sage_tree_step and its backward, over sage_tree_begin /
sage_tree_finish): same values as the eager op, one compiled graph that
holds them (not the ~50 kernels they issue), opcheck, and the handle's
errors."""
import pytest
import torch
import torch.nn.functional as F

import pyg_fusesample  # noqa: F401
from pyg_fusesample.nn import FusedGraphSAGE
from pyg_fusesample.nn.graph_input import as_csc
from pyg_fusesample.nn.sage_tree_compiled import sage_tree_step
from pyg_fusesample.ops import sage_tree

import reference as ref
from conftest import devices

N, IN, HID, OUT = 60, 6, 8, 4


def _graph(device='cpu'):
    """A random graph on the CPU. On CUDA a ring where every node has exactly
    3 in-neighbours: a step's first call there runs eagerly, its second
    records the step's CUDA graph (the warm-up advances the generator) and
    later ones replay, so draws differ between calls; with fan-outs >= 3 and
    no dropout the tree is the same whatever the draws."""
    if device == 'cuda':
        dst = torch.arange(N).repeat_interleave(3)
        src = (dst + torch.arange(1, 4).repeat(N)) % N
        ei = torch.stack([src, dst])
    else:
        ei = ref.random_graph(N, 400, 3, hubs=1, isolated=3)
    x = torch.randn(N, IN, generator=torch.Generator().manual_seed(1))
    return ei.to(device), x.to(device)


def _dropout(device):
    return 0.0 if device == 'cuda' else 0.25  # (see _graph)


def _params(fanouts, device='cpu', dtype=torch.float32):
    g = torch.Generator().manual_seed(2)
    sizes = [IN] + [HID] * (len(fanouts) - 1) + [OUT]
    params = []
    for c, h in zip(sizes[:-1], sizes[1:]):
        params += [torch.randn(h, c, generator=g), torch.randn(h, c, generator=g),
                   torch.randn(h, generator=g)]
    return [p.to(device, dtype).requires_grad_() for p in params]


def _out_and_grads(x, graph, seeds, params, fanouts, aggr, key,
                   eager=False):
    """``[out] + the parameters' gradients`` (``None`` for a frozen one) of
    ``out.square().sum()`` with the RNG at ``key``: through the compiled
    path's op on ``graph`` (``[edge_index]`` or ``[colptr, row]``) or, with
    ``eager``, the eager op on ``graph = [colptr, row]``."""
    for p in params:
        p.grad = None
    torch.manual_seed(key)  # both draw their keys from the generator
    dropout = _dropout(x.device.type)
    if eager:
        out = sage_tree(x, *graph, seeds, params, fanouts, x.dtype, aggr,
                        dropout=dropout)
    else:
        need = [False] + [p.requires_grad for p in params]
        out = sage_tree_step(x, graph, seeds, params, fanouts, x.dtype, aggr,
                             False, dropout, True, need, True)[0]
    out.square().sum().backward()
    return [out.detach()] + [p.grad for p in params]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanouts', [[3, 3], [4, -1], [3, 3, 3]], ids=str)
@pytest.mark.parametrize('aggr', ['mean', 'max'])
def test_step_op_equals_sage_tree(device, fanouts, aggr):
    ei, x = _graph(device)
    seeds = torch.tensor([0, 7, 7, 59, 31], device=device)
    params = _params(fanouts, device)
    csc = list(as_csc(ei, N, N))
    results = [_out_and_grads(x, graph, seeds, params, fanouts, aggr, 5,
                              eager)
               for graph, eager in (([ei], False), (csc, False), (csc, True))]
    for got in results[:2]:
        for a, b in zip(got, results[2]):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize('device', devices())
def test_step_op_gradients_of_some_parameters_over_steps(device):
    """A frozen parameter gets no gradient and the others theirs on every
    step (on CUDA the third call on replays the recording, whose gradients
    come out of one buffer)."""
    ei, x = _graph(device)
    seeds = torch.tensor([0, 7, 59, 31], device=device)
    params = _params([3, 3], device)
    params[1].requires_grad_(False)
    csc = list(as_csc(ei, N, N))
    for step in range(4):
        got = [_out_and_grads(x, [ei], seeds, params, [3, 3], 'mean', step),
               _out_and_grads(x, csc, seeds, params, [3, 3], 'mean', step,
                              eager=True)]
        assert got[0][2] is None and got[1][2] is None
        for a, b in zip(*got):
            if a is not None:
                torch.testing.assert_close(a, b)


def test_step_op_gradient_of_x_float64():
    ei, x = _graph()
    x = x.double().requires_grad_()
    seeds = torch.tensor([0, 7, 31])
    params = [p.detach().double().requires_grad_() for p in _params([3, 2])]
    need = [True] + [True] * len(params)

    def fn(x, *params):
        torch.manual_seed(5)
        return sage_tree_step(x, [ei], seeds, list(params), [3, 2],
                              torch.float64, 'mean', False, 0.0, True, need,
                              False)[0]

    assert torch.autograd.gradcheck(fn, (x, *params))


def test_step_op_opcheck():
    ei, x = _graph()
    x = x.double()
    seeds = torch.tensor([0, 7, 31])
    params = [p.detach().double().requires_grad_() for p in _params([3, 2])]
    need = [False] + [True] * len(params)
    torch.library.opcheck(
        sage_tree_step,
        (x, [ei], seeds, params, [3, 2], torch.float64, 'mean', False, 0.0,
         True, need, False),
        test_utils=('test_schema', 'test_autograd_registration',
                    'test_faketensor'))


def test_handle_errors():
    ei, x = _graph()
    colptr, row = as_csc(ei, N, N)
    params = _params([3, 2])
    need = [False] + [True] * len(params)
    with torch.no_grad():
        out, handle, _ = torch.ops.fusesample.sage_tree_begin(
            x, colptr, row, torch.tensor([1, 2]), params, [3, 2], x.dtype,
            'mean', False, -1, 0.0, True, need, True, True)
    grads = torch.ops.fusesample.sage_tree_finish(torch.ones_like(out),
                                                  handle, need)
    assert len(grads) == len(params)
    with pytest.raises(RuntimeError, match='inplace_backward=False'):
        torch.ops.fusesample.sage_tree_finish(torch.ones_like(out), handle,
                                              need)
    with pytest.raises(RuntimeError, match='holds no live step'):
        torch.ops.fusesample.sage_tree_finish(torch.ones_like(out),
                                              torch.tensor([12345]), need)
    with pytest.raises(RuntimeError, match="'handle' must be"):
        torch.ops.fusesample.sage_tree_finish(torch.ones_like(out),
                                              torch.zeros(2), need)
    with pytest.raises(RuntimeError, match="'need' must have"):
        torch.ops.fusesample.sage_tree_begin(
            x, colptr, row, torch.tensor([1, 2]), params, [3, 2], x.dtype,
            'mean', False, -1, 0.0, True, need[1:], True, True)


def _train_step(model, x, ei, seeds, y, fn):
    torch.manual_seed(3)
    model.zero_grad()
    out = fn(x, ei, seeds)
    F.cross_entropy(out, y[seeds]).backward()
    return [out.detach()] + [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize('device', devices())
def test_compiled_model_calls_the_step_op(device):
    """torch.compile(FusedGraphSAGE, fullgraph=True): one graph holding the
    step op, nothing of the Python path; the same step as eager."""
    torch._dynamo.reset()
    ei, x = _graph(device)
    y = torch.randint(0, OUT, (N, ), device=device)
    seeds = torch.arange(0, N, 3, device=device)
    model = FusedGraphSAGE(IN, 16, OUT, 2, [4, 3],
                           dropout=_dropout(device)).to(device)
    explained = torch._dynamo.explain(model)(x, ei, seeds)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    targets = {str(n.target) for g in explained.graphs for n in g.graph.nodes
               if n.op == 'call_function'}
    assert any('sage_tree_step' in t for t in targets), targets
    assert not any('sample_aggregate' in t for t in targets), targets
    eager = _train_step(model, x, ei, seeds, y, model)
    compiled = torch.compile(model, fullgraph=True)
    for _ in range(3):  # (on CUDA the third step replays the recording)
        got = _train_step(model, x, ei, seeds, y, compiled)
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b)


def test_compiled_model_with_a_generator_traces_the_python_path():
    torch._dynamo.reset()
    ei, x = _graph()
    model = FusedGraphSAGE(IN, 16, OUT, 2, [4, 3],
                           generator=torch.Generator().manual_seed(0))
    explained = torch._dynamo.explain(model)(x, ei, torch.arange(5))
    targets = {str(n.target) for g in explained.graphs for n in g.graph.nodes
               if n.op == 'call_function'}
    assert not any('sage_tree_step' in t for t in targets)
    assert any('sample_aggregate_ei' in t for t in targets)
