"""fusesample::spmm / sddmm / csr_softmax(_backward) and their Python API
(pyg_fusesample.ops.spmm): dense references, gradients, opcheck, bad inputs,
and the CSRGraph they run on.

CPU results are compared against dense PyTorch references (float64); CUDA
results (every variant: 'warp', 'subwarp', 'hub') against the CPU op on the
same inputs.
"""
import math

import pytest
import torch

import pyg_fusesample  # noqa: F401  (registers the ops)
from pyg_fusesample.ops.spmm import (csr_attention, csr_softmax, sddmm, spmm,
                                     spmm_cusparse)
from pyg_fusesample.sparse import CSRGraph

from conftest import devices

ops = torch.ops.fusesample

FS = [1, 3, 16, 33, 64, 130]
LAYOUTS = ['contiguous', 'misaligned', 'strided', 'transposed']
HALF = (torch.float16, torch.bfloat16)
CPU_DTYPES = [torch.float32, torch.float64]
CUDA_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
# (variant, hub_threshold) on CUDA; 'hub' with 3 makes some rows hubs, with 0
# every non-empty row.
CUDA_VARIANTS = [('warp', -1), ('subwarp', -1), ('hub', 3), ('hub', 0),
                 ('hub-subwarp', 3), ('hub-subwarp', 0)]
DTYPE_NAME = {torch.float32: 'f32', torch.float64: 'f64', torch.float16: 'f16',
              torch.bfloat16: 'bf16'}


def variant_params(cpu_dtypes=CPU_DTYPES, cuda_dtypes=CUDA_DTYPES):
    """(device, variant, hub_threshold, dtype): the CPU kernel once per dtype
    (it ignores the variant), CUDA for every variant and dtype."""
    out = [pytest.param('cpu', 'warp', -1, dt, id=f'cpu-{DTYPE_NAME[dt]}')
           for dt in cpu_dtypes]
    for variant, thr in CUDA_VARIANTS:
        out += [pytest.param('cuda', variant, thr, dt, marks=pytest.mark.cuda,
                             id=f'cuda-{variant}{thr}-{DTYPE_NAME[dt]}')
                for dt in cuda_dtypes]
    return out


def dtype_params(cpu_dtypes=CPU_DTYPES, cuda_dtypes=CUDA_DTYPES):
    out = [pytest.param('cpu', dt, id=f'cpu-{DTYPE_NAME[dt]}')
           for dt in cpu_dtypes]
    out += [pytest.param('cuda', dt, marks=pytest.mark.cuda,
                         id=f'cuda-{DTYPE_NAME[dt]}') for dt in cuda_dtypes]
    return out


def tol(dtype, graph=None):
    """Tolerances per dtype; with a graph, float32/64's atol grows with the
    square root of its largest row (summation order differs across kernels:
    a 5000-term float32 row can differ by a few 1e-4 after cancellation)."""
    t = {torch.float64: dict(rtol=1e-9, atol=1e-9),
         torch.float32: dict(rtol=1e-4, atol=1e-4),
         torch.float16: dict(rtol=5e-3, atol=5e-3),
         torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2)}[dtype]
    if graph is not None and dtype not in HALF and graph.num_rows > 0:
        scale = max(1.0, math.sqrt(int(graph.degree().max())) / 4)
        t = dict(t, atol=t['atol'] * scale)
    return t


# Graphs ######################################################################

def make_graph(row, col, num_rows, num_cols, value=None,
               col_dtype=torch.long):
    """A CSRGraph from COO (rows aggregate), rows sorted stably: columns stay
    in input order inside a row (unsorted, duplicates kept)."""
    perm = torch.argsort(row, stable=True)
    rowptr = torch.zeros(num_rows + 1, dtype=torch.long)
    rowptr[1:] = torch.bincount(row, minlength=num_rows).cumsum(0)
    return CSRGraph(rowptr, col[perm].to(col_dtype),
                    value[perm] if value is not None else None, num_cols)


def coo(name, seed=0):
    """(row, col, num_rows, num_cols) of the named test graph."""
    g = torch.Generator().manual_seed(seed)
    if name == 'random':  # empty rows, duplicate edges, rectangular
        R, N = 60, 45
        active = torch.tensor([r for r in range(50) if r % 7 != 3])
        row = active[torch.randint(0, active.numel(), (400,), generator=g)]
        col = torch.randint(0, N, (400,), generator=g)
        row, col = torch.cat([row, row[:20]]), torch.cat([col, col[:20]])
        return row, col, R, N
    if name == 'huge_row':  # one row with 5000 non-zeros
        R, N = 20, 5100
        hub_col = torch.randperm(N, generator=g)[:5000]
        others = torch.tensor([r for r in range(R) if r not in (5, 11)])
        row = others[torch.randint(0, others.numel(), (100,), generator=g)]
        col = torch.randint(0, N, (100,), generator=g)
        return (torch.cat([row, torch.full((5000,), 5)]),
                torch.cat([col, hub_col]), R, N)
    if name == 'no_nnz':
        return torch.zeros(0, dtype=torch.long), torch.zeros(
            0, dtype=torch.long), 7, 9
    if name == 'empty':  # zero rows
        return torch.zeros(0, dtype=torch.long), torch.zeros(
            0, dtype=torch.long), 0, 6
    raise KeyError(name)


GRAPHS = ['random', 'huge_row', 'no_nnz', 'empty']


