"""The input of one FusedGraphSAGE layer above the first, built from the
previous layer's pre-activations with a hand-written backward that keeps the
step's transient memory to what the tree itself needs.

Layout. A layer's rows are the tree's levels stacked from the seeds outwards
(``[level 0; level 1; ...]``); the children of level-``l`` row ``p`` are the
``k_l`` consecutive level-``l+1`` rows ``p * k_l ... p * k_l + k_l - 1``, and a
padded slot (a node with fewer than ``k_l`` in-neighbours) has weight 0.

Why a Function and not autograd over torch ops: autograd keeps the
activations (``[N, C]``) for ReLU's backward next to a fresh gradient buffer,
materialises the children's ``[n, k, C]`` gradient before concatenating it
with the roots' one, and the masked reduction builds an ``[n, k, C]``
temporary in the forward. Here the ReLU runs in place on the pre-activation,
the reduction is a batched matrix product with the slots' 0/1 weights (no
temporary), and the backward turns the saved activation into the gradient in
place (its sign is the ReLU/dropout mask), so one ``[N, C]`` buffer serves
both. Together with :class:`~pyg_fusesample.nn.gather_linear.GatherLinear`
this took a products-sized step (hidden 256, 16k tree rows) from 68 MB to
29 MB of transient memory on an H200.
"""
from typing import List, Optional, Sequence, Tuple

import torch
from torch import Tensor


def child_slots(levels: Sequence[Tensor],
                fanouts: Sequence[int]) -> List[Tensor]:
    r"""Per parent level ``l``, which of its ``[n_l, k_l]`` child slots hold a
    node (``False``: a padded slot)."""
    return [(child >= 0).view(parent.numel(), k)
            for parent, child, k in zip(levels, levels[1:], fanouts)]


def _scale(valid: Tensor, aggr: str, dtype: torch.dtype) -> Optional[Tensor]:
    # mean's 1 / #children, in float32 at least (bf16 would bias it by ~0.3%)
    if aggr != 'mean':
        return None
    count = valid.sum(dim=1, keepdim=True).clamp_min(1)
    return count.reciprocal().to(torch.promote_types(dtype, torch.float32))


class TreeLayerInput(torch.autograd.Function):
    r"""``[aggr_{c in children(v)} h_c  |  h_v]`` for every parent row ``v``
    of the tree, where ``h = dropout(relu(z))`` if :obj:`relu` else ``h = z``.

    Args (of :meth:`apply`):
        z (Tensor): ``[N, C]``, the rows of levels ``0 .. m-1``. With
            :obj:`relu` it is the previous layer's pre-activation and is
            overwritten in place by the activation (it is returned as the
            second output, marked dirty, for autograd's bookkeeping).
        valid (List[Tensor]): :func:`child_slots` of levels ``0 .. m-2``.
        fanouts (List[int]): ``k_0 .. k_{m-2}``.
        aggr (str): ``"mean"``, ``"sum"`` or ``"max"``.
        relu (bool): apply ReLU (and dropout) here; the activation is saved
            and becomes the gradient in the backward.
        p (float): dropout probability (only with :obj:`relu`).
        inplace_backward (bool): with :obj:`relu`, the backward overwrites
            the saved activation with the gradient (no extra buffer); the
            graph then cannot be differentiated twice. ``False`` copies it
            first (for ``retain_graph=True``, e.g. gradcheck).

    Returns ``(out [n_parents, 2C], h)``.
    """

    @staticmethod
    def forward(ctx, z: Tensor, valid: List[Tensor], fanouts: List[int],
                aggr: str, relu: bool, p: float,
                inplace_backward: bool = True) -> Tuple[Tensor, Tensor]:
        # The second output (the activation) is never differentiated; without
        # this autograd would hand backward an [N, C] tensor of zeros for it.
        ctx.set_materialize_grads(False)
        N, C = z.shape
        n_parents = sum(v.size(0) for v in valid)
        expected = n_parents + valid[-1].numel() if valid else 0
        if N != expected:
            raise ValueError(f'TreeLayerInput: the tree has {expected} rows '
                             f'(levels 0..{len(valid)}), got {N}')
        if relu:
            z.relu_()
            if p > 0:
                z.mul_(torch.empty_like(z, dtype=torch.bool).bernoulli_(1.0 - p))
                z.mul_(1.0 / (1.0 - p))
            ctx.mark_dirty(z)
        out = z.new_empty(n_parents, 2 * C)
        out[:, C:] = z[:n_parents]
        args = []
        row = 0  # first row of the current parent level
        for v, k in zip(valid, fanouts):
            n = v.size(0)
            children = _children(z, row, n, k)
            agg = out[row:row + n, :C]
            if k == 0:
                agg.zero_()
            elif aggr == 'max':
                masked = children.masked_fill(~v.unsqueeze(-1), float('-inf'))
                val, arg = masked.max(dim=1)
                del masked
                agg.copy_(val.masked_fill_(~v.any(dim=1, keepdim=True), 0.))
                args.append(arg)
            else:  # a [1, k] x [k, C] product per parent: no [n, k, C] temporary
                total = torch.bmm(v.to(z.dtype).unsqueeze(1), children)
                scale = _scale(v, aggr, z.dtype)
                agg.copy_(total.squeeze(1) if scale is None
                          else total.squeeze(1) * scale)
            row += n
        # With the ReLU the activation itself is saved: its sign is the
        # ReLU/dropout mask, and the backward turns it into the gradient in
        # place (no mask, no second [N, C] buffer).
        ctx.save_for_backward(*(valid + args + ([z] if relu else [])))
        ctx.layout = (N, C, fanouts, aggr, relu, p, len(valid), len(args))
        ctx.consumed = False
        ctx.inplace_backward = inplace_backward
        return out, z

    @staticmethod
    def backward(ctx, grad_out: Optional[Tensor], grad_h: Optional[Tensor]):
        N, C, fanouts, aggr, relu, p, n_w, n_args = ctx.layout
        if ctx.consumed:
            raise RuntimeError(
                'TreeLayerInput: a second backward through the same graph '
                '(retain_graph=True) needs inplace_backward=False: the first '
                'one turned the saved activation into its gradient')
        if grad_out is None and grad_h is None:
            return (None,) * 7
        saved = ctx.saved_tensors
        valid, args = saved[:n_w], list(saved[n_w:n_w + n_args])
        if not relu:
            grad = (_grad(grad_out, N, C, valid, fanouts, aggr, args)
                    if grad_out is not None else torch.zeros_like(grad_h))
            return (grad if grad_h is None else grad + grad_h,) + (None,) * 6
        h = saved[-1]
        if ctx.inplace_backward:
            ctx.consumed = True
        else:
            h = h.clone()
        if grad_h is None:  # the lean path the model takes
            grad = _masked_grad(h, grad_out, valid, fanouts, aggr, args)
        else:
            upstream = (_grad(grad_out, N, C, valid, fanouts, aggr, args)
                        if grad_out is not None else 0)
            grad = h.sign_().mul_(upstream + grad_h)
        if p > 0:
            grad.mul_(1.0 / (1.0 - p))
        return (grad,) + (None,) * 6


