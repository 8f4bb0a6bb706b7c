"""Node2Vec's skip-gram loss over a table of embeddings, in one op:
``torch.ops.fusesample.skipgram_loss`` (contract:
``kernels/embedding/skipgram_loss.cpp``). This module adds the fake kernels,
the autograd formula and the Python entry point.
"""
import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


def skipgram_loss(h: Tensor, pos: Tensor, neg: Tensor, eps: float = 1e-15,
                  check_index: bool = True) -> Tensor:
    r"""The loss of :class:`torch_geometric.nn.Node2Vec` (skip-gram with
    negative sampling) over the rows of :obj:`h`:

    .. math::
        \mathcal{L} = -\frac{1}{|P|} \sum_{(u, v) \in P}
        \log\left(\sigma(\mathbf{h}_u^{\top} \mathbf{h}_v) + \epsilon\right)
        - \frac{1}{|N|} \sum_{(u, v) \in N}
        \log\left(1 - \sigma(\mathbf{h}_u^{\top} \mathbf{h}_v) + \epsilon
        \right),

    where the pairs :math:`P` (:math:`N`) are ``(w[0], w[j])``, ``j >= 1``,
    of every row ``w`` of :obj:`pos` (:obj:`neg`). Each row of :obj:`h` is
    read in place: PyG's ``loss`` gathers a copy of :obj:`h` per pair and
    its backward a sparse gradient of as many rows.

    Args:
        h (Tensor): ``[U, D]`` embeddings (float64, float32, float16 or
            bfloat16; sums in float, or double for float64).
        pos (Tensor), neg (Tensor): ``[W, C]`` int64 rows of :obj:`h`, one
            window per row, its start first (what ``Node2Vec.pos_sample`` and
            ``neg_sample`` return, as rows of :obj:`h`).
        eps (float): as ``Node2Vec.EPS``.
        check_index (bool): raise for ids outside ``[0, U)`` (on CUDA a host
            synchronisation); ``False`` when the caller guarantees them.

    Returns:
        A 0-dim tensor of :obj:`h`'s dtype, differentiable in :obj:`h`. On
        CUDA the gradient is scattered with atomics, so its last bits may
        differ between runs (as ``index_add_``'s do); the CPU's is
        deterministic.
    """
    return _ops.skipgram_loss(h, pos, neg, float(eps), bool(check_index))


@torch.library.register_fake('fusesample::skipgram_loss')
def _skipgram_loss_fake(h, pos, neg, eps=1e-15, check_index=True):
    return h.new_empty(())


@torch.library.register_fake('fusesample::skipgram_loss_backward')
def _skipgram_loss_backward_fake(grad, h, pos, neg, eps=1e-15):
    return torch.empty_like(h)


def _setup_context(ctx, inputs, output):
    h, pos, neg, eps, _check = inputs
    ctx.save_for_backward(h, pos, neg)
    ctx.eps = eps


def _backward(ctx, grad):
    h, pos, neg = ctx.saved_tensors
    grad_h = None
    if ctx.needs_input_grad[0]:
        grad_h = _ops.skipgram_loss_backward(grad, h, pos, neg, ctx.eps)
    return grad_h, None, None, None, None


torch.library.register_autograd('fusesample::skipgram_loss', _backward,
                                setup_context=_setup_context)