def unique_graph(seed=0, R=40, N=30, nnz=250, col_dtype=torch.long):
    """No duplicate edges, some empty rows, rectangular."""
    g = torch.Generator().manual_seed(seed)
    row = torch.randint(0, R - 5, (nnz,), generator=g)
    col = torch.randint(0, N, (nnz,), generator=g)
    key = torch.unique(row * N + col)
    key = key[torch.randperm(key.numel(), generator=g)]
    return make_graph(key // N, key % N, R, N, col_dtype=col_dtype)


def small_graph(seed=0, col_dtype=torch.long):
    """7 x 5, duplicates, an empty row: for gradcheck."""
    row = torch.tensor([0, 0, 0, 1, 2, 2, 2, 4, 4, 5, 6, 6, 6, 6])
    col = torch.tensor([1, 3, 1, 0, 4, 2, 0, 3, 3, 1, 0, 1, 2, 4])
    return make_graph(row, col, 7, 5, col_dtype=col_dtype)


def to_device(graph, device):
    value = graph.value.to(device) if graph.value is not None else None
    return CSRGraph(graph.rowptr.to(device), graph.col.to(device), value,
                    graph.num_cols)


def rows_of(graph):
    return torch.repeat_interleave(torch.arange(graph.num_rows),
                                   graph.degree().cpu())


def as_2d(v):
    """[E] -> [E, 1]; [E, H] unchanged."""
    return v.unsqueeze(-1) if v.dim() == 1 else v


def dense(graph, value=None):
    """[H, R, N] float64 dense matrix (duplicates summed)."""
    value = graph.value if value is None else value
    E = graph.nnz
    if value is None:
        value = torch.ones(E, dtype=torch.float64)
    value = as_2d(value.detach().cpu().double())
    H = value.size(1)
    A = torch.zeros(H, graph.num_rows, graph.num_cols, dtype=torch.float64)
    row, col = rows_of(graph), graph.col.cpu().long()
    for h in range(H):
        A[h].index_put_((row, col), value[:, h], accumulate=True)
    return A


def ref_spmm(graph, x, value=None, reduce='sum', heads=None):
    A = dense(graph, value)
    H = A.size(0)
    N, F = x.shape
    xs = x.detach().cpu().double().reshape(N, H, F // H).transpose(0, 1)
    out = (A @ xs).transpose(0, 1).reshape(graph.num_rows, F)
    if reduce == 'mean':
        out = out / graph.degree().cpu().clamp(min=1).unsqueeze(-1).double()
    return out


def with_layout(x, kind):
    """x with the same values in a given storage layout."""
    if kind == 'contiguous':
        return x.contiguous()
    if kind == 'misaligned':  # contiguous, data pointer off by one element
        flat = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
        out = flat[1:].view(x.shape)
        out.copy_(x)
        assert out.numel() == 0 or out.data_ptr() % 16 != 0
        return out
    if kind == 'strided':  # x = big[:, 1:]
        big = torch.zeros(x.size(0), x.size(1) + 1, dtype=x.dtype,
                          device=x.device)
        big[:, 1:] = x
        return big[:, 1:]
    if kind == 'transposed':
        return x.t().contiguous().t()
    raise KeyError(kind)


def edge_values(E, heads, dtype, g):
    if heads is None:
        return None
    shape = (E,) if heads == 1 else (E, heads)
    return torch.randn(shape, generator=g).to(dtype)


# 1. spmm vs the dense reference ##############################################

@pytest.mark.parametrize('device,variant,hub_threshold,dtype',
                         variant_params())
@pytest.mark.parametrize('graph_name', GRAPHS)
@pytest.mark.parametrize('reduce', ['sum', 'mean'])
def test_spmm_matches_reference(device, variant, hub_threshold, dtype,
                                graph_name, reduce):
    g = torch.Generator().manual_seed(1)
    row, col, R, N = coo(graph_name)
    for col_dtype in (torch.long, torch.int):
        graph = make_graph(row, col, R, N, col_dtype=col_dtype)
        graph_d = to_device(graph, device)
        for F in FS:
            x = torch.randn(N, F, generator=g).to(dtype)
            for heads in (None, 1, 2, 4):
                if heads is not None and F % heads:
                    continue
                value = edge_values(graph.nnz, heads, dtype, g)
                value_d = value.to(device) if value is not None else None
                if device == 'cpu':
                    expected = ref_spmm(graph, x, value, reduce).to(dtype)
                else:
                    expected = spmm(graph, x, reduce, value=value)
                for layout in LAYOUTS:
                    xd = with_layout(x.to(device), layout)
                    out = spmm(graph_d, xd, reduce, variant, hub_threshold,
                               value=value_d)
                    assert out.shape == (R, F)
                    assert out.dtype == dtype
                    assert out.device.type == device
                    torch.testing.assert_close(
                        out.cpu(), expected, **tol(dtype, graph),
                        msg=lambda m: f'{graph_name} col={col_dtype} F={F} '
                        f'heads={heads} layout={layout}: {m}')


@pytest.mark.parametrize('device', devices())
def test_spmm_graph_value_and_zero_rows(device):
    """graph.value is used when no value is given; empty rows give 0 (also
    for 'mean'); 'add' is 'sum'."""
    row, col, R, N = coo('random')
    value = torch.rand(row.numel())
    graph = to_device(make_graph(row, col, R, N, value), device)
    x = torch.randn(N, 8, device=device)
    out = spmm(graph, x)
    torch.testing.assert_close(out.cpu(), ref_spmm(graph, x).float(),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(spmm(graph, x, 'add'), out)
    empty_rows = (graph.degree() == 0).nonzero().view(-1)
    assert empty_rows.numel() > 0
    for reduce in ('sum', 'mean'):
        out = spmm(graph, x, reduce)
        assert torch.equal(out[empty_rows].cpu(),
                           torch.zeros(len(empty_rows), 8))


def test_spmm_cpu_ignores_variant():
    row, col, R, N = coo('huge_row')
    graph = make_graph(row, col, R, N, torch.randn(row.numel()))
    x = torch.randn(N, 33)
    base = spmm(graph, x, 'mean')
    for variant, thr in [('subwarp', -1), ('hub', 3), ('hub', 0),
                         ('hub-subwarp', 3), ('cpu', -1)]:
        assert torch.equal(spmm(graph, x, 'mean', variant, thr), base)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_spmm_raw_op_hub_chunks_cuda():
    """The raw op with explicit hub chunks (CSRGraph.hub_chunks: the rows
    above the threshold cut into runs of non-zeros, several chunks per row
    when the chunk is small) equals the CPU op."""
    row, col, R, N = coo('huge_row')
    graph = make_graph(row, col, R, N, torch.randn(row.numel()))
    gd = to_device(graph, 'cuda')
    for F, reduce in ((64, 'sum'), (33, 'mean')):
        x = torch.randn(N, F)
        expected = ops.spmm(graph.rowptr, graph.col, graph.value, x, reduce)
        for thr, chunk in ((0, 2048), (3, 2048), (3, 7), (3, 1), (100, 500),
                           (10**6, 2048)):
            out = ops.spmm(gd.rowptr, gd.col, gd.value, x.cuda(), reduce,
                           'hub', thr, gd.hub_chunks(thr, chunk))
            torch.testing.assert_close(out.cpu(), expected,
                                       **tol(torch.float32, graph),
                                       msg=lambda m: f'{thr}/{chunk}: {m}')


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
@pytest.mark.parametrize('variant', ['hub', 'hub-subwarp'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
def test_spmm_raw_op_light_rows_cuda(variant, dtype):
    """The light rows taken in CSRGraph.light_rows' order (by length) or in
    index order (no order given) give the CPU op's result, with empty rows,
    rows at the threshold and hub rows; an order that skips a row leaves
    that row alone, and ids out of range are skipped, not read."""
    row, col, R, N = coo('huge_row')
    graph = make_graph(row, col, R, N, torch.randn(row.numel()))
    gd = to_device(graph, 'cuda')
    for F, reduce in ((64, 'sum'), (33, 'mean'), (16, 'sum')):
        x = torch.randn(N, F)
        expected = ops.spmm(graph.rowptr, graph.col, graph.value.to(dtype),
                            x.to(dtype), reduce).float()
        xd = x.to('cuda', dtype)
        for thr in (0, 3, 10, 10**6):
            args = (gd.rowptr, gd.col, gd.value.to(dtype), xd, reduce, variant,
                    thr, gd.hub_chunks(thr))
            for light in (gd.light_rows(thr), None):
                out = ops.spmm(*args, 0, light)
                torch.testing.assert_close(out.float().cpu(), expected,
                                           **tol(dtype, graph))
    thr, x = 3, torch.randn(N, 16, device='cuda')
    args = (gd.rowptr, gd.col, gd.value, x, 'sum', variant, thr,
            gd.hub_chunks(thr), 0)
    full = ops.spmm(*args, gd.light_rows(thr))
    light = gd.light_rows(thr)
    kept = light[1:]
    bad = torch.cat([kept, torch.tensor([-1, R, 10**12], device='cuda')])
    out = ops.spmm(*args, bad)
    missing = int(light[0])
    rest = torch.ones(R, dtype=torch.bool)
    rest[missing] = False
    torch.testing.assert_close(out[rest.cuda()], full[rest.cuda()])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
@pytest.mark.parametrize('variant,hub_threshold', CUDA_VARIANTS)
def test_spmm_bf16_cuda_matches_float64(variant, hub_threshold):
    """bf16 on CUDA against the float64 reference on the same bf16 inputs,
    in both load paths: 16-byte vectors (F and the head width multiples of
    8, aligned rows; elements widened from 32-bit words, element 2i the low
    half) and scalars (F or the head width not a multiple of 8, or a
    misaligned x); unweighted and weighted, int32 and int64 columns."""
    g = torch.Generator().manual_seed(11)
    # (F, heads, layout): heads None is unweighted
    cases = [(64, None, 'contiguous'), (64, 1, 'contiguous'),
             (64, 2, 'contiguous'), (24, None, 'contiguous'),
             (12, None, 'contiguous'), (12, 1, 'contiguous'),
             (16, 4, 'contiguous'), (64, None, 'misaligned'),
             (64, 1, 'misaligned')]
    for name in ('random', 'huge_row'):
        row, col, R, N = coo(name)
        for col_dtype in (torch.int, torch.long):
            graph = make_graph(row, col, R, N, col_dtype=col_dtype)
            gd = to_device(graph, 'cuda')
            for F, heads, layout in cases:
                x = torch.randn(N, F, generator=g).to(torch.bfloat16)
                value = edge_values(graph.nnz, heads, torch.bfloat16, g)
                for reduce in ('sum', 'mean'):
                    out = spmm(gd, with_layout(x.cuda(), layout), reduce,
                               variant, hub_threshold,
                               value=value.cuda() if heads else None)
                    assert out.dtype == torch.bfloat16
                    torch.testing.assert_close(
                        out.cpu().double(), ref_spmm(graph, x, value, reduce),
                        **tol(torch.bfloat16),
                        msg=lambda m: f'{name} col={col_dtype} F={F} '
                        f'heads={heads} {layout} {reduce}: {m}')


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
@pytest.mark.parametrize('variant', ['hub', 'hub-subwarp'])
def test_spmm_hub_variants_in_cuda_graph(variant):
    """The hub variants run the chunks on a second stream, forked from and
    joined to the caller's with events: a CUDA graph captures that, and its
    replays equal eager calls, also after the input changes."""
    row, col, R, N = coo('huge_row')
    graph = to_device(make_graph(row, col, R, N, torch.randn(row.numel())),
                      'cuda')
    graph.hub_chunks(3)  # sized (one host sync) and cached before capture
    static_x = torch.randn(N, 64, device='cuda')
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream
        spmm(graph, static_x, 'sum', variant, 3)
    torch.cuda.current_stream().wait_stream(side)
    captured = torch.cuda.CUDAGraph()
    with torch.cuda.graph(captured):
        out = spmm(graph, static_x, 'sum', variant, 3)
    for _ in range(2):
        captured.replay()
        torch.testing.assert_close(out, spmm(graph, static_x, 'sum', variant, 3))
        static_x.copy_(torch.randn_like(static_x))


# 2. gradients ################################################################

@pytest.mark.parametrize('heads', [None, 1, 2])
@pytest.mark.parametrize('reduce', ['sum', 'mean'])
@pytest.mark.parametrize('col_dtype', [torch.long, torch.int])
def test_spmm_gradcheck(heads, reduce, col_dtype):
    graph = small_graph(col_dtype=col_dtype)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(graph.num_cols, 4, generator=g, dtype=torch.float64,
                    requires_grad=True)
    if heads is None:
        assert torch.autograd.gradcheck(
            lambda x: spmm(graph, x, reduce), (x,))
        return
    value = edge_values(graph.nnz, heads, torch.float64, g).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x, v: spmm(graph, x, reduce, value=v), (x, value))
    # graph.value (through with_value) is differentiable too
    assert torch.autograd.gradcheck(
        lambda x, v: spmm(graph.with_value(v), x, reduce), (x, value))


@pytest.mark.parametrize('heads', [None, 1, 3])
def test_sddmm_gradcheck(heads):
    graph = small_graph()
    g = torch.Generator().manual_seed(0)
    shape = (5,) if heads is None else (heads, 5)
    a = torch.randn(graph.num_rows, *shape, generator=g, dtype=torch.float64,
                    requires_grad=True)
    b = torch.randn(graph.num_cols, *shape, generator=g, dtype=torch.float64,
                    requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: sddmm(graph, a, b), (a, b))


@pytest.mark.parametrize('heads', [None, 1, 3])
def test_csr_softmax_gradcheck(heads):
    graph = small_graph()
    g = torch.Generator().manual_seed(0)
    shape = (graph.nnz,) if heads is None else (graph.nnz, heads)
    v = torch.randn(shape, generator=g, dtype=torch.float64,
                    requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: csr_softmax(graph, v), (v,))


@pytest.mark.parametrize('heads', [1, 2])
def test_csr_attention_gradcheck(heads):
    graph = small_graph()
    g = torch.Generator().manual_seed(0)
    q = torch.randn(graph.num_rows, heads, 3, generator=g, dtype=torch.float64,
                    requires_grad=True)
    k = torch.randn(graph.num_cols, heads, 3, generator=g, dtype=torch.float64,
                    requires_grad=True)
    v = torch.randn(graph.num_cols, heads, 3, generator=g, dtype=torch.float64,
                    requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda q, k, v: csr_attention(graph, q, k, v), (q, k, v))


def grads(fn, inputs):
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*inputs)
    g = torch.Generator().manual_seed(5)
    seed = torch.randn(out.shape, generator=g, dtype=out.dtype).to(out.device)
    out.backward(seed)
    return out.detach().cpu(), [t.grad.cpu() for t in inputs]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_gradients_cuda_match_cpu(dtype):
    row, col, R, N = coo('random')
    graph = make_graph(row, col, R, N)
    gd = to_device(graph, 'cuda')
    ug = unique_graph()
    ugd = to_device(ug, 'cuda')
    g = torch.Generator().manual_seed(0)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    cuda = lambda ts: [t.cuda() for t in ts]  # noqa: E731
    t = tol(dtype)
    cases = []
    for heads in (1, 2):
        for reduce in ('sum', 'mean'):
            for variant, thr in CUDA_VARIANTS:
                x, v = rand(N, 8), rand(graph.nnz, heads).squeeze(-1)
                cases.append((
                    lambda x, v, reduce=reduce: spmm(graph, x, reduce,
                                                     value=v),
                    lambda x, v, reduce=reduce, variant=variant, thr=thr: spmm(
                        gd, x, reduce, variant, thr, value=v),
                    [x, v]))
        a, b = rand(R, heads, 6), rand(N, heads, 6)
        cases.append((lambda a, b: sddmm(graph, a, b),
                      lambda a, b: sddmm(gd, a, b), [a, b]))
        cases.append((lambda v: csr_softmax(graph, v),
                      lambda v: csr_softmax(gd, v), [rand(graph.nnz, heads)]))
        q = rand(ug.num_rows, heads, 4)
        k, v = rand(ug.num_cols, heads, 4), rand(ug.num_cols, heads, 4)
        cases.append((lambda q, k, v: csr_attention(ug, q, k, v),
                      lambda q, k, v: csr_attention(ugd, q, k, v), [q, k, v]))
    a, b = rand(R, 6), rand(N, 6)
    cases.append((lambda a, b: sddmm(graph, a, b),
                  lambda a, b: sddmm(gd, a, b), [a, b]))
    for i, (fn_cpu, fn_cuda, inputs) in enumerate(cases):
        out_c, g_c = grads(fn_cpu, inputs)
        out_g, g_g = grads(fn_cuda, cuda(inputs))
        torch.testing.assert_close(out_g, out_c, **t,
                                   msg=lambda m: f'{i}: {m}')
        for a, b in zip(g_g, g_c):
            torch.testing.assert_close(a, b, **t, msg=lambda m: f'{i}: {m}')


# 3. sddmm, softmax, attention vs references ##################################

def ref_sddmm(graph, a, b):
    row, col = rows_of(graph), graph.col.cpu().long()
    return (a.cpu().double()[row] * b.cpu().double()[col]).sum(-1)


@pytest.mark.parametrize('device,dtype', dtype_params())
@pytest.mark.parametrize('heads', [None, 1, 3])
@pytest.mark.parametrize('col_dtype', [torch.long, torch.int])
def test_sddmm_matches_reference(device, dtype, heads, col_dtype):
    g = torch.Generator().manual_seed(2)
    for name in GRAPHS:
        row, col, R, N = coo(name)
        graph = make_graph(row, col, R, N, col_dtype=col_dtype)
        gd = to_device(graph, device)
        for C in (1, 5, 40):
            shape = (C,) if heads is None else (heads, C)
            a = torch.randn(R, *shape, generator=g).to(dtype)
            b = torch.randn(N, *shape, generator=g).to(dtype)
            out = sddmm(gd, a.to(device), b.to(device))
            exp_shape = (graph.nnz,) if heads is None else (graph.nnz, heads)
            assert out.shape == exp_shape and out.dtype == dtype
            torch.testing.assert_close(
                out.cpu(), ref_sddmm(graph, a, b).to(dtype), **tol(dtype))
            if device == 'cuda':
                torch.testing.assert_close(out.cpu(), sddmm(graph, a, b),
                                           **tol(dtype))


def ref_softmax(graph, value):
    """Dense masked softmax per head, read back at the non-zeros."""
    v = as_2d(value.detach().cpu().double())
    H = v.size(1)
    row, col = rows_of(graph), graph.col.cpu().long()
    S = torch.full((H, graph.num_rows, graph.num_cols), -math.inf,
                   dtype=torch.float64)
    for h in range(H):
        S[h, row, col] = v[:, h]
    P = torch.softmax(S, dim=-1)
    out = torch.stack([P[h, row, col] for h in range(H)], dim=1)
    return out.reshape(value.shape)


@pytest.mark.parametrize('device,dtype', dtype_params())
@pytest.mark.parametrize('heads', [None, 1, 4])
def test_csr_softmax_matches_dense(device, dtype, heads):
    graph = unique_graph()
    assert (graph.degree() == 0).any()  # rows without entries
    g = torch.Generator().manual_seed(3)
    shape = (graph.nnz,) if heads is None else (graph.nnz, heads)
    value = (3 * torch.randn(shape, generator=g)).to(dtype)
    out = csr_softmax(to_device(graph, device), value.to(device))
    assert out.shape == value.shape and out.dtype == dtype
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.cpu(), ref_softmax(graph, value).to(dtype),
                               **tol(dtype))
    # every non-empty row sums to one per head
    sums = torch.zeros(graph.num_rows, *shape[1:], dtype=torch.float64)
    sums.index_add_(0, rows_of(graph), out.cpu().double())
    nonempty = graph.degree() > 0
    torch.testing.assert_close(sums[nonempty], torch.ones_like(sums[nonempty]),
                               **tol(dtype))
    if device == 'cuda':
        torch.testing.assert_close(out.cpu(), csr_softmax(graph, value),
                                   **tol(dtype))


@pytest.mark.parametrize('device,dtype', dtype_params(
    cuda_dtypes=[torch.float32, torch.float16, torch.float64]))
def test_csr_softmax_large_values_are_stable(device, dtype):
    graph = unique_graph()
    gd = to_device(graph, device)
    g = torch.Generator().manual_seed(4)
    value = torch.randn(graph.nnz, 2, generator=g)
    for shift in (1e4, -1e4):
        big = (value + shift).to(dtype)
        out = csr_softmax(gd, big.to(device)).cpu()
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, ref_softmax(graph, big).to(dtype),
                                   **tol(dtype))
    # a row mixing 1e4 and -1e4: the small entries vanish, no overflow
    row = torch.tensor([0, 0, 0, 1])
    col = torch.tensor([0, 1, 2, 0])
    small = make_graph(row, col, 2, 3)
    v = torch.tensor([1e4, -1e4, 1e4, 5e3], dtype=dtype)
    out = csr_softmax(to_device(small, device), v.to(device)).cpu()
    torch.testing.assert_close(out, torch.tensor([0.5, 0.0, 0.5, 1.0],
                                                 dtype=dtype))


def ref_attention(graph, q, k, v):
    """Dense masked multi-head attention; rows without entries give 0."""
    q, k, v = (t.detach().cpu().double() for t in (q, k, v))
    C = q.size(-1)
    scores = torch.einsum('rhc,nhc->hrn', q, k) / math.sqrt(C)
    mask = dense(graph)[0] > 0
    scores = scores.masked_fill(~mask, -math.inf)
    P = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.einsum('hrn,nhc->rhc', P, v)


@pytest.mark.parametrize('device,dtype', dtype_params())
@pytest.mark.parametrize('heads', [1, 2, 4])
def test_csr_attention_matches_dense(device, dtype, heads):
    graph = unique_graph()
    g = torch.Generator().manual_seed(5)
    C = 8
    q = torch.randn(graph.num_rows, heads, C, generator=g).to(dtype)
    k = torch.randn(graph.num_cols, heads, C, generator=g).to(dtype)
    v = torch.randn(graph.num_cols, heads, C, generator=g).to(dtype)
    out = csr_attention(to_device(graph, device), q.to(device), k.to(device),
                        v.to(device))
    assert out.shape == (graph.num_rows, heads, C) and out.dtype == dtype
    t = tol(dtype) if dtype not in HALF else dict(rtol=3e-2, atol=3e-2)
    torch.testing.assert_close(
        out.cpu(), ref_attention(graph, q, k, v).to(dtype), **t)


# 4. spmm_cusparse ############################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('reduce', ['sum', 'mean'])
@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_spmm_cusparse_equals_spmm(device, reduce, weighted, dtype):
    g = torch.Generator().manual_seed(6)
    for name in ('random', 'huge_row', 'no_nnz'):
        row, col, R, N = coo(name)
        graph = to_device(make_graph(row, col, R, N), device)
        x = torch.randn(N, 17, generator=g).to(dtype).to(device)
        value = torch.randn(graph.nnz, generator=g).to(dtype).to(
            device) if weighted else None
        out = spmm_cusparse(graph, x, reduce, value=value)
        exp = spmm(graph, x, reduce, value=value)
        assert out.shape == exp.shape and out.dtype == dtype
        torch.testing.assert_close(out, exp, **tol(dtype, graph),
                                   msg=lambda m: f'{name}: {m}')
        if weighted:  # graph.value is used when value is not given
            out = spmm_cusparse(graph.with_value(value), x, reduce)
            torch.testing.assert_close(out, exp, **tol(dtype, graph))


def test_spmm_cusparse_rejects_multi_head():
    graph = small_graph()
    with pytest.raises(ValueError, match='multi-head'):
        spmm_cusparse(graph, torch.randn(5, 4),
                      value=torch.randn(graph.nnz, 2))


# 5. opcheck ##################################################################

@pytest.mark.parametrize('device', devices())
def test_opcheck(device):
    g = torch.Generator().manual_seed(7)
    graph = to_device(small_graph(col_dtype=torch.int), device)
    rp, col, E = graph.rowptr, graph.col, graph.nnz
    r = lambda *s: torch.randn(*s, generator=g).to(device)  # noqa: E731
    x = r(5, 4)
    spmm_args = [
        (rp, col, None, x),
        (rp, col, r(E), x, 'mean', 'warp', -1, None),
        (rp, col, r(E, 2), x, 'sum', 'subwarp', -1, None),
        (rp, col, r(E), x, 'sum', 'hub', 1, graph.hub_chunks(1, 2)),
        (rp, col, r(E), x, 'sum', 'hub-subwarp', 1, graph.hub_chunks(1, 2), 0,
         graph.light_rows(1)),
    ]
    for args in spmm_args:
        torch.library.opcheck(ops.spmm, args)
    torch.library.opcheck(ops.sddmm, (rp, col, r(7, 3), r(5, 3)))
    torch.library.opcheck(ops.sddmm, (rp, col, r(7, 2, 3), r(5, 2, 3)))
    for shape in ((E,), (E, 3)):
        v = r(*shape)
        torch.library.opcheck(ops.csr_softmax, (rp, v))
        out = ops.csr_softmax(rp, v)
        torch.library.opcheck(ops.csr_softmax_backward, (rp, out, r(*shape)))


# 6. bad inputs ###############################################################

def _spmm_inputs(device):
    graph = to_device(small_graph(), device)
    return graph.rowptr, graph.col, torch.randn(graph.nnz, device=device), \
        torch.randn(5, 4, device=device)


@pytest.mark.parametrize('device', devices())
def test_spmm_bad_inputs(device):
    rp, col, value, x = _spmm_inputs(device)
    cases = [
        ((rp.int(), col, value, x), "'rowptr'"),
        ((rp, col.float(), value, x), "'col'"),
        ((rp, col, value, x[:, 0]), "'x'"),
        ((rp, col, value[:-1], x), "'value'"),
        ((rp, col, value.double(), x), "'value'"),
        ((rp, col, torch.randn(col.numel(), 3, device=device), x), "'x'"),
        ((rp, col, value, x, 'max'), "'reduce'"),
        ((rp, col, value, x, 'sum', 'block'), "'variant'"),
        ((rp, col, value, x.long()), "'x'"),
        ((rp, col, value, x, 'sum', 'warp', -1, None, 0,
          torch.zeros(1, dtype=torch.int, device=device)), "'light_rows'"),
        ((rp, col, value, x, 'sum', 'warp', -1, None, 0,
          torch.zeros(1, 1, dtype=torch.long, device=device)), "'light_rows'"),
        ((rp, col, value, x, 'sum', 'warp', -1, None, 0,
          torch.zeros(rp.numel(), dtype=torch.long, device=device)),
         "'light_rows'"),
    ]
    for args, match in cases:
        with pytest.raises(RuntimeError, match=match):
            ops.spmm(*args)


@pytest.mark.parametrize('device', devices())
def test_spmm_light_order(device):
    """The hub-split variants give the same sums with the light rows taken
    by length or in index order (on the CPU the knob is checked, unused)."""
    row, col, R, N = coo('huge_row')
    graph = to_device(make_graph(row, col, R, N, torch.randn(row.numel())),
                      device)
    x = torch.randn(N, 24, device=device)
    for variant, thr in (('hub', 3), ('hub-subwarp', 3), ('hub', 0)):
        a = spmm(graph, x, 'mean', variant, thr, light_order='length')
        b = spmm(graph, x, 'mean', variant, thr, light_order='index')
        torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="'light_order'"):
        spmm(graph, x, variant='hub', hub_threshold=3, light_order='degree')


