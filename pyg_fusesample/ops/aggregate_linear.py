r"""A SAGE layer's whole product as one autograd node:

.. math::
    \mathbf{out} = \mathrm{aggr}(\mathbf{x}) \mathbf{W}_l^{\top} + \mathbf{b}
    + \mathbf{x}_{dst} \mathbf{W}_r^{\top}

over a :class:`~pyg_fusesample.sparse.TargetLayout`, with a hand-written
backward. A mini-batch step is short enough on a GPU that its host time
(one dispatch per op, autograd's bookkeeping) sets its length; one node per
layer takes out the views, slices and accumulations autograd would record,
and the root term's input gradient is added in place into the rows of the
aggregation's (when ``x_dst`` is the first rows of ``x``, as in a trimmed
mini-batch) instead of being padded to ``x``'s shape and summed.

With ``linear_first`` (a linear ``aggr``, ``W_l`` narrowing the width) the
product is ``aggr(x W_l^T)``: the same up to rounding, fewer bytes gathered.
Under autocast the node runs in autocast's dtype (inputs cast once); wide
inputs are padded to aligned rows (see ``_width_pad``).
"""
import contextlib
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from ..sparse.target_layout import TargetLayout
from .capture_branch import Branch, branch_for
from .segment import (aggregate_backward, check_reduce, order_ahead,
                      segment_aggregate)

_ops = torch.ops.fusesample


def _root_rows(x: Tensor, x_dst: Optional[Tensor], rows: int) -> bool:
    r"""Whether :obj:`x_dst` is ``x[:rows]`` (a view of its first rows)."""
    return x_dst is not None and x_dst.dim() == 2 and x_dst.size(0) == rows \
        and x_dst.size(0) <= x.size(0) and x_dst.data_ptr() == x.data_ptr() \
        and x_dst.stride() == x.stride() and x_dst.size(1) == x.size(1) \
        and x_dst.dtype == x.dtype


# (elements from which a column sum on a GPU is a GEMM against a row of ones)
_GEMM_COLUMN_SUMS = 1 << 22


def column_sums(g: Tensor) -> Tensor:
    r"""``g.sum(0)`` of a 2-D :obj:`g` (a bias gradient), as a product with a
    row of ones where that is faster. ATen's reduction over the rows of a
    tall ``[N, F]`` tensor reads it at a fraction of the bandwidth cuBLAS's
    GEMM does (one H200, ``.lab`` probe, median of 200 calls: fp32
    ``[65536, 256]`` 77 vs 21 us, ``[200000, 256]`` 140 vs 55 us; bf16
    ``[200000, 256]`` 117 vs 30 us), while on small ones it is the faster
    single launch (fp32 ``[1024, 40]``: 9 vs 15 us); both accumulate in
    fp32. Under ``allow_tf32`` the product rounds :obj:`g` as the layer's
    other GEMMs do."""
    if g.is_cuda and g.numel() >= _GEMM_COLUMN_SUMS:
        return torch.mm(g.new_ones(1, g.size(0)), g).view(-1)
    return g.sum(0)


