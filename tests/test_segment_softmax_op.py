"""fusesample::segment_softmax (GATConv's attention softmax over a target's
slots and its self-loop) and its backward: PyG's own softmax as the
reference, gradcheck, CPU == CUDA, determinism, opcheck, edge cases (rows
without slots, -inf scores, rows of -inf only, no self-loops) and bad
inputs."""
import pytest
import torch
from torch_geometric.utils import softmax as pyg_softmax

import pyg_fusesample  # noqa: F401  (registers the ops)
from pyg_fusesample.ops.segment_softmax import segment_softmax
from pyg_fusesample.sparse.target_layout import target_layout

from conftest import devices
from test_segment_aggregate_op import graph

DEVICES = devices()

_ops = torch.ops.fusesample


def reference(layout, score, self_score):
    r"""PyG's ``softmax`` over each target's slots and its self-loop (the
    self-loops appended as edges of their rows), in float64."""
    R, L = layout.num_dst, self_score.size(0)
    index = torch.cat([layout.dst.cpu().long(), torch.arange(L)])
    alpha = pyg_softmax(torch.cat([score, self_score]).cpu().double(), index,
                        num_nodes=R)
    return alpha[:score.size(0)], alpha[score.size(0):]


def scores(layout, heads, loops, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    score = torch.randn(layout.num_slots, heads, generator=g) * 3
    self_score = torch.randn(loops, heads, generator=g) * 3
    score[::7] = float('-inf')  # (masked slots, as GATConv's self-loops)
    return score.to(device, dtype), self_score.to(device, dtype)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64,
                                   torch.bfloat16, torch.float16])
@pytest.mark.parametrize('heads', [1, 4])
@pytest.mark.parametrize('loops', [0, 11, 20])
def test_matches_pyg_softmax(device, dtype, heads, loops):
    layout = target_layout(graph(device=device), 30, 20, 'test')
    score, self_score = scores(layout, heads, loops, dtype, device)
    alpha, alpha_self = segment_softmax(layout.ptr, score, self_score)
    want, want_self = reference(layout, score, self_score)
    assert alpha.dtype == dtype and alpha.shape == score.shape
    assert alpha_self.shape == self_score.shape
    tol = dict(atol=1e-2, rtol=1e-2) if dtype in (
        torch.bfloat16, torch.float16) else dict(atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(alpha.cpu().double(), want, **tol)
    torch.testing.assert_close(alpha_self.cpu().double(), want_self, **tol)
    assert (alpha.cpu()[::7] == 0).all()  # (-inf weighs nothing)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('loops', [0, 9])
def test_gradcheck(device, loops):
    layout = target_layout(graph(num_edges=40, device=device), 30, 20, 'test')
    score, self_score = scores(layout, 3, loops, torch.float64, device)
    score[::7] = 0.  # (finite: gradcheck perturbs every entry)
    score.requires_grad_()
    self_score.requires_grad_()
    assert torch.autograd.gradcheck(
        lambda s, t: segment_softmax(layout.ptr, s, t), (score, self_score))


@pytest.mark.parametrize('device', DEVICES)
def test_gradient_equals_pyg_softmax_gradient(device):
    layout = target_layout(graph(device=device), 30, 20, 'test')
    score, self_score = scores(layout, 2, 15, torch.float32, device)
    w = torch.randn(score.size(0) + 15, 2, device=device)
    mine = [t.clone().requires_grad_() for t in (score, self_score)]
    a, b = segment_softmax(layout.ptr, *mine)
    (torch.cat([a, b]) * w).sum().backward()
    theirs = [t.clone().requires_grad_() for t in (score, self_score)]
    index = torch.cat([layout.dst.long(), torch.arange(15, device=device)])
    (pyg_softmax(torch.cat(theirs), index, num_nodes=20) * w).sum().backward()
    for m, t in zip(mine, theirs):
        torch.testing.assert_close(m.grad, t.grad, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize('device', DEVICES)
def test_rows_without_slots_and_rows_of_minus_inf(device):
    ptr = torch.tensor([0, 0, 2, 2, 4], device=device)
    score = torch.tensor([[float('-inf')], [float('-inf')], [1.], [2.]],
                         device=device)
    self_score = torch.tensor([[5.], [float('-inf')], [0.]], device=device)
    alpha, alpha_self = segment_softmax(ptr, score, self_score)
    # row 0: its self-loop only; row 1: all -inf (zeros); row 2: the
    # self-loop alone again; row 3: two slots, no self-loop
    assert alpha_self.tolist() == [[1.], [0.], [1.]]
    assert alpha[:2].tolist() == [[0.], [0.]]
    e = torch.tensor([1., 2.]).exp()
    torch.testing.assert_close(alpha[2:].cpu().view(-1), e / e.sum())


@pytest.mark.parametrize('device', DEVICES)
def test_empty(device):
    ptr = torch.zeros(4, dtype=torch.long, device=device)
    alpha, alpha_self = segment_softmax(ptr, torch.empty(0, 2, device=device),
                                        torch.empty(0, 2, device=device))
    assert alpha.shape == (0, 2) and alpha_self.shape == (0, 2)
    ptr = torch.zeros(1, dtype=torch.long, device=device)
    alpha, _ = segment_softmax(ptr, torch.empty(0, 3, device=device),
                               torch.empty(0, 3, device=device))
    assert alpha.shape == (0, 3)


@pytest.mark.parametrize('device', DEVICES)
def test_deterministic(device):
    layout = target_layout(graph(num_edges=3000, device=device), 30, 20, 't')
    score, self_score = scores(layout, 4, 20, torch.float32, device)
    g = torch.randn_like(score)
    runs = [_ops.segment_softmax_backward(
        layout.ptr, *segment_softmax(layout.ptr, score, self_score), g,
        torch.ones_like(self_score)) for _ in range(3)]
    for r in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(r, runs[0]))


@pytest.mark.cuda
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
def test_cuda_equals_cpu(dtype):
    ei = graph(num_src=400, num_dst=300, num_edges=5000)
    cpu, gpu = (target_layout(e, 400, 300, 't') for e in (ei, ei.cuda()))
    score, self_score = scores(cpu, 4, 250, dtype, 'cpu')
    a = segment_softmax(cpu.ptr, score, self_score)
    b = segment_softmax(gpu.ptr, score.cuda(), self_score.cuda())
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y.cpu(), atol=1e-6, rtol=1e-5)
    g, g_self = torch.randn_like(score), torch.randn_like(self_score)
    a = _ops.segment_softmax_backward(cpu.ptr, *a, g, g_self)
    b = _ops.segment_softmax_backward(gpu.ptr, *b, g.cuda(), g_self.cuda())
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y.cpu(), atol=1e-6, rtol=1e-5)