def test_spmm_python_api_bad_inputs():
    graph = small_graph()
    x = torch.randn(5, 4)
    with pytest.raises(ValueError, match="'variant'"):
        spmm(graph, x, variant='block')
    with pytest.raises(RuntimeError, match="'reduce'"):
        spmm(graph, x, reduce='max')
    with pytest.raises(RuntimeError, match="'value'"):
        spmm(graph, x, value=torch.randn(graph.nnz + 1))
    with pytest.raises(RuntimeError, match="'x'"):
        spmm(graph, torch.randn(5, 5), value=torch.randn(graph.nnz, 2))


def test_spmm_col_out_of_range_cpu():
    rp, col, value, x = _spmm_inputs('cpu')
    bad = col.clone()
    bad[3] = 5  # x has 5 rows
    with pytest.raises(RuntimeError, match="'col'"):
        ops.spmm(rp, bad, value, x)
    with pytest.raises(RuntimeError, match="'col'"):
        ops.spmm(rp, bad.int(), value, x)
    with pytest.raises(RuntimeError, match="'col'"):
        ops.sddmm(rp, bad, torch.randn(7, 3), torch.randn(5, 3))


def test_spmm_negative_col_cpu():
    """A negative column must be rejected like a too-large one (it would
    read x[-1]). Fails today: check_cols records the bad id in an atomic
    whose "nothing found" sentinel is -1 and then checks ``bad < 0``, so any
    negative id passes as "nothing found" (kernels/spmm/cpu/spmm_kernel.cpp,
    check_cols)."""
    rp, col, value, x = _spmm_inputs('cpu')
    bad = col.clone()
    bad[3] = -1
    with pytest.raises(RuntimeError, match="'col'"):
        ops.spmm(rp, bad, value, x)
    with pytest.raises(RuntimeError, match="'col'"):
        ops.sddmm(rp, bad, torch.randn(7, 3), torch.randn(5, 3))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_spmm_hub_needs_hub_rows_cuda():
    rp, col, value, x = _spmm_inputs('cuda')
    with pytest.raises(RuntimeError, match='hub_rows'):
        ops.spmm(rp, col, value, x, 'sum', 'hub', 3, None)
    with pytest.raises(RuntimeError, match='hub_threshold'):
        ops.spmm(rp, col, value, x, 'sum', 'hub', -1,
                 torch.zeros(0, 3, dtype=torch.long, device='cuda'))
    with pytest.raises(RuntimeError, match="'hub_rows'"):
        ops.spmm(rp, col, value, x, 'sum', 'hub', 3,
                 torch.zeros(0, 3, dtype=torch.int, device='cuda'))
    # 1-D hub rows, not [K, 3] chunks
    with pytest.raises(RuntimeError, match="'hub_rows'"):
        ops.spmm(rp, col, value, x, 'sum', 'hub', 3,
                 torch.zeros(0, dtype=torch.long, device='cuda'))


