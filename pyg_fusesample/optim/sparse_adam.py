"""``FusedSparseAdam``: ``torch.optim.SparseAdam`` with one op a parameter."""
import warnings

import torch
from torch import Tensor

from ..ops.sparse_adam import sparse_adam_, sparse_adam_step_size


class FusedSparseAdam(torch.optim.SparseAdam):
    r"""A drop-in for :class:`torch.optim.SparseAdam` (the optimizer of
    PyG's ``Node2Vec`` example and of any ``nn.Embedding(sparse=True)``):
    same arguments, same state (``step``, ``exp_avg``, ``exp_avg_sq``), the
    same arithmetic, but each parameter's update is one op,
    :func:`pyg_fusesample.ops.sparse_adam_`, that reads and writes each of
    the gradient's rows once. Torch's runs a dozen tensor ops a parameter
    (two ``sparse_mask`` lookups, the moment updates, three sparse adds
    into dense tensors): 8.4 ms of a 17.9 ms FusedNode2Vec step on the
    products-like graph (H200), most of it passes over the rows.

    The moments are torch's bit for bit, the parameters too on CUDA; on the
    CPU torch's vectorised square root is not correctly rounded (in float32
    about a fifth of its results are one ulp off the IEEE one, which the op
    computes; in float64 about 1%), so a parameter there may differ from
    torch's in its last bit.

    The gradient is coalesced first, as torch's is (the update is not
    linear, so a row must appear once). Parameters the op does not take
    (dtypes other than float32 and float64, non-contiguous tensors, sparse
    gradients over more than the first dimension) are updated by torch's
    own ``sparse_adam``, with a warning the first time.

    Args:
        params (iterable): parameters to optimize (dense, with sparse
            gradients).
        lr (float, Tensor, optional): learning rate (default: :obj:`1e-3`).
        betas (Tuple[float, float], optional): coefficients of the running
            averages of the gradient and its square
            (default: :obj:`(0.9, 0.999)`).
        eps (float, optional): added to the denominator
            (default: :obj:`1e-8`).
        maximize (bool, optional): maximize the objective
            (default: :obj:`False`).
    """
    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group['betas']
            lr = group['lr']
            lr = lr.item() if isinstance(lr, Tensor) else lr
            for p in group['params']:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError(
                        'SparseAdam does not support dense gradients, please '
                        'consider Adam instead')
                state = self._state_of(p)
                state['step'] += 1
                self._update(p, state, lr, beta1, beta2, group['eps'],
                             group['maximize'])
        return loss

    def _state_of(self, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:  # torch's layout, so state dicts carry over
            state['step'] = 0
            state['exp_avg'] = torch.zeros_like(
                p, memory_format=torch.preserve_format)
            state['exp_avg_sq'] = torch.zeros_like(
                p, memory_format=torch.preserve_format)
        return state

    def _update(self, p: Tensor, state: dict, lr: float, beta1: float,
                beta2: float, eps: float, maximize: bool) -> None:
        m, v = state['exp_avg'], state['exp_avg_sq']
        grad = p.grad
        if not _fused_takes(p, m, v, grad):
            _warn_unfused(p, grad)
            torch.optim._functional.sparse_adam(
                [p], [grad], [m], [v], [state['step']], eps=eps, beta1=beta1,
                beta2=beta2, lr=lr, maximize=maximize)
            return
        grad = grad.coalesce()
        if grad._values().numel() == 0:  # (torch skips an empty gradient)
            return
        sparse_adam_(p, m, v, grad._indices()[0], grad._values(),
                     sparse_adam_step_size(lr, beta1, beta2, state['step']),
                     beta1, beta2, eps, maximize)


def _fused_takes(p: Tensor, m: Tensor, v: Tensor, grad: Tensor) -> bool:
    return (p.dtype in (torch.float32, torch.float64) and p.dim() >= 1
            and grad.sparse_dim() == 1 and grad.dtype == p.dtype
            and all(t.is_contiguous() for t in (p, m, v)))


def _warn_unfused(p: Tensor, grad: Tensor) -> None:
    # (the warnings filter shows each distinct message once)
    warnings.warn(
        f'FusedSparseAdam: a parameter of dtype {p.dtype}, shape '
        f'{tuple(p.shape)} (contiguous: {p.is_contiguous()}) with a gradient '
        f'sparse over {grad.sparse_dim()} dimensions is updated by torch\'s '
        f'sparse_adam (the fused op takes contiguous float32/float64 '
        f'parameters with row-sparse gradients)', RuntimeWarning)
