"""``fusesample::layer_spmm``: a layer's aggregation as one opaque op, so
``torch.compile(..., fullgraph=True)`` can trace a layer whose graph is
built from ``edge_index`` with data-dependent sizes (self-loops, symmetric
normalisation, the CSR layout) and whose kernel is chosen by measuring.

The op takes the layer's *handle* (an int) and the graph's tensors; its
implementation, run eagerly even inside a compiled graph, asks the layer for
its memoised :class:`~pyg_fusesample.sparse.CSRGraph` (built once per
``edge_index``) and runs the autotuned SpMM. The traced part only sees an op
from ``[N, F]`` features to ``[N, F]`` features: no data-dependent shape.
Its gradient with respect to the features is ``A^T @ grad`` through the same
memo (``fusesample::layer_spmm_backward``); edge weights get no gradient
here, so a layer refuses them when they require one.
"""
import itertools
import weakref
from typing import Callable, Optional

import torch
from torch import Tensor

from ..autotune import run_spmm, run_spmm_grad
from ..sparse import CSRGraph

# handle -> the layer's graph builder (weakly: a dropped layer is forgotten)
_BUILDERS = {}
_NEXT = itertools.count(1)
GraphBuilder = Callable[[Tensor, int, Optional[Tensor], torch.dtype], CSRGraph]


def register_layer(layer) -> int:
    r"""A handle for :obj:`layer`, whose method ``csr(edge_index,
    num_nodes, edge_weight, dtype)`` returns the (memoised) graph."""
    handle = next(_NEXT)
    _BUILDERS[handle] = weakref.WeakMethod(layer.csr)
    weakref.finalize(layer, _BUILDERS.pop, handle, None)
    return handle


def _graph(handle: int, edge_index: Tensor, edge_weight: Optional[Tensor],
           num_nodes: int, dtype: torch.dtype) -> CSRGraph:
    builder = _BUILDERS.get(handle)
    csr = builder() if builder is not None else None
    if csr is None:
        raise RuntimeError(f'fusesample::layer_spmm: no layer with handle '
                           f'{handle} (it was garbage collected)')
    return csr(edge_index, num_nodes, edge_weight, dtype)


@torch.library.custom_op('fusesample::layer_spmm', mutates_args=())
def layer_spmm(x: Tensor, edge_index: Tensor, edge_weight: Optional[Tensor],
               num_nodes: int, handle: int, reduce: str) -> Tensor:
    r"""``A @ x`` for the graph layer :obj:`handle` builds from
    :obj:`edge_index` (and :obj:`edge_weight`), ``x``: ``[num_nodes, F]``."""
    graph = _graph(handle, edge_index, edge_weight, num_nodes, x.dtype)
    return run_spmm(graph, x.contiguous(), reduce)


@layer_spmm.register_fake
def _(x, edge_index, edge_weight, num_nodes, handle, reduce):
    return x.new_empty(num_nodes, x.size(1))


@torch.library.custom_op('fusesample::layer_spmm_backward', mutates_args=())
def layer_spmm_backward(grad: Tensor, edge_index: Tensor,
                        edge_weight: Optional[Tensor], num_nodes: int,
                        handle: int, reduce: str) -> Tensor:
    r"""``A^T @ grad`` (the gradient of :func:`layer_spmm` in ``x``)."""
    graph = _graph(handle, edge_index, edge_weight, num_nodes, grad.dtype)
    return run_spmm_grad(graph, grad, reduce)


@layer_spmm_backward.register_fake
def _(grad, edge_index, edge_weight, num_nodes, handle, reduce):
    return grad.new_empty(num_nodes, grad.size(1))


def _setup_context(ctx, inputs, output):
    _, edge_index, edge_weight, num_nodes, handle, reduce = inputs
    ctx.save_for_backward(edge_index, edge_weight)
    ctx.num_nodes, ctx.handle, ctx.reduce = num_nodes, handle, reduce


def _backward(ctx, grad):
    edge_index, edge_weight = ctx.saved_tensors
    grad_x = layer_spmm_backward(grad, edge_index, edge_weight, ctx.num_nodes,
                                 ctx.handle, ctx.reduce)
    return grad_x, None, None, None, None, None


layer_spmm.register_autograd(_backward, setup_context=_setup_context)
