"""The input of one FusedGraphSAGE layer above the first, built from the
previous layer's pre-activations with a hand-written backward that keeps the
step's transient memory to what the tree itself needs.

Layout. A layer's rows are the tree's levels stacked from the seeds outwards
(``[level 0; level 1; ...]``); the children of level-``l`` row ``p`` are the
``k_l`` consecutive level-``l+1`` rows ``p * k_l ... p * k_l + k_l - 1``, and a
padded slot (a node with fewer than ``k_l`` in-neighbours) has weight 0.

Why a Function and not autograd over torch ops: autograd keeps the
activations (``[N, C]``) for ReLU's backward, materialises the children's
``[n, k, C]`` gradient before concatenating it with the roots' one, and the
masked reduction builds an ``[n, k, C]`` temporary in the forward. Here the
ReLU runs in place on the pre-activation and only its 1-byte mask is saved,
the reduction is a batched matrix product with the slots' weights (no
temporary), and the backward writes both gradients into one ``[N, C]``
buffer. With hidden 256 and 16k tree rows that is the difference between
about 68 MB and about 35 MB of transient memory per training step.
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
        relu (bool): apply ReLU (and dropout) here, saving a bool mask.
        p (float): dropout probability (only with :obj:`relu`).

    Returns ``(out [n_parents, 2C], h)``.
    """

    @staticmethod
    def forward(ctx, z: Tensor, valid: List[Tensor], fanouts: List[int],
                aggr: str, relu: bool, p: float) -> Tuple[Tensor, Tensor]:
        N, C = z.shape
        n_parents = sum(v.size(0) for v in valid)
        expected = n_parents + valid[-1].numel() if valid else 0
        if N != expected:
            raise ValueError(f'TreeLayerInput: the tree has {expected} rows '
                             f'(levels 0..{len(valid)}), got {N}')
        mask: Optional[Tensor] = None
        if relu:
            z.relu_()
            mask = z > 0
            if p > 0:
                keep = torch.empty_like(mask).bernoulli_(1.0 - p)
                mask &= keep
                z.mul_(keep).mul_(1.0 / (1.0 - p))
                del keep
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
        ctx.save_for_backward(*(valid + args + ([mask] if relu else [])))
        ctx.layout = (N, C, fanouts, aggr, relu, p, len(valid), len(args))
        return out, z

    @staticmethod
    def backward(ctx, grad_out: Tensor, _grad_h: Optional[Tensor]):
        N, C, fanouts, aggr, relu, p, n_w, n_args = ctx.layout
        saved = ctx.saved_tensors
        valid, args = saved[:n_w], list(saved[n_w:n_w + n_args])
        n_parents = sum(v.size(0) for v in valid)
        grad = grad_out.new_zeros(N, C)
        grad[:n_parents] = grad_out[:, C:]
        row = 0
        for v, k in zip(valid, fanouts):
            n = v.size(0)
            if k > 0:
                g = grad_out[row:row + n, :C]
                children = _children(grad, row, n, k)
                if aggr == 'max':
                    g = g.masked_fill(~v.any(dim=1, keepdim=True), 0.)
                    children.scatter_add_(1, args.pop(0).unsqueeze(1),
                                          g.unsqueeze(1))
                else:
                    scale = _scale(v, aggr, g.dtype)
                    if scale is not None:
                        g = (g * scale).to(grad.dtype)
                    children.addcmul_(v.to(grad.dtype).unsqueeze(-1),
                                      g.unsqueeze(1))
            row += n
        if relu:
            grad.mul_(saved[-1])
            if p > 0:
                grad.mul_(1.0 / (1.0 - p))
        return grad, None, None, None, None, None


def _children(t: Tensor, parent_row: int, n: int, k: int) -> Tensor:
    """The ``[n, k, C]`` view of the children of the ``n`` parents whose
    level starts at :obj:`parent_row`: levels are stacked, so their level
    begins where the parents' ends."""
    start = parent_row + n
    return t[start:start + n * k].view(n, k, t.size(1))
