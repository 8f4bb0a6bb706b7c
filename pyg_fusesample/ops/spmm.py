"""SpMM, SDDMM and CSR softmax with autograd: the ops behind AutoSpMMConv.

``torch.ops.fusesample.{spmm, sddmm, csr_softmax, csr_softmax_backward}``
(contracts: ``kernels/spmm/spmm.cpp``) take raw CSR arrays; the functions
here take a :class:`~pyg_fusesample.sparse.CSRGraph`, which caches what the
backward needs (the transposed structure) so no call rebuilds it.

Gradients: for ``out = A @ x`` (``A`` scaled by ``1 / deg`` for ``'mean'``),
``dx = A^T @ dout`` (an SpMM over the cached transpose) and, for weighted
``A``, ``dvalue[e] = <dout[row(e)], x[col(e)]>`` (an SDDMM, per head).
"""
from typing import Optional

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from ..sparse import CSRGraph

_ops = torch.ops.fusesample

SPMM_VARIANTS = ('warp', 'subwarp', 'hub', 'hub-subwarp')
HUB_VARIANTS = ('hub', 'hub-subwarp')  # rows above hub_threshold: blocks


LIGHT_ORDERS = ('length', 'index')  # light rows of the hub-split variants


def spmm_setup(graph: CSRGraph, variant: str, hub_threshold: int,
               light_order: str = 'length'):
    r"""The row split a hub variant's call on :obj:`graph` needs (cached in
    the graph per threshold, so only a first call pays it): ``(hub_rows,
    light_rows)``, either None where the variant needs none."""
    hub_rows = light_rows = None
    if variant in HUB_VARIANTS:
        hub_rows = graph.hub_chunks(hub_threshold)
        if light_order == 'length':
            light_rows = graph.light_rows(hub_threshold)
    return hub_rows, light_rows


def _raw_spmm(graph: CSRGraph, value: Optional[Tensor], x: Tensor, reduce: str,
              variant: str, hub_threshold: int, lanes: int = 0,
              light_order: str = 'length') -> Tensor:
    hub_rows, light_rows = spmm_setup(graph, variant, hub_threshold,
                                      light_order)
    return _ops.spmm(graph.rowptr, graph.col, value, x, reduce, variant,
                     hub_threshold, hub_rows, lanes, light_rows)


def row_scale(graph: CSRGraph, dtype) -> Tensor:
    r"""``1 / max(degree, 1)`` per row: what ``'mean'`` multiplies by."""
    return graph.degree().clamp_min(1).to(dtype).reciprocal()


def transposed(graph: CSRGraph) -> CSRGraph:
    r"""``A^T`` with this graph's values permuted to it (cached per graph
    object: a :meth:`CSRGraph.with_value` copy has its own)."""
    t = graph._cache.get('transpose_valued')
    if t is None:
        base = graph.transpose()
        t = base if graph.value is None else base.with_value(
            graph.value[base._cache['perm']])
        graph._cache['transpose_valued'] = t
    return t


def _transposed_spmm(graph: CSRGraph, value: Optional[Tensor],
                     grad: Tensor) -> Tensor:
    # A^T @ grad over the graph's cached transpose (values permuted to it).
    t = graph.transpose()
    value_t = value[t._cache['perm']] if value is not None else None
    return _raw_spmm(t, value_t, grad.contiguous(), 'sum', 'warp', -1)


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, value, graph, reduce, variant, hub_threshold, lanes,
                light_order):
        ctx.graph, ctx.reduce = graph, reduce
        ctx.save_for_backward(x, value)
        return _raw_spmm(graph, value, x, reduce, variant, hub_threshold, lanes,
                         light_order)

    @staticmethod
    def backward(ctx, grad_out):
        x, value = ctx.saved_tensors
        graph = ctx.graph
        heads = 1 if value is None or value.dim() == 1 else value.size(1)
        if ctx.reduce == 'mean':
            grad_out = grad_out * row_scale(graph, grad_out.dtype).unsqueeze(-1)
        grad_x = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_x = _transposed_spmm(graph, value, grad_out)
        if value is not None and ctx.needs_input_grad[1]:
            a = grad_out.reshape(grad_out.size(0), heads, -1)
            b = x.reshape(x.size(0), heads, -1)
            grad_value = _ops.sddmm(graph.rowptr, graph.col, a.contiguous(),
                                    b.contiguous())
            grad_value = grad_value.view_as(value)
        return grad_x, grad_value, None, None, None, None, None, None


