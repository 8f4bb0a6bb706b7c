"""Fused sample + aggregate: the op behind FusedSAGEConv and FusedGraphSAGE.

``torch.ops.fusesample.sample_aggregate`` draws up to ``k`` in-neighbours of
each target and reduces their feature rows in one pass; its backward replays
the saved draws (contract: ``kernels/aggregate/sample_aggregate.cpp``). This
module adds the fake kernels (``torch.compile``, ``opcheck``) and the autograd
formula, and the Python entry point.
"""
from typing import NamedTuple

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample

REDUCTIONS = ('sum', 'mean', 'max')


class SampleAggregateOutput(NamedTuple):
    out: Tensor  #: ``[T, F]`` reduction over the sampled neighbours
    nbr: Tensor  #: ``[T, k]`` sampled neighbour ids (-1: unused slot)
    arg: Tensor  #: ``[T, F]`` neighbour giving each maximum ('max'), else [0]


def sample_aggregate(colptr: Tensor, row: Tensor, x: Tensor, target: Tensor,
                     num_neighbors: int, reduce: str = 'mean',
                     replace: bool = False, rng_seed: int = -1,
                     level: int = 0) -> SampleAggregateOutput:
    r"""Samples up to :obj:`num_neighbors` in-neighbours of every node in
    :obj:`target` and reduces their rows of :obj:`x` in the same pass:

    .. math::
        \mathbf{out}_t = \bigoplus_{u \in \mathcal{S}(t)} \mathbf{x}_u,
        \qquad \mathcal{S}(t) \subseteq \mathcal{N}(t),\;
        |\mathcal{S}(t)| = \min(k, |\mathcal{N}(t)|)

    with :math:`\bigoplus` the sum, mean or (elementwise) max. Differentiable
    in :obj:`x`: the backward replays the saved draws :obj:`nbr` exactly.

    Args:
        colptr (Tensor): ``[N_dst + 1]`` int64 CSC column pointers.
        row (Tensor): ``[E]`` int32/int64 sources (rows of :obj:`x`).
        x (Tensor): ``[N_src, F]`` float64/32/16 or bfloat16 features.
        target (Tensor): ``[T]`` int64 nodes to compute; ``-1`` marks an
            empty slot (zero output).
        num_neighbors (int): ``k``; ``-1`` takes every in-neighbour (exact).
        reduce (str): ``'sum'``, ``'mean'`` or ``'max'``.
        replace (bool): draw with replacement.
        rng_seed (int): RNG key; draws are keyed by
            ``(rng_seed, level, node, slot)``, equal on CPU and CUDA. ``-1``
            (default) takes a fresh key from PyTorch's generator of the
            device (``torch.manual_seed`` makes it repeatable); on CUDA it is
            read from the Philox state inside the kernel, so a captured CUDA
            graph draws new neighbours on every replay.
        level (int): separates the draws of different tree levels.

    Returns:
        :class:`SampleAggregateOutput` ``(out, nbr, arg)``.
    """
    if reduce == 'add':
        reduce = 'sum'
    return SampleAggregateOutput(*_ops.sample_aggregate(
        colptr, row, x, target, int(num_neighbors), reduce, bool(replace),
        int(rng_seed), int(level)))


# Fake kernels ###############################################################

@torch.library.register_fake('fusesample::sample_aggregate')
def _sample_aggregate_fake(colptr, row, x, target, num_neighbors,
                           reduce='mean', replace=False, rng_seed=-1,
                           level=0):
    T, F = target.shape[0], x.shape[1]
    out = x.new_empty((T, F))
    nbr = target.new_empty((T, max(num_neighbors, 0)))
    arg = (target.new_empty((T, F)) if reduce == 'max' else
           target.new_empty((0,)))
    return out, nbr, arg


@torch.library.register_fake('fusesample::sample_aggregate_backward')
def _sample_aggregate_backward_fake(grad_out, colptr, row, target, nbr, arg,
                                    num_neighbors, reduce, num_src):
    return grad_out.new_empty((num_src, grad_out.shape[1]))


# Autograd ###################################################################

def _setup_context(ctx, inputs, output):
    colptr, row, x, target, k, reduce, _replace, _seed, _level = inputs
    _, nbr, arg = output
    ctx.save_for_backward(colptr, row, target, nbr, arg)
    ctx.k, ctx.reduce, ctx.num_src = k, reduce, x.shape[0]
    ctx.mark_non_differentiable(nbr, arg)


def _backward(ctx, grad_out, _grad_nbr, _grad_arg):
    colptr, row, target, nbr, arg = ctx.saved_tensors
    grad_x = None
    if ctx.needs_input_grad[2]:
        grad_x = _ops.sample_aggregate_backward(
            grad_out, colptr, row, target, nbr, arg, ctx.k, ctx.reduce,
            ctx.num_src)
    return None, None, grad_x, None, None, None, None, None, None


torch.library.register_autograd('fusesample::sample_aggregate', _backward,
                                setup_context=_setup_context)
