"""``sample_aggregate`` over the memoised CSC of an ``edge_index``, as ops
whose inputs are the ``edge_index`` itself: what a compiled
:class:`~pyg_fusesample.nn.FusedGraphSAGE` calls.

A compiled graph reaches the memo only through ops; returning the memo's
CSC from one (``fusesample::edge_index_csc``) means a copy per call, since
an op's outputs must be its own -- for a 124M-edge graph about 1 GB read and
written every training step. These ops take the ``edge_index`` and look the
CSC up where they run (a dict lookup after the first call), so nothing of
the graph's size moves.
"""
from typing import Tuple

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from .graph_input import _edge_index_csc

_ops = torch.ops.fusesample


@torch.library.custom_op('fusesample::sample_aggregate_ei', mutates_args=())
def sample_aggregate_ei(edge_index: Tensor, num_nodes: int, x: Tensor,
                        target: Tensor, num_neighbors: int, reduce: str,
                        replace: bool, rng_seed: int,
                        level: int) -> Tuple[Tensor, Tensor, Tensor]:
    r""":func:`~pyg_fusesample.ops.sample_aggregate` on the CSC of
    :obj:`edge_index` over :obj:`num_nodes` nodes (``(out, nbr, arg)``)."""
    colptr, row = _edge_index_csc(edge_index, num_nodes, num_nodes)
    out, nbr, arg = _ops.sample_aggregate(colptr, row, x, target,
                                          num_neighbors, reduce, replace,
                                          rng_seed, level)
    return out, nbr, arg


@sample_aggregate_ei.register_fake
def _(edge_index, num_nodes, x, target, num_neighbors, reduce, replace,
      rng_seed, level):
    T, F = target.shape[0], x.shape[1]
    return (x.new_empty((T, F)), target.new_empty((T, max(num_neighbors, 0))),
            target.new_empty((T, F)) if reduce == 'max'
            else target.new_empty((0, )))


@torch.library.custom_op('fusesample::sample_aggregate_ei_backward',
                         mutates_args=())
def sample_aggregate_ei_backward(grad_out: Tensor, edge_index: Tensor,
                                 num_nodes: int, target: Tensor, nbr: Tensor,
                                 arg: Tensor, num_neighbors: int, reduce: str,
                                 num_src: int) -> Tensor:
    r"""The gradient of :func:`sample_aggregate_ei` in ``x``."""
    colptr, row = _edge_index_csc(edge_index, num_nodes, num_nodes)
    return _ops.sample_aggregate_backward(grad_out, colptr, row, target, nbr,
                                          arg, num_neighbors, reduce, num_src)


@sample_aggregate_ei_backward.register_fake
def _(grad_out, edge_index, num_nodes, target, nbr, arg, num_neighbors,
      reduce, num_src):
    return grad_out.new_empty((num_src, grad_out.shape[1]))


def _setup_context(ctx, inputs, output):
    edge_index, num_nodes, x, target, k, reduce = inputs[:6]
    _, nbr, arg = output
    ctx.save_for_backward(edge_index, target, nbr, arg)
    ctx.num_nodes, ctx.k, ctx.reduce, ctx.num_src = \
        num_nodes, k, reduce, x.shape[0]
    ctx.mark_non_differentiable(nbr, arg)


def _backward(ctx, grad_out, _grad_nbr, _grad_arg):
    edge_index, target, nbr, arg = ctx.saved_tensors
    grad_x = None
    if ctx.needs_input_grad[2]:
        grad_x = sample_aggregate_ei_backward(
            grad_out.contiguous(), edge_index, ctx.num_nodes, target, nbr,
            arg, ctx.k, ctx.reduce, ctx.num_src)
    return None, None, grad_x, None, None, None, None, None, None


sample_aggregate_ei.register_autograd(_backward, setup_context=_setup_context)
