"""FusedGraphSAGE's first-layer transform, ``agg W_l^T + x[nodes] W_r^T + b``,
without keeping the gathered root rows ``x[nodes]`` alive until the backward.

Autograd over ``lin_l(agg) + lin_r(x[nodes])`` saves both GEMM inputs (and
holds both ``[N, H]`` products next to their sum). Here the product is
accumulated in one ``[N, H]`` buffer, and the gather -- a cheap read of a
tensor that stays resident anyway -- is redone in the backward, where the
weight gradient needs it. Only ``agg`` and the row ids are saved. The
gather runs in chunks of rows, so under autocast neither the
full-precision gathered rows nor their cast copy exist at full size.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor

# Rows gathered (and cast) at a time: 8192 x 100 float32 features = 3.3 MB
# of temporaries instead of the whole layer's; a handful of chunks per batch.
GATHER_CHUNK_ROWS = 8192


def _chunks(n: int):
    for start in range(0, n, GATHER_CHUNK_ROWS):
        yield slice(start, min(start + GATHER_CHUNK_ROWS, n))


class GatherLinear(torch.autograd.Function):
    r"""``z = agg @ w_l.T + x[nodes].to(agg.dtype) @ w_r.T + bias``.

    Computes in ``agg``'s dtype (the caller casts it, e.g. to autocast's);
    the weights are cast to it, and their gradients are returned in their
    own dtype (with a low-precision ``agg``, ``w_r``'s gradient adds up one
    low-precision product per chunk). ``x`` may require grad (learnable
    embeddings): its gradient is scattered to the gathered rows (repeats
    accumulate).
    """

    @staticmethod
    def forward(ctx, agg: Tensor, x: Tensor, nodes: Tensor, w_l: Tensor,
                w_r: Tensor, bias: Optional[Tensor]) -> Tensor:
        dtype = agg.dtype
        with torch.autocast(agg.device.type, enabled=False):
            b = bias.to(dtype) if bias is not None else None
            z = (torch.addmm(b, agg, w_l.to(dtype).t()) if b is not None
                 else agg @ w_l.to(dtype).t())
            w_r_t = w_r.to(dtype).t()
            for rows in _chunks(nodes.numel()):
                z[rows].addmm_(x[nodes[rows]].to(dtype), w_r_t)
        ctx.save_for_backward(agg, x, nodes, w_l, w_r)
        ctx.bias_dtype = bias.dtype if bias is not None else None
        return z

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tuple[Optional[Tensor], ...]:
        agg, x, nodes, w_l, w_r = ctx.saved_tensors
        need_agg, need_x, _, need_wl, need_wr, need_b = ctx.needs_input_grad
        dtype = agg.dtype
        grad = grad.to(dtype)
        g_agg = g_x = g_wl = g_wr = g_b = None
        with torch.autocast(grad.device.type, enabled=False):
            if need_wl:
                g_wl = (grad.t() @ agg).to(w_l.dtype)
            if need_wr:  # the gather again, chunk by chunk
                g_wr = torch.zeros_like(w_r)
                for rows in _chunks(nodes.numel()):
                    g_wr += grad[rows].t() @ x[nodes[rows]].to(dtype)
            if need_b:  # a [1, N] x [N, H] product: on CUDA, sum(0) over
                # this shape stages ~32 MB in its reduction buffer
                g_b = (grad.new_ones(1, grad.size(0)) @ grad).view(-1).to(
                    ctx.bias_dtype)
            if need_agg:
                g_agg = grad @ w_l.to(dtype)
            if need_x:
                rows = (grad @ w_r.to(dtype)).to(x.dtype)
                # what autograd does for x[nodes] (index_put accumulate)
                g_x = torch.zeros_like(x).index_put_((nodes,), rows,
                                                     accumulate=True)
        return g_agg, g_x, None, g_wl, g_wr, g_b