class _AggregateLinear(torch.autograd.Function):
    # Rows T' = layout.num_active on of the T targets have no slots: their
    # aggregation is empty (0 for every reduction), so their output is the
    # bias and the root term alone, and the aggregation and W_l's products
    # run over the first T' rows only.
    @staticmethod
    def forward(ctx, x, x_dst, weight_l, bias, weight_r, layout, reduce,
                linear_first, prefix):
        T = layout.num_dst
        active = layout.active_rows()
        need = ctx.needs_input_grad
        if need[0] or (linear_first and need[2]):  # (the backward reads the
            order_ahead(active)  # grouping by source: made beside this)
        root = x.narrow(0, 0, T) if prefix else x_dst
        arg = None
        if linear_first:
            h = torch.mm(x, weight_l.t())
            agg, _ = _ops.segment_aggregate(active.ptr, active.src, None, h,
                                            reduce)
            saved = x
        else:
            agg, arg = _ops.segment_aggregate(active.ptr, active.src, None,
                                              x, reduce)
            saved = agg
        if active.num_dst == T:
            if linear_first:
                out = agg if bias is None else agg + bias
            else:
                out = torch.mm(agg, weight_l.t()) if bias is None else \
                    torch.addmm(bias, agg, weight_l.t())
            if root is not None:  # (in place: out is this node's own; an
                # out-of-place addmm would first copy it, a kernel a layer)
                out = out.addmm_(root, weight_r.t())
        else:
            out = _root_and_bias(root, weight_r, bias, T, weight_l)
            rows = out.narrow(0, 0, active.num_dst)
            if linear_first:
                rows.add_(agg)
            else:
                rows.addmm_(agg, weight_l.t())
        ctx.layout, ctx.reduce = active, reduce
        ctx.linear_first, ctx.prefix = linear_first, prefix
        ctx.has_bias, ctx.has_root = bias is not None, root is not None
        ctx.save_for_backward(saved, root, weight_l, weight_r, arg)
        return out

    @staticmethod
    def backward(ctx, g):
        saved, root, weight_l, weight_r, arg = ctx.saved_tensors
        layout, reduce = ctx.layout, ctx.reduce
        need_x, need_xd, need_wl, need_b, need_wr = ctx.needs_input_grad[:5]
        g = g.contiguous()
        g_active = g.narrow(0, 0, layout.num_dst)  # (rows with slots)
        grad_x = grad_xd = grad_wl = grad_b = grad_wr = None
        # The parameters' gradients read only g and saved inputs, and no
        # later kernel of this backward reads them: in our captures they run
        # on a second stream beside the input gradient's (capture_branch).
        branch = branch_for(g)
        # Without an input gradient (a first layer: x needs none) the
        # current stream would wait idle for the branch: it takes W_r's GEMM,
        # beside W_l's on the branch (small GEMMs fill few of the SMs; one
        # H200, arXiv-like fp32 captured step 1.02-1.03x, products-like
        # 0.99-1.01x: docs/minibatch_layers.md).
        wr_here = branch is not None and need_wr and ctx.has_root and not (
            need_x or need_xd or ctx.linear_first)
        with _on(branch, g, root, None if ctx.linear_first else saved):
            if need_b and ctx.has_bias:
                grad_b = column_sums(g)
            if need_wr and ctx.has_root and not wr_here:
                grad_wr = torch.mm(g.t(), root)
            if need_wl and not ctx.linear_first:
                grad_wl = torch.mm(g_active.t(), saved)
        if wr_here:
            grad_wr = torch.mm(g.t(), root)
        if ctx.linear_first:
            if need_x or need_wl:
                dh = aggregate_backward(layout, g_active, reduce)
                grad_wl = torch.mm(dh.t(), saved) if need_wl else None
                grad_x = torch.mm(dh, weight_l) if need_x else None
        else:
            if need_x:
                grad_x = aggregate_backward(
                    layout, torch.mm(g_active, weight_l), reduce, arg=arg)
        if ctx.has_root and ctx.prefix and need_x:
            rows = grad_x.narrow(0, 0, g.size(0))
            rows.addmm_(g.to(rows.dtype), weight_r.to(rows.dtype))
        elif ctx.has_root and need_xd:
            grad_xd = torch.mm(g, weight_r)
        if branch is not None:
            branch.join(grad_b, None if wr_here else grad_wr,
                        None if ctx.linear_first else grad_wl)
        return (grad_x, grad_xd, grad_wl, grad_b, grad_wr, None, None, None,
                None)


def _on(branch: Optional[Branch], *reads: Optional[Tensor]):
    # The branch's stream (forked after the current one, reading `reads`),
    # or nothing to do.
    if branch is None:
        return contextlib.nullcontext()
    return torch.cuda.stream(branch.fork(*reads).stream)


def _root_and_bias(root: Optional[Tensor], weight_r: Optional[Tensor],
                   bias: Optional[Tensor], rows: int,
                   like: Tensor) -> Tensor:
    # [rows, F_out]: x_dst W_r^T + b, or the terms there are (zeros: none).
    if root is not None:
        return torch.mm(root, weight_r.t()) if bias is None else \
            torch.addmm(bias, root, weight_r.t())
    out = like.new_zeros((rows, like.size(0)))
    return out if bias is None else out.add_(bias)


