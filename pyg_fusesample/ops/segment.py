"""Aggregation over a mini-batch's edges grouped by target, differentiable:
the op behind the mini-batch layers (``pyg_fusesample.nn.SAGEConv`` ...).

``torch.ops.fusesample.segment_aggregate`` (contract:
``kernels/segment/segment_aggregate.cpp``) reduces each target's slots of a
:class:`~pyg_fusesample.sparse.TargetLayout`;
``segment_aggregate_backward`` is its gradient in ``x`` (the slots grouped
by source on the device, summed in slot order: deterministic, no atomics,
no host synchronisation; the grouping, ``segment_source_order``, made once
per layout, or once per fused loader batch for all its trimmed layers, and
shared by the backwards over it). The gradient of the slot
values is ``<grad[dst], x[src]>`` per head (an SDDMM).
"""
from typing import Optional, Tuple

import torch
from torch import Tensor
from torch.utils.weak import WeakIdKeyDictionary

from .. import _extension  # noqa: F401  (registers the ops)
from ..sparse.target_layout import TargetLayout
from .capture_branch import branch_for

_ops = torch.ops.fusesample

# Groupings by source started on a capture's branch stream (order_ahead),
# by their first tensor: the event the first reader waits for.
_ahead = WeakIdKeyDictionary()

SEGMENT_REDUCTIONS = ('sum', 'add', 'mean', 'max')


def _heads(value: Optional[Tensor]) -> int:
    return 1 if value is None or value.dim() == 1 else value.size(1)


def aggregate_backward(layout: TargetLayout, grad: Tensor, reduce: str,
                       value: Optional[Tensor] = None,
                       arg: Optional[Tensor] = None) -> Tensor:
    r"""The gradient in ``x`` of :func:`segment_aggregate` for the
    gradient :obj:`grad` of its output (``arg``: the forward's winners,
    ``'max'`` only)."""
    return _ops.segment_aggregate_backward(
        layout.ptr, layout.src, layout.dst, value, grad.contiguous(),
        arg if arg is not None else grad.new_empty(0, dtype=torch.long),
        layout.num_src, reduce, *_order_of(layout))


def _order_of(layout: TargetLayout) -> tuple:
    # segment_aggregate_backward's optional order arguments: the layout's
    # shared grouping by source, or none (the op sorts)
    order = layout.source_order()
    if order is None:
        return ()
    ready = _ahead.pop(order[0], None)
    if ready is not None:  # (made on the branch: wait for it, and keep its
        # memory from that stream's next allocations while this one reads)
        main = torch.cuda.current_stream(order[0].device)
        main.wait_event(ready)
        for t in order:
            t.record_stream(main)
    return order


def order_ahead(layout: TargetLayout) -> None:
    r"""Inside a branching capture (:mod:`.capture_branch`), makes
    :obj:`layout`'s grouping by source now, on the branch stream, for a
    backward that will read it. It depends on the batch alone, but made by
    its first reader it sits on the step's chain: on an H200 the sort's ten
    small kernels took ~30 us of the arXiv-like SAGE step's 0.54 ms, inside
    the last layer's input gradient. Call it in a forward (the sort then
    runs beside the forward's GEMMs); the reader waits for it
    (:func:`_order_of`). Elsewhere it does nothing."""
    branch = branch_for(layout.src)
    if branch is None:
        return
    with torch.cuda.stream(branch.fork(layout.ptr, layout.src).stream):
        order = layout.source_order()
    if order is not None and order[0] not in _ahead:
        ready = torch.cuda.Event()
        ready.record(branch.stream)
        _ahead[order[0]] = ready


def slot_value_grad(layout: TargetLayout, grad: Tensor, x: Tensor,
                    heads: int, reduce: str) -> Tensor:
    r"""``d out / d value[s] = <grad[dst[s]], x[src[s]]>`` per head (scaled
    by ``1 / count`` for ``'mean'``): ``[E, heads]`` in :obj:`x`'s dtype,
    each slot's rows read once (``fusesample::segment_slot_dot``)."""
    return _ops.segment_slot_dot(layout.ptr, layout.src,
                                 grad.to(x.dtype).contiguous(), x, heads,
                                 reduce)


