"""Layer-wise sampling (LADIES, FastGCN): :func:`layer_sample` over
``torch.ops.fusesample.layer_sample`` (contract in
``kernels/layer/layer_sample.cpp``) and :func:`layer_batch`, a loader's
batch in one op (``kernels/layer/layer_batch.cpp``)."""
from typing import List, NamedTuple, Optional

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)


class LayerSampleOutput(NamedTuple):
    node: Tensor               # [n_L] global ids, seeds first, grouped by layer
    row: Tensor                # [E'] local source of each sampled edge
    col: Tensor                # [E'] local target
    edge: Tensor               # [E'] edge ids
    weight: Tensor             # [E'] float64 importance weights
    num_sampled_nodes: Tensor  # [L + 1] int64 (CPU)
    num_sampled_edges: Tensor  # [L] int64 (CPU), innermost layer first


def layer_sample(colptr: Tensor, row: Tensor, edge_id: Optional[Tensor],
                 seed: Tensor, num_samples: List[int], rng_seed: int,
                 edge_value: Optional[Tensor] = None,
                 node_cumsum: Optional[Tensor] = None) -> LayerSampleOutput:
    r"""Draws :obj:`num_samples[l]` nodes per layer for the whole batch
    :obj:`seed`, by LADIES' layer-dependent importance (default) or, with
    :obj:`node_cumsum`, FastGCN's global one, and returns each layer's
    bipartite graph with importance weights.

    With :math:`\hat{A}` the adjacency values (:obj:`edge_value`) and
    :math:`T_l` layer :math:`l`'s targets, LADIES draws :math:`s_l` distinct
    nodes among the in-neighbours of :math:`T_l` with probability
    proportional to

    .. math::
        q_u = \sum_{v \in T_l} \hat{A}_{vu}^2,

    and weights edge :math:`u \to v` by :math:`\hat{A}_{vu} / (s_l\, p_u)`,
    :math:`p_u = q_u / \sum_w q_w`. FastGCN draws :math:`s_l` nodes with
    replacement from the global distribution :math:`p` and weights an edge
    by :math:`m_u \hat{A}_{vu} / (s_l\, p_u)` (:math:`m_u` draws of
    :math:`u`). A layer that takes all its candidates (:math:`s_l = -1`) is
    exact: weight :math:`\hat{A}_{vu}`.

    Args:
        colptr, row, edge_id: the graph as CSC (in-edges by target), as
            :func:`neighbor_sample` reads it.
        seed (Tensor): ``[B]`` int64 unique target nodes.
        num_samples (List[int]): nodes per layer, innermost first; -1: all.
        rng_seed (int): key of the counter-based RNG (the CPU and CUDA
            kernels draw the same nodes for the same key).
        edge_value (Tensor, optional): ``[E]`` float64 :math:`\hat{A}` per
            CSC slot (default: ones).
        node_cumsum (Tensor, optional): ``[N]`` float64 inclusive prefix
            sums of FastGCN's node importances (built on the CPU, so both
            devices read the same bits); absent: LADIES.

    Returns:
        :class:`LayerSampleOutput`: layer :math:`l`'s targets are
        ``node[:n_l]`` with ``n_l = num_sampled_nodes[:l + 1].sum()``, and its
        edges the ``num_sampled_edges[l]`` after the previous layers' ones.
    """
    return LayerSampleOutput(*torch.ops.fusesample.layer_sample(
        colptr, row, edge_id, edge_value, node_cumsum, seed,
        [int(s) for s in num_samples], int(rng_seed)))


class LayerBatchOutput(NamedTuple):
    node: Tensor               # as LayerSampleOutput's
    edge_index: Tensor         # [2, E'] stack(row, col)
    edge_weight: Tensor        # [E'] weight (normalised), in weight_dtype
    e_id: Tensor               # [E'] edge ids, -1 for ids >= num_edges
    num_sampled_nodes: Tensor  # [L + 1] int64 (CPU)
    num_sampled_edges: Tensor  # [L] int64 (CPU), innermost layer first
    node_attrs: List[Tensor]   # each of node_attrs' rows of node


def layer_batch(colptr: Tensor, row: Tensor, edge_id: Optional[Tensor],
                seed: Tensor, num_samples: List[int], rng_seed: int,
                edge_value: Optional[Tensor] = None,
                node_cumsum: Optional[Tensor] = None, num_edges: int = -1,
                normalize_weights: bool = True,
                weight_dtype: torch.dtype = torch.float32,
                node_attrs: List[Tensor] = ()) -> LayerBatchOutput:
    r""":func:`layer_sample` and what a
    :class:`~pyg_fusesample.loader.LayerWiseLoader` batch holds besides,
    in one op (the loader's plain path and its native prefetch threads run
    it): ``edge_index = stack(row, col)``; the weights, with
    :obj:`normalize_weights` divided per layer by the sum of those into the
    same target (:math:`w_{uv} / \sum_{u'} w_{u'v}`, 0 where that is 0), in
    :obj:`weight_dtype`; ``e_id``, the edge ids with -1 for those
    ``>= num_edges`` (added self-loops; ``-1``: keep all); and the rows of
    every tensor of :obj:`node_attrs` (on the graph's device) at ``node``.
    The other arguments are :func:`layer_sample`'s."""
    out = torch.ops.fusesample.layer_batch(
        colptr, row, edge_id, edge_value, node_cumsum, seed,
        [int(s) for s in num_samples], int(rng_seed),
        int(num_edges) if num_edges >= 0 else torch.iinfo(torch.int64).max,
        bool(normalize_weights), weight_dtype, list(node_attrs))
    return LayerBatchOutput(*out)


@torch.library.register_fake('fusesample::layer_sample')
def _(colptr, row, edge_id, edge_value, node_cumsum, seed, num_samples,
      rng_seed):
    ctx = torch.library.get_ctx()
    num_nodes = ctx.new_dynamic_size()
    num_edges = ctx.new_dynamic_size()
    host = torch.device('cpu')
    return (seed.new_empty(num_nodes), seed.new_empty(num_edges),
            seed.new_empty(num_edges), seed.new_empty(num_edges),
            seed.new_empty(num_edges, dtype=torch.float64),
            torch.empty(len(num_samples) + 1, dtype=torch.long, device=host),
            torch.empty(len(num_samples), dtype=torch.long, device=host))


@torch.library.register_fake('fusesample::normalize_by_target')
def _(weight, col, num_sampled_edges, dtype):
    # (layer_batch's weight normalisation: kernels/layer/normalize_by_target.cpp)
    return weight.new_empty(weight.shape, dtype=dtype)