def aggregate_linear(layout: TargetLayout, x: Tensor, reduce: str,
                     weight_l: Tensor, bias: Optional[Tensor] = None,
                     x_dst: Optional[Tensor] = None,
                     weight_r: Optional[Tensor] = None,
                     linear_first: bool = False) -> Tensor:
    r"""``aggr(x) W_l^T + b + x_dst W_r^T`` over :obj:`layout` (rows: its
    targets), differentiable in every tensor argument.

    Args:
        layout (TargetLayout): the slots, grouped by target.
        x (Tensor): ``[layout.num_src, F_in]``.
        reduce (str): ``'sum'`` / ``'add'``, ``'mean'`` or ``'max'``.
        weight_l (Tensor): ``[F_out, F_in]``; :obj:`bias` ``[F_out]``.
        x_dst (Tensor, optional): ``[layout.num_dst, F_root]``, with
            :obj:`weight_r` ``[F_out, F_root]`` (no root term without it).
        linear_first (bool): compute ``aggr(x W_l^T)`` (not with
            ``'max'``).
    """
    reduce = check_reduce(reduce)
    if x.dim() != 2 or x.size(0) != layout.num_src:
        raise ValueError(f"aggregate_linear: 'x' must be [{layout.num_src}, "
                         f"F] (the layout's source rows), got "
                         f"{list(x.shape)}")
    if linear_first and reduce == 'max':
        raise ValueError("aggregate_linear: 'max' does not commute with the "
                         "linear map (linear_first=False)")
    if x_dst is not None and x_dst.size(0) != layout.num_dst:
        raise ValueError(f"aggregate_linear: 'x_dst' has {x_dst.size(0)} rows "
                         f"but the layout has {layout.num_dst} targets")
    if torch.compiler.is_compiling():
        return _traced(layout, x, reduce, weight_l, bias, x_dst, weight_r,
                       linear_first)
    prefix = _root_rows(x, x_dst, layout.num_dst) and weight_r is not None
    if x_dst is None:
        weight_r = None
    elif prefix:  # x's first rows: read through x
        x_dst = None
    device = x.device.type
    autocast = device in ('cuda', 'cpu') and \
        torch.is_autocast_enabled(device)
    # Under autocast, autocast's dtype once, here: the node then runs
    # (forward and backward) in it with no cast per GEMM; the casts of the
    # fp32 parameters are differentiable, so their gradients come back fp32.
    dtype = torch.get_autocast_dtype(device) if autocast else x.dtype
    pad = _width_pad(x, x_dst, dtype) if autocast or x.is_cuda else 0
    if autocast or pad:
        x, x_dst = (None if t is None else _cast(t, dtype, pad)
                    for t in (x, x_dst))
        weight_l, bias, weight_r = (
            None if t is None else t.to(dtype)
            for t in (weight_l, bias, weight_r))
        if pad:
            weight_l = F.pad(weight_l, (0, pad))
            weight_r = None if weight_r is None else F.pad(weight_r,
                                                           (0, pad))
    if autocast:
        with torch.autocast(device, enabled=False):
            return _AggregateLinear.apply(x, x_dst, weight_l, bias,
                                          weight_r, layout, reduce,
                                          linear_first, prefix)
    return _AggregateLinear.apply(x, x_dst, weight_l, bias, weight_r, layout,
                                  reduce, linear_first, prefix)


# GEMMs whose rows are not a multiple of 16 bytes run cuBLAS's slow
# unaligned kernels (a 602-wide Reddit row: "align2" tensor-core kernels in
# bf16, "align1" SIMT ones in fp32: a third of the fp32 Reddit-like step).
# So on a GPU (and under autocast anywhere) a wide x (and x_dst) is copied
# into rows padded with zero columns to 16 bytes -- in the copy autocast's
# cast makes anyway, else one copy of x (a read and a write of x, against
# the GEMMs' several passes over it) -- and W's input width is padded with
# zeros too: the products are the unpadded ones (zero terms); the pads'
# gradients are dropped by the backward of the copy and of F.pad.
_ALIGN_BYTES = 16


def _width_pad(x: Tensor, x_dst: Optional[Tensor], dtype) -> int:
    # Zero columns to add: widths of 64 and more (a narrow input's GEMMs
    # are cheap), x_dst (if any) of x's width.
    F_in = x.size(1)
    if F_in < 64 or (x_dst is not None and x_dst.size(1) != F_in):
        return 0
    return -F_in % max(1, _ALIGN_BYTES * 8 // torch.finfo(dtype).bits)


def _cast(t: Tensor, dtype, pad: int) -> Tensor:
    # t in `dtype`, `pad` zero columns after its own: one copy
    # (differentiable: the gradient of t is the first columns').
    if pad == 0:
        return t.to(dtype)
    out = t.new_empty((t.size(0), t.size(1) + pad), dtype=dtype)
    out[:, t.size(1):] = 0
    out[:, :t.size(1)] = t
    return out


def _traced(layout: TargetLayout, x: Tensor, reduce: str, weight_l: Tensor,
            bias: Optional[Tensor], x_dst: Optional[Tensor],
            weight_r: Optional[Tensor], linear_first: bool) -> Tensor:
    # Under torch.compile: the same product from traceable ops (the
    # compiler fuses what the hand-written node fuses eagerly).
    if linear_first:
        out = segment_aggregate(layout, torch.mm(x, weight_l.t()), reduce)
        out = out if bias is None else out + bias
    else:
        out = F.linear(segment_aggregate(layout, x, reduce), weight_l, bias)
    if x_dst is None or weight_r is None:
        return out
    return out + F.linear(x_dst, weight_r)