@pytest.mark.parametrize('device', devices())
def test_sddmm_and_softmax_bad_inputs(device):
    graph = to_device(small_graph(), device)
    rp, col, E = graph.rowptr, graph.col, graph.nnz
    r = lambda *s: torch.randn(*s, device=device)  # noqa: E731
    sddmm_cases = [
        ((rp, col, r(7, 4), r(5, 5)), "'a'"),          # C mismatch
        ((rp, col, r(7, 2, 4), r(5, 3, 4)), "'a'"),    # heads mismatch
        ((rp, col, r(7, 2, 4), r(5, 8)), "'a'"),       # 3-D vs 2-D
        ((rp, col, r(6, 4), r(5, 4)), "'a'"),          # rows != R
        ((rp, col, r(7, 4), r(5, 4).double()), "'a'"),  # dtype mismatch
        ((rp, col, r(7), r(5)), "'a'"),                # 1-D
        ((rp.int(), col, r(7, 4), r(5, 4)), "'rowptr'"),
    ]
    for args, match in sddmm_cases:
        with pytest.raises(RuntimeError, match=match):
            ops.sddmm(*args)
    with pytest.raises(RuntimeError, match="'value'"):
        ops.csr_softmax(rp, r(E, 2, 2))
    with pytest.raises(RuntimeError, match="'value'"):
        ops.csr_softmax(rp, torch.ones(E, dtype=torch.long, device=device))
    with pytest.raises(RuntimeError, match="'rowptr'"):
        ops.csr_softmax(rp.int(), r(E))
    out = ops.csr_softmax(rp, r(E))
    with pytest.raises(RuntimeError, match="'grad'"):
        ops.csr_softmax_backward(rp, out, r(E, 1))
    with pytest.raises(RuntimeError, match="'value'"):
        csr_softmax(graph, r(E, 2, 2))


