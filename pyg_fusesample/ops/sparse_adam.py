"""One :class:`torch.optim.SparseAdam` step for one parameter, in one pass:
``torch.ops.fusesample.sparse_adam_`` (contract:
``kernels/optim/sparse_adam.cpp``). This module adds the fake kernel and the
Python entry point; :class:`pyg_fusesample.optim.FusedSparseAdam` is the
optimizer."""
import math

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)


def sparse_adam_step_size(lr: float, beta1: float, beta2: float,
                          step: int) -> float:
    r"""Torch's bias-corrected step size after :obj:`step` steps,
    :math:`\mathrm{lr} \sqrt{1 - \beta_2^t} / (1 - \beta_1^t)`, computed in
    the same order (so the update matches torch's bit for bit)."""
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    return lr * math.sqrt(bias_correction2) / bias_correction1


def sparse_adam_(param: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
                 rows: Tensor, values: Tensor, step_size: float, beta1: float,
                 beta2: float, eps: float, maximize: bool = False) -> None:
    r"""Updates :obj:`param` and its moments :obj:`exp_avg`,
    :obj:`exp_avg_sq` in place for the gradient rows :obj:`rows` (distinct)
    with values :obj:`values`, as ``torch.optim.SparseAdam`` does:

    .. math::
        m_r \leftarrow m_r + (1 - \beta_1)(g_r - m_r), \quad
        v_r \leftarrow v_r + (1 - \beta_2)(g_r^2 - v_r), \quad
        p_r \leftarrow p_r - s\, \frac{m_r}{\sqrt{v_r} + \epsilon}

    with :math:`s` = :func:`sparse_adam_step_size`, in one pass over the rows
    (torch's runs a dozen tensor ops) and with the same rounding (see
    :class:`~pyg_fusesample.optim.FusedSparseAdam` for the CPU's square
    root).

    Args:
        param (Tensor): ``[R, ...]`` float32 or float64, contiguous.
        exp_avg (Tensor), exp_avg_sq (Tensor): its moments, alike.
        rows (Tensor): ``[K]`` int64 distinct rows in ``[0, R)`` (a coalesced
            gradient's ``_indices()[0]``).
        values (Tensor): ``[K, ...]`` the rows' gradient, :obj:`param`'s dtype.
        step_size (float): :func:`sparse_adam_step_size`.
        beta1 (float), beta2 (float), eps (float): as in ``SparseAdam``.
        maximize (bool): ascend (negates the gradient).
    """
    torch.ops.fusesample.sparse_adam_(param, exp_avg, exp_avg_sq, rows,
                                      values, float(step_size), float(beta1),
                                      float(beta2), float(eps), bool(maximize))


@torch.library.register_fake('fusesample::sparse_adam_')
def _sparse_adam_fake(param, exp_avg, exp_avg_sq, rows, values, step_size,
                      beta1, beta2, eps, maximize):
    return None
