"""fusesample::segment_slot_dot (the gradient of segment_aggregate in its
slot weights): a plain PyTorch reference, CPU == CUDA, determinism, opcheck,
edge cases and malformed layouts."""
import pytest
import torch

import pyg_fusesample  # noqa: F401  (registers the ops)
from pyg_fusesample.ops.segment import segment_aggregate
from pyg_fusesample.sparse.target_layout import target_layout

from conftest import devices
from test_segment_aggregate_op import graph

DEVICES = devices()

_ops = torch.ops.fusesample


def reference(layout, grad, x, heads, reduce):
    r"""``<grad[dst[s]], x[src[s]]>`` per head, in float64 (``/ count`` for
    ``'mean'``)."""
    dst, src = layout.dst.cpu().long(), layout.src.cpu().long()
    g = grad.cpu().double().view(grad.size(0), heads, -1)[dst]
    out = (g * x.cpu().double().view(x.size(0), heads, -1)[src]).sum(-1)
    if reduce == 'mean':
        out = out / layout.degree().cpu()[dst].clamp_min(1).unsqueeze(-1)
    return out


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('reduce', ['sum', 'mean'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize('width, heads', [(1, 1), (6, 2), (16, 1), (64, 4),
                                          (40, 8), (512, 2)])
@pytest.mark.parametrize('index_dtype', [torch.int64, torch.int32])
def test_matches_reference(device, reduce, dtype, width, heads, index_dtype):
    ei = graph(device=device).to(index_dtype)
    layout = target_layout(ei, 30, 20, 'test')
    grad = torch.randn(20, width, dtype=dtype, device=device)
    x = torch.randn(30, width, dtype=dtype, device=device)
    out = _ops.segment_slot_dot(layout.ptr, layout.src, grad, x, heads, reduce)
    assert out.shape == (layout.num_slots, heads) and out.dtype == dtype
    tol = 3e-2 if dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(out.cpu().double(),
                               reference(layout, grad, x, heads, reduce),
                               atol=tol * width ** 0.5, rtol=tol)


@pytest.mark.parametrize('device', DEVICES)
def test_is_the_gradient_of_the_slot_weights(device):
    ei = graph(num_src=12, num_dst=9, num_edges=40, device=device)
    layout = target_layout(ei, 12, 9, 'test')
    x = torch.randn(12, 8, dtype=torch.float64, device=device)
    for reduce in ('sum', 'mean'):
        value = torch.rand(layout.num_slots, 4, dtype=torch.float64,
                           device=device, requires_grad=True)
        grad = torch.randn(9, 8, dtype=torch.float64, device=device)
        segment_aggregate(layout, x, reduce, value).backward(grad)
        torch.testing.assert_close(value.grad, _ops.segment_slot_dot(
            layout.ptr, layout.src, grad, x, 4, reduce))


@pytest.mark.parametrize('device', DEVICES)
def test_deterministic(device):
    ei = graph(num_src=50, num_dst=40, num_edges=3000, device=device)
    layout = target_layout(ei, 50, 40, 'test')
    grad = torch.randn(40, 96, device=device)
    x = torch.randn(50, 96, device=device)
    runs = [_ops.segment_slot_dot(layout.ptr, layout.src, grad, x, 3, 'sum')
            for _ in range(3)]
    assert all(torch.equal(runs[0], r) for r in runs[1:])


@pytest.mark.cuda
@pytest.mark.parametrize('dtype', [torch.float32, torch.float16])
@pytest.mark.parametrize('width, heads', [(3, 1), (200, 4), (256, 1),
                                          (64, 8)])
def test_cuda_equals_cpu(dtype, width, heads):
    ei = graph(num_src=400, num_dst=300, num_edges=5000)
    cpu, gpu = (target_layout(e, 400, 300, 't') for e in (ei, ei.cuda()))
    grad = torch.randn(300, width, dtype=dtype)
    x = torch.randn(400, width, dtype=dtype)
    a = _ops.segment_slot_dot(cpu.ptr, cpu.src, grad, x, heads, 'mean')
    b = _ops.segment_slot_dot(gpu.ptr, gpu.src, grad.cuda(), x.cuda(), heads,
                              'mean')
    torch.testing.assert_close(a, b.cpu(), atol=1e-2, rtol=1e-3)


@pytest.mark.cuda
def test_cuda_unaligned_rows_equal_cpu():
    # x starting 4 bytes into its storage: no 16-byte vectors
    ei = graph(num_src=400, num_dst=300, num_edges=5000)
    cpu, gpu = (target_layout(e, 400, 300, 't') for e in (ei, ei.cuda()))
    grad = torch.randn(300, 64)
    x = torch.randn(400 * 64 + 1)[1:].view(400, 64)
    a = _ops.segment_slot_dot(cpu.ptr, cpu.src, grad, x, 4, 'sum')
    b = _ops.segment_slot_dot(gpu.ptr, gpu.src, grad.cuda(), x.cuda(), 4,
                              'sum')
    torch.testing.assert_close(a, b.cpu())


@pytest.mark.parametrize('device', DEVICES)
def test_empty(device):
    ptr = torch.zeros(4, dtype=torch.long, device=device)
    src = torch.zeros(0, dtype=torch.long, device=device)
    out = _ops.segment_slot_dot(ptr, src, torch.randn(3, 8, device=device),
                                torch.randn(5, 8, device=device), 2, 'sum')
    assert out.shape == (0, 2)
    ptr = torch.tensor([0, 2], device=device)
    src = torch.tensor([0, 1], device=device)
    out = _ops.segment_slot_dot(ptr, src, torch.randn(1, 0, device=device),
                                torch.randn(2, 0, device=device), 1, 'sum')
    assert out.tolist() == [[0.], [0.]]


def test_opcheck():
    layout = target_layout(graph(), 30, 20, 'test')
    for reduce in ('sum', 'mean'):
        torch.library.opcheck(_ops.segment_slot_dot,
                              (layout.ptr, layout.src, torch.randn(20, 8),
                               torch.randn(30, 8), 2, reduce))


@pytest.mark.parametrize('ptr, src, message', [
    ([0, 2, 1, 3], [0, 1, 2], "'ptr' gives row 1"),
    ([0, 2, 5], [0, 1, 2], "'ptr' must start at 0 and end at 3"),
    ([0, 1, 3], [0, 9, 2], "'src' holds id 9 outside \\[0, 4\\)"),
])
def test_bad_layouts_raise_on_cpu(ptr, src, message):
    rows = len(ptr) - 1
    with pytest.raises(RuntimeError, match=message):
        _ops.segment_slot_dot(torch.tensor(ptr), torch.tensor(src),
                              torch.randn(rows, 3), torch.randn(4, 3), 1, 'sum')


@pytest.mark.cuda
def test_bad_layouts_reported_on_cuda():
    word = _ops.sample_aggregate_error(torch.empty(0, device='cuda'))
    word.zero_()
    out = _ops.segment_slot_dot(torch.tensor([0, 1, 3], device='cuda'),
                                torch.tensor([0, 9, 2], device='cuda'),
                                torch.randn(2, 3, device='cuda'),
                                torch.randn(4, 3, device='cuda'), 1, 'sum')
    assert word.tolist() == [2, 9]  # a source, id 9
    assert out[1].item() == 0.
    word.zero_()
    _ops.segment_slot_dot(torch.tensor([0, 2, 9], device='cuda'),
                          torch.tensor([0, 1, 2], device='cuda'),
                          torch.randn(2, 3, device='cuda'),
                          torch.randn(4, 3, device='cuda'), 1, 'mean')
    assert word.tolist() == [3, 1]  # a pointer, row 1
    word.zero_()


@pytest.mark.parametrize('kwargs, message', [
    (dict(reduce='max'), "'reduce' must be 'sum' or 'mean'"),
    (dict(reduce='min'), "'reduce' must be"),
    (dict(x=torch.randn(4, 4).long()), "'x' must be float"),
    (dict(grad=torch.randn(2, 4).double()), "'grad' is Double but 'x' is Float"),
    (dict(grad=torch.randn(3, 4)), "'grad' must be \\[2, 4\\]"),
    (dict(heads=3), "'heads' must be >= 1 and divide"),
    (dict(heads=0), "'heads' must be >= 1"),
    (dict(src=torch.tensor([0., 1., 2.])), "'src' must be int64 or int32"),
])
def test_bad_arguments(kwargs, message):
    args = dict(ptr=torch.tensor([0, 1, 3]), src=torch.tensor([0, 1, 2]),
                grad=torch.randn(2, 4), x=torch.randn(4, 4), heads=2,
                reduce='sum')
    args.update(kwargs)
    with pytest.raises(RuntimeError, match=message):
        _ops.segment_slot_dot(**args)
