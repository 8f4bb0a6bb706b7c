"""A whole FusedGraphSAGE training forward as one op, its backward in C++:
``torch.ops.fusesample.sage_tree`` (contract: ``kernels/model/sage_tree.cpp``).

The eager step of :class:`~pyg_fusesample.nn.FusedGraphSAGE` calls it: the
same kernels as the model's Python path, issued from C++ with one autograd
node instead of a dozen Python autograd Functions and torch calls, and on
CUDA replayed from CUDA graphs it records itself (that step was host-bound:
~50 launches for ~0.4 ms of GPU work). This module adds the fake kernel and
the Python entry point.
"""
import warnings
from typing import List, Sequence

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from ..sparse.edge_index_checks import check_ids_in_range


def sage_tree(x: Tensor, colptr: Tensor, row: Tensor, seeds: Tensor,
              params: Sequence[Tensor], num_neighbors: List[int],
              dtype: torch.dtype, aggr: str = 'mean', replace: bool = False,
              rng_seed: int = -1, dropout: float = 0.0, bias: bool = True,
              inplace_backward: bool = True, replay: bool = True) -> Tensor:
    r"""The training forward of an :math:`L`-layer GraphSAGE over a sampled
    computation tree: the seeds' last-layer pre-activations ``[B, H]``.

    Args:
        x (Tensor): ``[N, F]`` node features (may require grad).
        colptr (Tensor), row (Tensor): the graph's CSC, as
            :func:`~pyg_fusesample.ops.sample_aggregate` reads it.
        seeds (Tensor): ``[B]`` int64 seed nodes.
        params (List[Tensor]): per layer ``lin_l.weight``, ``lin_r.weight``
            and, with :obj:`bias`, ``lin_l.bias``.
        num_neighbors (List[int]): fan-out per level; the last may be ``-1``.
        dtype (torch.dtype): compute dtype (autocast's, else ``x``'s).
        aggr (str): ``'mean'``, ``'sum'`` or ``'max'``.
        replace (bool): draw with replacement.
        rng_seed (int): the draws' key; ``-1`` draws one per level from the
            device's generator inside the kernel (CUDA-graph safe).
        dropout (float): dropout on every hidden layer's activation.
        bias (bool): whether :obj:`params` hold biases.
        inplace_backward (bool): the backward turns the saved activations
            into gradients in place; ``False`` keeps them (for
            ``retain_graph=True``, e.g. gradcheck).
        replay (bool): on CUDA, record the op's kernels in CUDA graphs on
            the second call with the same shapes and tensors, and replay them
            after (outputs and gradients are fresh tensors; calls that cannot
            be replayed run eagerly, with a warning where that is a slow
            path). ``False`` issues every kernel eagerly.
    """
    if isinstance(seeds, Tensor) and seeds.device.type == 'cpu' and \
            not torch.compiler.is_compiling():
        # (named here: the op's own check is the aggregation's, 'target')
        check_ids_in_range(seeds, x.size(0), 'seeds', 'sage_tree')
    if replay and x.is_cuda and torch.is_grad_enabled():
        warn_if_not_replayable(x.requires_grad, rng_seed)
    out, how = torch.ops.fusesample.sage_tree(
        x, colptr, row, seeds, list(params), [int(k) for k in num_neighbors],
        dtype, aggr, bool(replace), int(rng_seed), float(dropout), bool(bias),
        bool(inplace_backward), bool(replay))
    warn_if_busy(how)
    return out


_BUSY = 2  # how the op ran (its int output): 0 eager, 1 replayed, 2 busy


def warn_if_busy(how: int):
    r"""Warns when a step that could have been replayed ran eagerly because
    its recording was holding another forward's state."""
    if how == _BUSY:
        warnings.warn(
            "sage_tree: a forward with the same shapes is still waiting for "
            "its backward, so this one ran its ~50 kernels eagerly (a "
            "recorded CUDA graph holds one step's saved tensors)")


def warn_if_not_replayable(x_requires_grad: bool, rng_seed: int):
    r"""Warns about the two CUDA steps that cannot be replayed by choice of
    the caller (both are slow paths: every kernel launched from the
    host)."""
    if rng_seed != -1:
        warnings.warn(
            "sage_tree: an explicit rng_seed (FusedGraphSAGE built with a CPU "
            "generator) is drawn on the host, so the step cannot replay its "
            "CUDA graph and launches its ~50 kernels eagerly; leave "
            "generator=None (torch.manual_seed still makes runs repeatable)")
    elif x_requires_grad:
        warnings.warn(
            "sage_tree: x requires grad (learnable embeddings): its gradient "
            "is not recorded in the step's CUDA graph, so the step launches "
            "its ~50 kernels eagerly")


@torch.library.register_fake('fusesample::sage_tree')
def _sage_tree_fake(x, colptr, row, seeds, params, num_neighbors, dtype,
                    aggr='mean', replace=False, rng_seed=-1, dropout=0.0,
                    bias=True, inplace_backward=True, replay=True):
    out_channels = params[-3 if bias else -2].shape[0]
    return x.new_empty((seeds.shape[0], out_channels), dtype=dtype), 0