def _aggregate_grads(layout: TargetLayout, grad_out: Tensor, reduce: str,
                     x: Tensor, value: Optional[Tensor], arg: Tensor,
                     need_x: bool, need_value: bool):
    r"""The gradients of :func:`segment_aggregate` in ``x`` and ``value``
    (``None`` where not needed): the backward of both its forms."""
    grad_x = grad_value = None
    if need_x:
        grad_x = aggregate_backward(layout, grad_out, reduce, value,
                                    arg if reduce == 'max' else None)
    if value is not None and need_value:
        grad_value = slot_value_grad(layout, grad_out, x, _heads(value),
                                     reduce).view_as(value)
    return grad_x, grad_value


class _SegmentAggregate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, value, layout, reduce):
        out, arg = _ops.segment_aggregate(layout.ptr, layout.src, value, x,
                                          reduce)
        ctx.layout, ctx.reduce = layout, reduce
        ctx.save_for_backward(x, value, arg)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, value, arg = ctx.saved_tensors
        grad_x, grad_value = _aggregate_grads(
            ctx.layout, grad_out, ctx.reduce, x, value, arg,
            ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        return grad_x, grad_value, None, None


@torch.library.custom_op('fusesample::layout_aggregate', mutates_args=())
def layout_aggregate(ptr: Tensor, src: Tensor, dst: Tensor,
                     value: Optional[Tensor], x: Tensor,
                     reduce: str) -> Tuple[Tensor, Tensor]:
    r"""``segment_aggregate`` over ``(ptr, src)``: ``(out, arg)``."""
    out, arg = _ops.segment_aggregate(ptr, src, value, x, reduce)
    return out, arg


@layout_aggregate.register_fake
def _(ptr, src, dst, value, x, reduce):
    return _segment_aggregate_fake(ptr, src, value, x, reduce)


def _setup(ctx, inputs, output):
    ptr, src, dst, value, x, reduce = inputs
    ctx.save_for_backward(ptr, src, dst, value, x, output[1])
    ctx.reduce, ctx.num_src = reduce, x.shape[0]
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, grad_out, _grad_arg):
    ptr, src, dst, value, x, arg = ctx.saved_tensors
    grad_x, grad_value = _aggregate_grads(
        TargetLayout(ptr, src, dst, ctx.num_src), grad_out, ctx.reduce, x,
        value, arg, ctx.needs_input_grad[4], ctx.needs_input_grad[3])
    return None, None, None, grad_value, grad_x, None


layout_aggregate.register_autograd(_backward, setup_context=_setup)


class _IndexRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, index, ptr, layout):
        ctx.save_for_backward(index, ptr)
        ctx.shape, ctx.layout = t.shape, layout
        return t.index_select(0, index)

    @staticmethod
    def backward(ctx, grad):
        index, ptr = ctx.saved_tensors
        n, E = ctx.shape[0], index.numel()
        if E == 0:
            return grad.new_zeros(ctx.shape), None, None, None
        g = grad.reshape(E, -1).contiguous()
        slots = torch.arange(E + 1, device=index.device)
        if ptr is None:
            # Each slot its own row: the backward op sums, per source row,
            # the gradients of the slots that read it, in slot order
            # (grouped by the layout's shared order where `index` is its
            # src: index_sources).
            order = () if ctx.layout is None else _order_of(ctx.layout)
            out = _ops.segment_aggregate_backward(
                slots, index, slots[:E], None, g,
                g.new_empty(0, dtype=torch.long), n, 'sum', *order)
        else:
            # The slots are grouped by row (`index` sorted, `ptr` its
            # segments): a row's gradient is the sum of its slots' rows, in
            # slot order, with no sort.
            out, _ = _ops.segment_aggregate(ptr, slots[:E], None, g, 'sum')
            if n > out.size(0):  # (rows past the last segment: no slot)
                out = torch.cat([out, out.new_zeros((n - out.size(0),
                                                     out.size(1)))])
        return out.view(ctx.shape), None, None, None


def index_rows(t: Tensor, index: Tensor,
               ptr: Optional[Tensor] = None) -> Tensor:
    r"""``t.index_select(0, index)`` whose backward sums the gradients of
    repeated rows in a fixed order (``index_select``'s ``index_add`` uses
    atomics on CUDA: its sums change from run to run). With :obj:`ptr`
    (``index`` sorted, row ``r``'s slots ``ptr[r]:ptr[r+1]``) the backward
    is a segment sum over those slots, without the sort by row."""
    return _index(t, index, ptr, None)