def _parent_grad(grad_out: Tensor, row: int, v: Tensor, aggr: str) -> Tensor:
    """The gradient of one parent level's aggregations, ``[n, C]``, with
    mean's scale applied (max: zero for parents without children)."""
    C = grad_out.size(1) // 2
    g = grad_out[row:row + v.size(0), :C]
    if aggr == 'max':
        return g.masked_fill(~v.any(dim=1, keepdim=True), 0.)
    scale = _scale(v, aggr, g.dtype)
    return g if scale is None else (g * scale).to(grad_out.dtype)


def _grad(grad_out: Tensor, N: int, C: int, valid, fanouts, aggr: str,
          args: List[Tensor]) -> Tensor:
    # Without a ReLU here: roots' and children's gradients summed into one
    # zero-initialised buffer.
    n_parents = sum(v.size(0) for v in valid)
    grad = grad_out.new_zeros(N, C)
    grad[:n_parents] = grad_out[:, C:]
    row = 0
    for v, k in zip(valid, fanouts):
        n = v.size(0)
        if k > 0:
            g = _parent_grad(grad_out, row, v, aggr)
            children = _children(grad, row, n, k)
            if aggr == 'max':
                children.scatter_add_(1, args.pop(0).unsqueeze(1),
                                      g.unsqueeze(1))
            else:
                children.addcmul_(v.to(grad.dtype).unsqueeze(-1),
                                  g.unsqueeze(1))
        row += n
    return grad


def _masked_grad(h: Tensor, grad_out: Tensor, valid, fanouts, aggr: str,
                 args: List[Tensor]) -> Tensor:
    # h = relu(z) (times dropout's keep / (1 - p)) becomes its mask in place
    # (sign: 1 where it passed, 0 elsewhere), then each level's rows are
    # multiplied by their upstream gradient: a root's, a child's, or for the
    # middle levels of a deeper tree (children that are parents too) their
    # sum -- the only place a temporary of a level's size is needed.
    C = h.size(1)
    grad = h.sign_()
    n0 = valid[0].size(0)
    grad[:n0].mul_(grad_out[:n0, C:])
    row = 0
    for level, (v, k) in enumerate(zip(valid, fanouts)):
        n = v.size(0)
        if k > 0:
            g = _parent_grad(grad_out, row, v, aggr)
            children = _children(grad, row, n, k)
            also_parents = level + 1 < len(valid)
            roots = (_children(grad_out[:, C:], row, n, k)
                     if also_parents else None)
            if aggr == 'max':
                upstream = torch.zeros_like(children).scatter_(
                    1, args.pop(0).unsqueeze(1), g.unsqueeze(1))
                if roots is not None:
                    upstream += roots
                children.mul_(upstream)
            elif roots is not None:
                children.mul_(torch.addcmul(roots, v.to(g.dtype).unsqueeze(-1),
                                            g.unsqueeze(1)))
            else:
                children.mul_(g.unsqueeze(1)).mul_(
                    v.to(g.dtype).unsqueeze(-1))
        row += n
    return grad


def _children(t: Tensor, parent_row: int, n: int, k: int) -> Tensor:
    """The ``[n, k, C]`` view of the children of the ``n`` parents whose
    level starts at :obj:`parent_row`: levels are stacked, so their level
    begins where the parents' ends."""
    start = parent_row + n
    return t[start:start + n * k].view(n, k, t.size(1))