def spmm(graph: CSRGraph, x: Tensor, reduce: str = 'sum',
         variant: str = 'warp', hub_threshold: int = -1,
         value: Optional[Tensor] = None, lanes: int = 0,
         light_order: str = 'length') -> Tensor:
    r"""``A @ x`` with the CSR :obj:`graph` (rows aggregate), differentiable
    in :obj:`x` and the edge values.

    Args:
        graph (CSRGraph): the matrix; its ``value`` is used unless
            :obj:`value` is given.
        x (Tensor): ``[num_cols, F]``.
        reduce (str): ``'sum'`` or ``'mean'`` (divide by the row's count).
        variant (str): the CUDA kernel: ``'warp'``, ``'subwarp'``,
            ``'hub'`` or ``'hub-subwarp'`` (ignored on the CPU); normally
            chosen by :func:`pyg_fusesample.autotune.run_spmm`.
        hub_threshold (int): rows with more non-zeros go to a thread block
            each (``'hub'`` and ``'hub-subwarp'`` only).
        value (Tensor, optional): ``[nnz]`` or ``[nnz, heads]`` edge values
            (heads split the columns of :obj:`x` evenly).
        lanes (int): CUDA lane layout: lanes across a row's feature vectors
            (a power of two <= 32; ``0``: automatic); in ``'subwarp'`` and
            ``'hub-subwarp'`` a row gets ``max(8, lanes)`` lanes, so wider
            rows are packed too; a scheduler knob.
        light_order (str): the order in which the hub-split variants' warps
            take the rows up to :obj:`hub_threshold`: ``'length'`` (by
            non-zero count, :meth:`CSRGraph.light_rows`: rows sharing a warp
            are about as long) or ``'index'``; a scheduler knob.
    """
    if reduce == 'add':
        reduce = 'sum'
    if variant not in SPMM_VARIANTS + ('cpu',):
        raise ValueError(f"spmm: 'variant' must be one of {SPMM_VARIANTS}, "
                         f"got {variant!r}")
    if light_order not in LIGHT_ORDERS:
        raise ValueError(f"spmm: 'light_order' must be one of {LIGHT_ORDERS}, "
                         f"got {light_order!r}")
    value = graph.value if value is None else value
    return _SpMM.apply(x, value, graph, reduce, variant, int(hub_threshold),
                       int(lanes), light_order)


def spmm_cusparse(graph: CSRGraph, x: Tensor, reduce: str = 'sum',
                  value: Optional[Tensor] = None) -> Tensor:
    r"""The same product through ``torch.sparse.mm`` (cuSPARSE on CUDA): the
    baseline the scheduler's guardrail measures every candidate against.
    Single-head values only."""
    value = graph.value if value is None else value
    if value is not None and value.dim() != 1:
        raise ValueError('spmm_cusparse: multi-head values are not supported')
    # The graph's own values (the common case) keep the graph's cached CSR.
    source = graph if value is graph.value else graph.with_value(value)
    adj = source.to_torch_sparse(x.dtype)
    out = torch.sparse.mm(adj, x)
    if reduce == 'mean':
        out = out * row_scale(graph, x.dtype).unsqueeze(-1)
    return out