def test_opcheck():
    layout = target_layout(graph(), 30, 20, 'test')
    score, self_score = scores(layout, 2, 10, torch.float32, 'cpu')
    torch.library.opcheck(_ops.segment_softmax,
                          (layout.ptr, score, self_score))
    alpha, alpha_self = _ops.segment_softmax(layout.ptr, score, self_score)
    torch.library.opcheck(_ops.segment_softmax_backward,
                          (layout.ptr, alpha, alpha_self,
                           torch.randn_like(alpha),
                           torch.randn_like(alpha_self)))


@pytest.mark.parametrize('ptr, message', [
    ([0, 2, 1, 3], "'ptr' gives row 1"),
    ([0, 2, 5], "'ptr' must start at 0 and end at 3"),
])
def test_bad_layouts_raise_on_cpu(ptr, message):
    with pytest.raises(RuntimeError, match=message):
        _ops.segment_softmax(torch.tensor(ptr), torch.randn(3, 2),
                             torch.randn(1, 2))


@pytest.mark.cuda
def test_bad_layouts_reported_on_cuda():
    word = _ops.sample_aggregate_error(torch.empty(0, device='cuda'))
    word.zero_()
    _ops.segment_softmax(torch.tensor([0, 2, 9], device='cuda'),
                         torch.randn(3, 1, device='cuda'),
                         torch.randn(1, 1, device='cuda'))
    assert word.tolist() == [3, 1]  # a pointer, row 1
    word.zero_()


@pytest.mark.parametrize('args, message', [
    ((torch.tensor([0, 3]).int(), torch.randn(3, 2), torch.randn(1, 2)),
     "'ptr' must be"),
    ((torch.tensor([0, 3]), torch.randn(3, 2).long(), torch.randn(1, 2)),
     "'score' must be float"),
    ((torch.tensor([0, 3]), torch.randn(3), torch.randn(1, 2)),
     "'score' must be \\[E, heads\\]"),
    ((torch.tensor([0, 3]), torch.randn(3, 2), torch.randn(2, 2)),
     "'self_score' must be \\[L, 2\\] with L <= 1"),
    ((torch.tensor([0, 3]), torch.randn(3, 2), torch.randn(1, 3)),
     "'self_score' must be \\[L, 2\\]"),
    ((torch.tensor([0, 3]), torch.randn(3, 2), torch.randn(1, 2).double()),
     "'self_score' is Double but 'score' is Float"),
])
def test_bad_inputs(args, message):
    with pytest.raises(RuntimeError, match=message):
        _ops.segment_softmax(*args)


def test_bad_backward_inputs():
    ptr, a, s = torch.tensor([0, 3]), torch.rand(3, 2), torch.rand(1, 2)
    with pytest.raises(RuntimeError, match="'grad' must be Float \\[3, 2\\]"):
        _ops.segment_softmax_backward(ptr, a, s, torch.rand(2, 2), s)
    with pytest.raises(RuntimeError, match="'grad_self' must be Float"):
        _ops.segment_softmax_backward(ptr, a, s, a, s.double())
