"""Aggregation over a mini-batch's edges grouped by target, differentiable:
the op behind the mini-batch layers (``pyg_fusesample.nn.SAGEConv`` ...).

``torch.ops.fusesample.segment_aggregate`` (contract:
``kernels/segment/segment_aggregate.cpp``) reduces each target's slots of a
:class:`~pyg_fusesample.sparse.TargetLayout`. Gradients, all without
atomics (deterministic) and without a host synchronisation:

* ``x`` ('sum' / 'mean'): the same op over the transposed layout (slots
  grouped by source), the incoming gradient scaled by ``1 / degree`` for
  'mean' and weighted by the slot values;
* ``x`` ('max'): ``segment_max_backward``, each source collecting the
  gradient of the elements its slots won;
* the slot values: ``<grad[dst], x[src]>`` per head (an SDDMM).
"""
from typing import Optional

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from ..sparse.target_layout import TargetLayout

_ops = torch.ops.fusesample

SEGMENT_REDUCTIONS = ('sum', 'add', 'mean', 'max')


def _heads(value: Optional[Tensor]) -> int:
    return 1 if value is None or value.dim() == 1 else value.size(1)


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
        layout, reduce = ctx.layout, ctx.reduce
        grad_out = grad_out.contiguous()
        grad_x = grad_value = None
        if reduce == 'max':
            if ctx.needs_input_grad[0]:
                ptr_t, dst_t, slot_t = layout.transposed()
                grad_x = _ops.segment_max_backward(ptr_t, dst_t, slot_t, arg,
                                                   grad_out, layout.num_src)
            return grad_x, None, None, None
        if reduce == 'mean':
            deg = layout.degree().clamp_min(1).to(grad_out.dtype)
            grad_out = grad_out / deg.unsqueeze(-1)
        if ctx.needs_input_grad[0]:
            ptr_t, dst_t, slot_t = layout.transposed()
            value_t = None if value is None else value.index_select(0, slot_t)
            grad_x, _ = _ops.segment_aggregate(ptr_t, dst_t, value_t, grad_out,
                                               'sum')
        if value is not None and ctx.needs_input_grad[1]:
            heads = _heads(value)
            g = grad_out.view(grad_out.size(0), heads, -1)
            xs = x.view(x.size(0), heads, -1)
            grad_value = (g.index_select(0, layout.dst) *
                          xs.index_select(0, layout.src)).sum(-1)
            grad_value = grad_value.view_as(value)
        return grad_x, grad_value, None, None


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
    if reduce not in SEGMENT_REDUCTIONS:
        raise ValueError(f"segment_aggregate: 'reduce' must be one of "
                         f"{SEGMENT_REDUCTIONS}, got {reduce!r}")
    if x.dim() != 2 or x.size(0) != layout.num_src:
        raise ValueError(f"segment_aggregate: 'x' must be [{layout.num_src}, F]"
                         f" (the layout's source rows), got {list(x.shape)}")
    reduce = 'sum' if reduce == 'add' else reduce
    if value is not None:
        value = value.to(x.dtype)
    return _SegmentAggregate.apply(x, value, layout, reduce)


@torch.library.register_fake('fusesample::segment_aggregate')
def _segment_aggregate_fake(ptr, src, value, x, reduce='sum'):
    rows, width = ptr.shape[0] - 1, x.shape[1]
    arg_shape = (rows, width) if reduce in ('max', 'amax') else (0, )
    return x.new_empty((rows, width)), ptr.new_empty(arg_shape)


@torch.library.register_fake('fusesample::segment_max_backward')
def _segment_max_backward_fake(ptr_t, dst_t, slot_t, arg, grad, num_src):
    return grad.new_empty((num_src, grad.shape[1]))
