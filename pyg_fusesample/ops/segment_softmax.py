"""PyG's attention softmax over each target's slots and its self-loop, as
one op forward and one backward (``fusesample::segment_softmax``, contract:
``kernels/segment/segment_softmax.cpp``): the op behind
``pyg_fusesample.nn.GATConv``'s eager path, where composed of PyTorch ops it
was a dozen launches (and host dispatches) over ``[E, heads]`` each way.
"""
from typing import Tuple

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


class _SegmentSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, score, self_score, ptr):
        alpha, alpha_self = _ops.segment_softmax(ptr, score, self_score)
        ctx.save_for_backward(ptr, alpha, alpha_self)
        return alpha, alpha_self

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, grad_self):
        ptr, alpha, alpha_self = ctx.saved_tensors
        grad_score, grad_self_score = _ops.segment_softmax_backward(
            ptr, alpha, alpha_self, grad.contiguous(), grad_self.contiguous())
        return grad_score, grad_self_score, None


def segment_softmax(ptr: Tensor, score: Tensor,
                    self_score: Tensor) -> Tuple[Tensor, Tensor]:
    r"""Per target row ``r`` (its slots ``ptr[r]:ptr[r+1]``) and head:

    .. math::
        \alpha_s = \frac{\exp(s - m)}{\sum_{s' \in r} \exp(s' - m)
        + [r < L] \exp(s_r^{self} - m) + 10^{-16}}

    with ``m`` the row's largest score (its self-loop's included; 0 when
    all are ``-inf``, which weigh 0), and the self-loop's the same way:
    PyG's ``softmax`` over a target's edges plus its self-loop.

    Args:
        ptr (Tensor): ``[R + 1]`` int64, a :class:`~pyg_fusesample.sparse.
            TargetLayout`'s ``ptr``.
        score (Tensor): ``[E, heads]`` slot scores, in slot order.
        self_score (Tensor): ``[L, heads]``, the self-loops' scores of the
            first ``L <= R`` rows (``L = 0``: none).

    Returns:
        ``(alpha [E, heads], alpha_self [L, heads])``, differentiable in
        both scores; sums in float32 for 16-bit scores.
    """
    return _SegmentSoftmax.apply(score, self_score, ptr)


@torch.library.register_fake('fusesample::segment_softmax')
def _segment_softmax_fake(ptr, score, self_score):
    return torch.empty_like(score), torch.empty_like(self_score)


@torch.library.register_fake('fusesample::segment_softmax_backward')
def _segment_softmax_backward_fake(ptr, alpha, alpha_self, grad, grad_self):
    return torch.empty_like(alpha), torch.empty_like(alpha_self)