# 7. CSRGraph #################################################################

def test_csrgraph_transpose():
    g = torch.Generator().manual_seed(8)
    ei = torch.stack([torch.randint(0, 30, (200,), generator=g),
                      torch.randint(0, 30, (200,), generator=g)])
    ei = torch.cat([ei, ei[:, :15]], dim=1)  # duplicates
    value = torch.randn(ei.size(1), generator=g)
    graph = CSRGraph.from_edge_index(ei, 30, value)
    t = graph.transpose()
    assert t.num_rows == graph.num_cols and t.num_cols == graph.num_rows
    assert t.nnz == graph.nnz
    torch.testing.assert_close(dense(t)[0], dense(graph)[0].t())
    assert torch.equal(t.value, graph.value[t._cache['perm']])
    assert graph.transpose() is t and t.transpose() is graph  # cached
    # a fresh (uncached) transpose of the transpose is the original
    fresh = CSRGraph(t.rowptr, t.col, t.value, t.num_cols).transpose()
    assert torch.equal(fresh.rowptr, graph.rowptr)
    assert torch.equal(fresh.col, graph.col)
    assert torch.equal(fresh.value, graph.value)
    # rectangular, int32 columns, unsorted rows, empty rows and columns
    row, col, R, N = coo('random')
    rect = make_graph(row, col, R, N, torch.randn(row.numel()),
                      col_dtype=torch.int)
    t = rect.transpose()
    assert t.col.dtype == torch.int and t.rowptr.dtype == torch.long
    assert (t.num_rows, t.num_cols) == (N, R)
    torch.testing.assert_close(dense(t)[0], dense(rect)[0].t())
    back = CSRGraph(t.rowptr, t.col, t.value, t.num_cols).transpose()
    torch.testing.assert_close(dense(back)[0], dense(rect)[0])
    # empty graphs
    for name in ('no_nnz', 'empty'):
        row, col, R, N = coo(name)
        t = make_graph(row, col, R, N).transpose()
        assert (t.num_rows, t.num_cols, t.nnz) == (N, R, 0)
        assert torch.equal(t.rowptr, torch.zeros(N + 1, dtype=torch.long))