def spmm_scatter(graph: CSRGraph, x: Tensor, reduce: str = 'sum',
                 value: Optional[Tensor] = None) -> Tensor:
    r"""The same product as PyG's default message passing computes it: each
    non-zero's ``x[col]`` row (times its value) added into its row by
    ``index_add_`` -- a reference the scheduler measures kernels against.
    Differentiable through torch's own ops. Single-head values only."""
    value = graph.value if value is None else value
    if value is not None and value.dim() != 1:
        raise ValueError('spmm_scatter: multi-head values are not supported')
    row = graph._cache.get('row')
    if row is None:  # the row of every non-zero, once per graph
        row = graph._cache['row'] = torch.repeat_interleave(
            torch.arange(graph.num_rows, device=graph.device), graph.degree(),
            output_size=graph.nnz)
    msg = x.index_select(0, graph.col)
    if value is not None:
        msg = msg * value.to(x.dtype).unsqueeze(-1)
    out = x.new_zeros(graph.num_rows, x.size(1)).index_add_(0, row, msg)
    if reduce == 'mean':
        out = out * row_scale(graph, x.dtype).unsqueeze(-1)
    return out


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, rowptr):
        out = _ops.csr_softmax(rowptr, value)
        ctx.save_for_backward(out, rowptr)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, rowptr = ctx.saved_tensors
        return _ops.csr_softmax_backward(rowptr, out, grad.contiguous()), None


def csr_softmax(graph: CSRGraph, value: Tensor) -> Tensor:
    r"""Softmax of edge scores :obj:`value` (``[nnz]`` or ``[nnz, heads]``)
    over each row's non-zeros, numerically stable, differentiable."""
    return _Softmax.apply(value, graph.rowptr)


class _SDDMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, graph):
        ctx.graph = graph
        ctx.save_for_backward(a, b)
        return _ops.sddmm(graph.rowptr, graph.col, a.contiguous(), b.contiguous())

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        graph = ctx.graph
        heads = a.size(1) if a.dim() == 3 else 1
        g = grad.reshape(-1, heads)
        grad_a = grad_b = None
        # d a[r] = sum_e g[e] b[col(e)]: an SpMM with the scores as values;
        # d b[c] = sum_e g[e] a[row(e)]: the same over the transpose.
        if ctx.needs_input_grad[0]:
            grad_a = _raw_spmm(graph, g.squeeze(-1) if heads == 1 else g,
                               b.reshape(b.size(0), -1), 'sum', 'warp', -1)
            grad_a = grad_a.view_as(a)
        if ctx.needs_input_grad[1]:
            t = graph.transpose()
            gt = g[t._cache['perm']]
            grad_b = _raw_spmm(t, gt.squeeze(-1) if heads == 1 else gt,
                               a.reshape(a.size(0), -1), 'sum', 'warp', -1)
            grad_b = grad_b.view_as(b)
        return grad_a, grad_b, None


def sddmm(graph: CSRGraph, a: Tensor, b: Tensor) -> Tensor:
    r"""Per non-zero ``e = (r, c)`` of :obj:`graph`: ``<a[r], b[c]>`` (per
    head for ``[rows, heads, C]`` inputs), differentiable in both."""
    return _SDDMM.apply(a, b, graph)


def csr_attention(graph: CSRGraph, query: Tensor, key: Tensor,
                  value: Tensor) -> Tensor:
    r"""Multi-head attention restricted to the sparsity pattern:
    ``softmax_row(<q_r, k_c> / sqrt(C)) @ v`` (SDDMM -> row softmax -> SpMM).
    :obj:`query` ``[R, H, C]``, :obj:`key` and :obj:`value` ``[N, H, C]``;
    returns ``[R, H, C]``."""
    scores = sddmm(graph, query * query.size(-1) ** -0.5, key)
    alpha = csr_softmax(graph, scores)
    out = spmm(graph, value.reshape(value.size(0), -1), value=alpha)
    return out.view(-1, *value.shape[1:])


# Fake kernels ###############################################################

@torch.library.register_fake('fusesample::spmm')
def _spmm_fake(rowptr, col, value, x, reduce='sum', variant='warp',
               hub_threshold=-1, hub_rows=None, lanes=0, light_rows=None):
    return x.new_empty((rowptr.shape[0] - 1, x.shape[1]))


@torch.library.register_fake('fusesample::sddmm')
def _sddmm_fake(rowptr, col, a, b):
    shape = (col.shape[0], a.shape[1]) if a.dim() == 3 else (col.shape[0],)
    return a.new_empty(shape)


@torch.library.register_fake('fusesample::csr_softmax')
def _csr_softmax_fake(rowptr, value):
    return torch.empty_like(value)


@torch.library.register_fake('fusesample::csr_softmax_backward')
def _csr_softmax_backward_fake(rowptr, out, grad):
    return torch.empty_like(out)
