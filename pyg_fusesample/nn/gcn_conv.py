"""``GCNConv``: PyG's layer, its normalisation and self-loops computed on the
targets' in-edges without building a new edge list."""
from typing import Optional, Tuple

import torch
from torch import Tensor
from torch_geometric.nn import GCNConv as PyGGCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm as pyg_gcn_norm

from ..ops.segment import index_rows, index_targets, segment_aggregate
from ..sparse.target_layout import TargetLayout
from .minibatch_common import (fast_graph, layout_of, pyg_fallback,
                               warn_pyg_path)


@pyg_fallback
class GCNConv(PyGGCNConv):
    r"""PyG's :class:`~torch_geometric.nn.conv.GCNConv`,

    .. math::
        \mathbf{x}^{\prime}_i = \mathbf{\Theta}^{\top} \sum_{j \in
        \mathcal{N}(i) \cup \{ i \}} \frac{e_{j,i}}{\sqrt{\hat{d}_j
        \hat{d}_i}} \mathbf{x}_j, \qquad \hat{d}_i = 1 + \sum_{j \in
        \mathcal{N}(i)} e_{j,i},

    computed as a weighted segment sum over each target's in-edges. PyG's
    ``gcn_norm`` replaces every self-loop by one loop per node (weight
    ``fill_value`` -- 2 if ``improved`` -- or the weight of the loop the
    node had, when ``edge_weight`` is given; 1 without ``edge_weight``);
    here the loops in the edge list get weight 0 and each node's loop is a
    term of its own, so no edge list is concatenated, sorted or scattered
    with atomics, and there is no host synchronisation. Same constructor,
    parameters, ``forward`` and output as PyG's layer; ``cached=True``
    keeps the normalisation of the first call, as PyG does.

    ``SparseTensor`` / ``torch.sparse`` inputs, ``flow='target_to_source'``
    and aggregations other than ``'add'`` run PyG's code, with a warning
    once.

    Args: as :class:`torch_geometric.nn.conv.GCNConv`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`,
          edge indices :math:`(2, |\mathcal{E}|)`,
          edge weights :math:`(|\mathcal{E}|)` *(optional)*
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """
    def forward(self, x: Tensor, edge_index,
                edge_weight: Optional[Tensor] = None) -> Tensor:
        if isinstance(x, (tuple, list)) or not fast_graph(edge_index) or (
                self.flow != 'source_to_target' or self.aggr != 'add'
                or x.dim() != 2):
            if not isinstance(x, (tuple, list)):
                warn_pyg_path(self, "a SparseTensor / torch.sparse graph, "
                              "flow='target_to_source', aggr != 'add' or "
                              "node features of more than 2 dimensions")
            return super().forward(x, edge_index, edge_weight)
        # cached=True: the first call's graph, as PyG (whose own cache, in
        # its format, is kept beside ours for calls that take PyG's path;
        # PyG's reset_parameters clears it, and with it ours).
        cache = getattr(self, '_fused_cache', None)
        pyg_cache = self._cached_edge_index if self.normalize else None
        if pyg_cache is not None and cache is None:  # cached by PyG's path
            return super().forward(x, edge_index, edge_weight)
        if pyg_cache is not None:
            layout, (slot_norm, self_norm) = cache
        else:
            num_nodes = x.size(self.node_dim)
            layout = layout_of(edge_index, num_nodes, num_nodes, 'GCNConv')
            weight = layout.in_layout_order(edge_weight, 'edge_weight')
            slot_norm, self_norm = weight, None
            if self.normalize:
                slot_norm, self_norm = gcn_norm_slots(
                    layout, weight, self.improved, self.add_self_loops,
                    x.dtype)
                if self.cached:
                    self._fused_cache = (layout, (slot_norm, self_norm))
                    self._cached_edge_index = pyg_gcn_norm(
                        edge_index, edge_weight, num_nodes, self.improved,
                        self.add_self_loops, self.flow, x.dtype)
        x = self.lin(x)
        out = segment_aggregate(layout, x, 'sum', slot_norm)
        if self_norm is not None:
            out = torch.addcmul(out, self_norm.to(out.dtype).unsqueeze(-1), x)
        if self.bias is not None:
            out = out + self.bias
        return out


def _segment_sum(layout: TargetLayout, value: Tensor) -> Tensor:
    # Per target, the sum of its slots' values: differences of one float64
    # prefix sum (no atomics, so the same bits every run).
    total = torch.nn.functional.pad(torch.cumsum(value.to(torch.float64), 0),
                                    (1, 0))
    return (total[layout.ptr[1:]] - total[layout.ptr[:-1]]).to(value.dtype)


def gcn_norm_slots(layout: TargetLayout, edge_weight: Optional[Tensor],
                   improved: bool, add_self_loops: bool,
                   dtype: torch.dtype) -> Tuple[Tensor, Optional[Tensor]]:
    r"""PyG's ``gcn_norm`` on a :class:`TargetLayout`: the weight of every
    slot (in slot order) and, with :obj:`add_self_loops`, of every node's
    own loop (``None`` without)."""
    device = layout.src.device
    n = layout.num_dst
    weight = edge_weight if edge_weight is not None else torch.ones(
        layout.num_slots, dtype=dtype, device=device)
    self_weight = None
    if add_self_loops:
        is_loop = layout.src == layout.dst
        # add_remaining_self_loops: a node's loop weighs fill_value, or what
        # its own loop weighed (edge_weight given); without edge_weight the
        # loops are added weightless and then weigh 1 like every edge.
        fill = 2. if improved and edge_weight is not None else 1.
        self_weight = torch.full((n + 1, ), fill, dtype=weight.dtype,
                                 device=device)
        if edge_weight is not None:
            slot_of = torch.where(is_loop, layout.dst,
                                  torch.full_like(layout.dst, n))
            self_weight.scatter_(0, slot_of, weight)
        self_weight = self_weight[:n]
        weight = weight.masked_fill(is_loop, 0.)
    deg = _segment_sum(layout, weight)
    if self_weight is not None:
        deg = deg + self_weight
    deg_inv_sqrt = deg.pow(-0.5).masked_fill_(deg == 0, 0.)
    slot_norm = (index_rows(deg_inv_sqrt, layout.src) * weight *
                 index_targets(deg_inv_sqrt, layout))
    self_norm = None if self_weight is None else \
        deg_inv_sqrt * deg_inv_sqrt * self_weight
    return slot_norm, self_norm
