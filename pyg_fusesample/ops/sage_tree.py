"""A whole FusedGraphSAGE training forward as one op, its backward in C++:
``torch.ops.fusesample.sage_tree`` (contract: ``kernels/model/sage_tree.cpp``).

The eager step of :class:`~pyg_fusesample.nn.FusedGraphSAGE` calls it: the
same kernels as the model's Python path, issued from C++ with one autograd
node instead of a dozen Python autograd Functions and torch calls, which made
that step host-bound. This module adds the fake kernel and the Python entry
point.
"""
from typing import List, Sequence

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)


def sage_tree(x: Tensor, colptr: Tensor, row: Tensor, seeds: Tensor,
              params: Sequence[Tensor], num_neighbors: List[int],
              dtype: torch.dtype, aggr: str = 'mean', replace: bool = False,
              rng_seed: int = -1, dropout: float = 0.0, bias: bool = True,
              inplace_backward: bool = True) -> Tensor:
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
    """
    return torch.ops.fusesample.sage_tree(
        x, colptr, row, seeds, list(params), [int(k) for k in num_neighbors],
        dtype, aggr, bool(replace), int(rng_seed), float(dropout), bool(bias),
        bool(inplace_backward))


@torch.library.register_fake('fusesample::sage_tree')
def _sage_tree_fake(x, colptr, row, seeds, params, num_neighbors, dtype,
                    aggr='mean', replace=False, rng_seed=-1, dropout=0.0,
                    bias=True, inplace_backward=True):
    out_channels = params[-3 if bias else -2].shape[0]
    return x.new_empty((seeds.shape[0], out_channels), dtype=dtype)