def test_csrgraph_from_edge_index():
    ei = torch.tensor([[0, 1, 2, 2, 3], [1, 0, 1, 1, 2]])
    w = torch.tensor([1., 2., 3., 4., 5.])
    graph = CSRGraph.from_edge_index(ei, 4, w)
    # rows are targets (edge_index[1]), columns sources
    assert graph.rowptr.tolist() == [0, 1, 4, 5, 5]
    assert graph.col.tolist() == [1, 0, 2, 2, 3]
    assert graph.value.tolist() == [2., 1., 3., 4., 5.]
    assert graph.num_rows == 4 and graph.num_cols == 4 and graph.nnz == 5
    # A @ x is PyG's sum aggregation of x_j into i
    x = torch.randn(4, 3)
    from torch_geometric.utils import scatter
    exp = scatter(x[ei[0]] * w[:, None], ei[1], 0, dim_size=4, reduce='sum')
    torch.testing.assert_close(spmm(graph, x), exp)
    torch.testing.assert_close(graph.to_torch_sparse().to_dense(),
                               dense(graph)[0].float())
    with pytest.raises(ValueError, match='edge_index'):
        CSRGraph.from_edge_index(ei, 3)
    with pytest.raises(ValueError, match='edge_index'):
        CSRGraph.from_edge_index(torch.tensor([[-1], [0]]), 3)
    empty = CSRGraph.from_edge_index(torch.zeros(2, 0, dtype=torch.long), 3)
    assert empty.rowptr.tolist() == [0, 0, 0, 0] and empty.nnz == 0