def _index(t: Tensor, index: Tensor, ptr: Optional[Tensor],
           layout: Optional[TargetLayout]) -> Tensor:
    if not t.requires_grad or not torch.is_grad_enabled() or \
            t.dim() == 0 or not t.is_floating_point():
        return t.index_select(0, index)
    return _IndexRows.apply(t, index, ptr, layout)


def index_sources(t: Tensor, layout: TargetLayout) -> Tensor:
    r"""``t.index_select(0, layout.src)``: each slot's source's row (``t``
    of ``layout.num_src`` rows), its backward a sum per source over the
    slots grouped by source with the layout's own order
    (:meth:`~pyg_fusesample.sparse.TargetLayout.source_order`), the one
    an aggregation over the same layout sorts for: one sort for both."""
    shared = t.dim() > 0 and t.size(0) == layout.num_src
    return _index(t, layout.src, None, layout if shared else None)


def index_targets(t: Tensor, layout: TargetLayout) -> Tensor:
    r"""``t.index_select(0, layout.dst)``: each slot's target's row, its
    backward a segment sum over the layout's own grouping by target
    (:func:`index_rows` with the layout's ``ptr``; sorted by row under
    ``torch.compile``)."""
    return index_rows(t, layout.dst, None if torch.compiler.is_compiling()
                      else layout.ptr)


def segment_aggregate(layout: TargetLayout, x: Tensor, reduce: str = 'sum',
                      value: Optional[Tensor] = None) -> Tensor:
    r"""Row ``i`` of the result reduces the rows ``x[src[s]]`` of target
    ``i``'s slots ``s`` (times ``value[s]``, per head when ``value`` is
    ``[E, heads]``): ``'sum'``, ``'mean'`` or ``'max'`` (no value); a target
    without slots gets zeros, as PyG's aggregations give.

    Args:
        layout (TargetLayout): the slots, grouped by target.
        x (Tensor): ``[layout.num_src, F]``.
        reduce (str): ``'sum'`` (``'add'``), ``'mean'`` or ``'max'``.
        value (Tensor, optional): ``[E]`` or ``[E, heads]`` slot weights in
            slot order (heads split the columns of :obj:`x` evenly).

    Returns:
        ``[layout.num_dst, F]``, differentiable in :obj:`x` and
        :obj:`value`.
    """
    reduce = check_reduce(reduce)
    if x.dim() != 2 or x.size(0) != layout.num_src:
        raise ValueError(f"segment_aggregate: 'x' must be [{layout.num_src}, F]"
                         f" (the layout's source rows), got {list(x.shape)}")
    if value is not None:
        value = value.to(x.dtype)
    if torch.compiler.is_compiling():
        # (an op with registered autograd traces; the Function costs less
        # host time per eager call)
        return layout_aggregate(layout.ptr, layout.src, layout.dst, value, x,
                                reduce)[0]
    return _SegmentAggregate.apply(x, value, layout, reduce)


def check_reduce(reduce: str) -> str:
    if reduce not in SEGMENT_REDUCTIONS:
        raise ValueError(f"segment_aggregate: 'reduce' must be one of "
                         f"{SEGMENT_REDUCTIONS}, got {reduce!r}")
    return 'sum' if reduce == 'add' else reduce


@torch.library.register_fake('fusesample::segment_aggregate')
def _segment_aggregate_fake(ptr, src, value, x, reduce='sum'):
    rows, width = ptr.shape[0] - 1, x.shape[1]
    arg_shape = (rows, width) if reduce in ('max', 'amax') else (0, )
    return x.new_empty((rows, width)), ptr.new_empty(arg_shape)


@torch.library.register_fake('fusesample::segment_slot_dot')
def _segment_slot_dot_fake(ptr, src, grad, x, heads, reduce='sum'):
    return x.new_empty((src.shape[0], heads))


@torch.library.register_fake('fusesample::segment_aggregate_backward')
def _segment_aggregate_backward_fake(ptr, src, dst, value, grad, arg, num_src,
                                     reduce, order_key=None, order_slot=None,
                                     order_ptr=None):
    return grad.new_empty((num_src, grad.shape[1]))


@torch.library.register_fake('fusesample::segment_source_order')
def _segment_source_order_fake(src, num_src):
    E = src.shape[0]
    return (src.new_empty((E, ), dtype=torch.int32),
            src.new_empty((E, ), dtype=torch.long),
            src.new_empty((num_src + 1, ), dtype=torch.long))
