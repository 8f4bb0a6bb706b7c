"""The native FusedGraphSAGE step as ops that ``torch.compile`` keeps whole:
``fusesample::sage_tree_step`` (forward) and ``sage_tree_step_backward``.

Traced through, :func:`~pyg_fusesample.ops.sage_tree`'s C++ autograd
dissolves into the ~50 kernels it issues, which a compiled graph then
launches one by one (host-bound: a compiled step was 3-4x the CUDA-graph
one). These two custom ops stay opaque instead, so a compiled model runs the
very code of the eager step, CUDA-graph replay included. The forward hands
its saved state to the backward in a small CPU ``handle`` tensor that owns
it (``fusesample::sage_tree_begin``/``sage_tree_finish``, contract in
``kernels/model/sage_tree_split.cpp``). The graph is the ``edge_index``
itself (its CSC is looked up in the memo where the op runs, as
:mod:`.edge_index_aggregate` does, so nothing of the graph's size is
copied per step) or ``[colptr, row]``.
"""
from typing import List, Tuple

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from ..ops.sage_tree import warn_if_busy, warn_if_not_replayable
from .graph_input import _edge_index_csc

_ops = torch.ops.fusesample
# The forward keeps its saved state (and on CUDA its own graphs' buffers)
# outside the op's outputs, which torch.compile's CUDA graphs
# (mode='reduce-overhead') cannot account for: they leave these ops out, and
# the ops replay their own recordings.
_TAGS = ((torch.Tag.cudagraph_unsafe, )
         if hasattr(torch.Tag, 'cudagraph_unsafe') else ())


def _csc(graph: List[Tensor], num_nodes: int) -> Tuple[Tensor, Tensor]:
    if len(graph) == 1:
        return _edge_index_csc(graph[0], num_nodes, num_nodes)
    return graph[0], graph[1]


@torch.library.custom_op('fusesample::sage_tree_step', mutates_args=(),
                         tags=_TAGS)
def sage_tree_step(x: Tensor, graph: List[Tensor], seeds: Tensor,
                   params: List[Tensor], num_neighbors: List[int],
                   dtype: torch.dtype, aggr: str, replace: bool,
                   dropout: float, bias: bool, need: List[bool],
                   inplace_backward: bool) -> Tuple[Tensor, Tensor]:
    r"""The forward of :func:`~pyg_fusesample.ops.sage_tree` (the RNG key
    drawn on the device, replay on) on ``graph`` (``[edge_index]`` or
    ``[colptr, row]``); ``need`` flags which of ``[x, params...]`` want a
    gradient; ``inplace_backward=False`` (``True`` in training) keeps the saved activations for a
    second backward (gradcheck). Returns ``(out, handle)``."""
    colptr, row = _csc(graph, x.size(0))
    if x.is_cuda and any(need[1:]):  # (x's own flag is need[0] in here)
        warn_if_not_replayable(need[0], -1)
    out, handle, how = _ops.sage_tree_begin(
        x, colptr, row, seeds, params, num_neighbors, dtype, aggr, replace,
        -1, dropout, bias, need, inplace_backward, True)
    warn_if_busy(how)
    return out, handle


@sage_tree_step.register_fake
def _(x, graph, seeds, params, num_neighbors, dtype, aggr, replace, dropout,
      bias, need, inplace_backward):
    out_channels = params[-3 if bias else -2].shape[0]
    return (x.new_empty((seeds.shape[0], out_channels), dtype=dtype),
            torch.empty(1, dtype=torch.long))


@torch.library.custom_op('fusesample::sage_tree_step_backward',
                         mutates_args=(), tags=_TAGS)
def sage_tree_step_backward(grad: Tensor, handle: Tensor, x: Tensor,
                            params: List[Tensor],
                            need: List[bool]) -> List[Tensor]:
    r"""The gradients of the flagged ones of ``[x, params...]`` (only
    those, in that order) for :func:`sage_tree_step`'s ``handle``."""
    return _ops.sage_tree_finish(grad, handle, need)


@sage_tree_step_backward.register_fake
def _(grad, handle, x, params, need):
    return [t.new_empty(t.shape) for t, flag in zip([x] + list(params), need)
            if flag]


# setup_context gets the op's inputs as a tuple, in its signature's order.
_NEED = [a.name for a in _ops.sage_tree_step.default._schema.arguments
         ].index('need')


def _setup_context(ctx, inputs, output):
    x, graph, _, params = inputs[:4]
    ctx.need, ctx.graph_len = inputs[_NEED], len(graph)
    ctx.num_other = len(inputs) - 4  # (no gradient: num_neighbors onwards)
    ctx.save_for_backward(output[1], x, *params)
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, grad_out, _grad_handle):
    handle, x, *params = ctx.saved_tensors
    grads = iter(sage_tree_step_backward(grad_out.contiguous(), handle, x,
                                         params, ctx.need))
    flat = [next(grads) if flag else None for flag in ctx.need]
    # (a list of gradients for each list of tensors among the inputs)
    return (flat[0], [None] * ctx.graph_len, None, flat[1:]) + \
        (None,) * ctx.num_other


sage_tree_step.register_autograd(_backward, setup_context=_setup_context)