def test_csrgraph_from_int32_edge_index():
    ei = torch.tensor([[0, 1, 2, 2, 3], [1, 0, 1, 1, 2]], dtype=torch.int)
    g32 = CSRGraph.from_edge_index(ei, 4)
    g64 = CSRGraph.from_edge_index(ei.long(), 4)
    assert torch.equal(g32.rowptr, g64.rowptr)
    assert g32.col.tolist() == g64.col.tolist()


def test_csrgraph_from_int32_edge_index_many_nodes():
    """int32 edge_index with more than 46340 nodes. Fails today:
    from_edge_index sorts by ``row * num_nodes + col`` computed in the
    edge_index's dtype, which overflows int32 once num_nodes**2 > 2**31, so
    columns land in the wrong rows (pyg_fusesample/sparse/csr_graph.py,
    from_edge_index)."""
    n = 50000
    ei = torch.tensor([[n - 1, 0], [n - 1, 1]], dtype=torch.int)
    g32 = CSRGraph.from_edge_index(ei, n)
    g64 = CSRGraph.from_edge_index(ei.long(), n)
    assert torch.equal(g32.rowptr, g64.rowptr)
    assert g32.col.tolist() == g64.col.tolist()  # row 1: [0], row n-1: [n-1]


@pytest.mark.parametrize('device', devices())
def test_csrgraph_int32_col_matches_int64(device):
    """A CSRGraph with int32 columns (int64 row pointers; the kernels take
    both index types) gives the same spmm, sddmm and gradients as with int64
    columns, and its transpose keeps int32."""
    g = torch.Generator().manual_seed(12)
    ei = torch.randint(0, 40, (2, 300), generator=g).to(device)
    w = torch.randn(300, generator=g, dtype=torch.float64).to(device)
    g64 = CSRGraph.from_edge_index(ei, 40, w)
    g32 = CSRGraph(g64.rowptr, g64.col.int(), g64.value, g64.num_cols)
    assert g32.transpose().col.dtype == torch.int32
    rand = lambda *s: torch.randn(*s, generator=g,  # noqa: E731
                                  dtype=torch.float64).to(device)
    x, a, b = rand(40, 16), rand(40, 2, 8), rand(40, 2, 8)
    v2 = rand(g32.nnz, 2)

    def results(graph):
        fns = [lambda x, v: spmm(graph, x, 'mean', value=v),
               lambda x, v: spmm(graph.with_value(v), x),
               lambda x, v: spmm(graph, x, value=v2 * v.unsqueeze(-1)),
               lambda a, b: sddmm(graph, a, b)]
        args = [(x, w), (x, w), (x, w), (a, b)]
        return [grads(fn, inputs) for fn, inputs in zip(fns, args)]
    for (out32, grads32), (out64, grads64) in zip(results(g32), results(g64)):
        torch.testing.assert_close(out32, out64, rtol=0, atol=0)
        for d32, d64 in zip(grads32, grads64):
            torch.testing.assert_close(d32, d64, rtol=0, atol=0)
    assert torch.equal(g32.to_torch_sparse().to_dense(),
                       g64.to_torch_sparse().to_dense())


@pytest.mark.parametrize('threshold', [0, 3, 10, 4999, 5000])
@pytest.mark.parametrize('chunk', [1, 7, 2048])
def test_csrgraph_hub_chunks(threshold, chunk):
    row, col, R, N = coo('huge_row')
    graph = make_graph(row, col, R, N)
    chunks = graph.hub_chunks(threshold, chunk)
    assert chunks.dtype == torch.long and chunks.dim() == 2
    assert chunks.size(1) == 3
    assert graph.hub_chunks(threshold, chunk) is chunks  # cached
    rows = chunks[:, 0]
    hubs = graph.hub_rows(threshold)
    # a row's chunks are adjacent
    assert torch.equal(rows.unique_consecutive(), hubs)
    begin, end = chunks[:, 1], chunks[:, 2]
    assert bool((end > begin).all()) and bool((end - begin <= chunk).all())
    for r in hubs.tolist():
        mine = chunks[rows == r]
        # the chunks tile the row's non-zeros in order
        assert int(mine[0, 1]) == int(graph.rowptr[r])
        assert int(mine[-1, 2]) == int(graph.rowptr[r + 1])
        assert torch.equal(mine[1:, 1], mine[:-1, 2])
    assert graph.with_value(torch.ones(graph.nnz)).hub_chunks(
        threshold, chunk) is chunks


@pytest.mark.parametrize('threshold', [-1, 0, 3, 10, 5000])
def test_csrgraph_light_rows(threshold):
    """Every row with at most `threshold` non-zeros, once, by non-zero
    count with ties in index order; cached and shared by with_value."""
    row, col, R, N = coo('huge_row')
    graph = make_graph(row, col, R, N)
    light = graph.light_rows(threshold)
    deg = graph.degree()
    assert light.dtype == torch.long and light.dim() == 1
    assert sorted(light.tolist()) == (deg <= threshold).nonzero().view(-1).tolist()
    key = deg[light] * (R + 1) + light  # (count, index) in increasing order
    assert bool((key[1:] > key[:-1]).all())
    assert graph.light_rows(threshold) is light
    assert graph.with_value(torch.ones(graph.nnz)).light_rows(threshold) is light


def test_csrgraph_hub_rows_and_stats():
    row, col, R, N = coo('huge_row')
    graph = make_graph(row, col, R, N)
    deg = graph.degree()
    for thr in (-1, 0, 3, 10, 4999, 5000):
        hubs = graph.hub_rows(thr)
        assert hubs.dtype == torch.long
        assert torch.equal(hubs, (deg > thr).nonzero().view(-1))
        assert graph.hub_rows(thr) is hubs  # cached per threshold
    assert graph.hub_rows(10).tolist() == [5]
    assert graph.hub_rows(5000).numel() == 0
    stats = graph.stats()
    keys = {'rows', 'cols', 'nnz', 'mean_degree', 'p50', 'p90', 'p99', 'p999',
            'max_degree', 'skew'}
    assert keys <= set(stats)
    assert (stats['rows'], stats['cols'], stats['nnz']) == (R, N, graph.nnz)
    assert stats['max_degree'] == 5000
    assert stats['mean_degree'] == pytest.approx(graph.nnz / R)
    assert stats['skew'] == pytest.approx(5000 / (graph.nnz / R))
    assert stats['p50'] <= stats['p90'] <= stats['p99'] <= stats['max_degree']
    assert graph.stats() is stats
    for name in ('no_nnz', 'empty'):
        row, col, R, N = coo(name)
        s = make_graph(row, col, R, N).stats()
        assert keys <= set(s)
        assert s['nnz'] == 0 and s['max_degree'] == 0 and s['skew'] == 0
    # with_value shares structure caches, not values
    w = torch.randn(graph.nnz)
    g2 = graph.with_value(w)
    assert g2.value is w and g2.rowptr is graph.rowptr
    assert torch.equal(g2.degree(), deg) and g2.stats() == stats


# 9. lane layouts (a scheduler knob) ########################################

@pytest.mark.cuda
@pytest.mark.parametrize('variant,hub_threshold', [('warp', -1), ('subwarp', -1),
                                                   ('hub', 3), ('hub-subwarp', 3)])
@pytest.mark.parametrize('lanes', [1, 2, 8, 16, 32])
def test_spmm_lane_layouts_agree(variant, hub_threshold, lanes):
    """Every lane layout gives the CPU op's sums; in the packed variants
    lanes above 8 widen each row's group (16: two rows a warp, 32: one)."""
    g = torch.Generator().manual_seed(3)
    row, col, R, N = coo(GRAPHS[0])
    graph = make_graph(row, col, R, N)
    graph_d = to_device(graph, 'cuda')
    for F in (16, 33, 128):
        x = torch.randn(N, F, generator=g)
        expected = spmm(graph, x, 'sum')
        out = spmm(graph_d, x.cuda(), 'sum', variant, hub_threshold, lanes=lanes)
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16],
                         ids=['float32', 'bfloat16'])
@pytest.mark.parametrize('variant,hub_threshold', [('warp', -1), ('subwarp', -1),
                                                   ('hub', 3), ('hub-subwarp', 3)])
@pytest.mark.parametrize('lanes', [8, 16, 32])
def test_spmm_one_vector_kernels(dtype, variant, hub_threshold, lanes):
    """Lanes that cover rows of >= 8 vectors run on the kernels of one
    vector a lane (their own tuning: 'Tuning' in spmm_kernel.cu; packed
    variants give each row just those lanes): weighted and not, sum and
    mean, a huge row split into hub chunks, against the CPU float32
    reference; rows of fewer than 8 vectors (F = 16 and 32 in bf16, 16 in
    float32) stay on the default kernels and agree too."""
    g = torch.Generator().manual_seed(5)
    row, col, R, N = coo('huge_row')
    value = torch.randn(row.numel(), generator=g)
    for weighted in (False, True):
        graph = make_graph(row, col, R, N, value if weighted else None)
        w = graph.value.to(dtype) if weighted else None
        graph_d = CSRGraph(graph.rowptr.cuda(), graph.col.cuda(),
                           w.cuda() if weighted else None, N)
        ref_graph = CSRGraph(graph.rowptr, graph.col, w.float() if weighted else None, N)
        for F in (16, 32, 64, 128, 256):
            x = torch.randn(N, F, generator=g).to(dtype)
            for reduce in ('sum', 'mean'):
                expected = spmm(ref_graph, x.float(), reduce)
                out = spmm(graph_d, x.cuda(), reduce, variant, hub_threshold, lanes=lanes)
                assert out.dtype == dtype
                torch.testing.assert_close(out.float().cpu(), expected,
                                           **tol(dtype, graph))


@pytest.mark.parametrize('lanes', [-1, 3, 64])
def test_spmm_bad_lanes(lanes):
    row, col, R, N = coo(GRAPHS[0])
    graph = make_graph(row, col, R, N)
    with pytest.raises(RuntimeError, match='lanes'):
        spmm(graph, torch.randn(N, 4), 'sum', lanes=lanes)
