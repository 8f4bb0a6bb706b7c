"""``RGCNConv``: PyG's layer, the relations aggregated as one segment
reduction over (target, relation) groups and transformed by one GEMM."""
import weakref
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import RGCNConv as PyGRGCNConv

from ..ops.segment import segment_aggregate
from ..sparse.target_layout import TargetLayout
from .minibatch_common import (check_relations, fast_graph, layout_of,
                               pyg_fallback, warn_pyg_path)

_REDUCE = {'mean': 'mean', 'add': 'sum', 'sum': 'sum', 'max': 'max'}


@pyg_fallback
class RGCNConv(PyGRGCNConv):
    r"""PyG's :class:`~torch_geometric.nn.conv.RGCNConv`, all relations
    aggregated in one segment reduction:

    .. math::
        \mathbf{x}^{\prime}_i = \mathbf{\Theta}_{\textrm{root}} \cdot
        \mathbf{x}_i + \sum_{r \in \mathcal{R}} \mathbf{\Theta}_r \cdot
        \mathrm{aggr}_{j \in \mathcal{N}_r(i)} \mathbf{x}_j

    Same constructor, parameters (a PyG state dict loads unchanged),
    ``forward`` and output as PyG's layer (the per-relation aggregation of
    its relation loop: ``'mean'`` averages within each relation). The
    targets' in-edges of a :class:`~pyg_fusesample.sparse.TargetLayout` are
    sorted by ``(target, relation)`` on the device (once per
    :obj:`edge_type` tensor, cached on the layout), one reduction gives
    ``[T, R, F_in]``, and one GEMM with the ``[R * F_in, F_out]`` weights
    (the bases combined first; for blocks a batched product of the block
    form) replaces PyG's loop over relations: no host synchronisation and a
    deterministic backward. Edge types outside ``0 .. R - 1`` (which PyG
    rejects, but with blocks) count for nothing. The intermediate holds
    ``T * (R + 1) * F_in`` values, which suits tens of relations, not
    thousands.

    Aggregations ``'mean'``, ``'add'`` / ``'sum'`` and ``'max'`` on float
    node features take this path; featureless inputs (``x=None`` or node
    indices), other aggregations, a missing :obj:`edge_type` and
    ``SparseTensor`` / ``torch.sparse`` graphs run PyG's code, with a
    warning once.

    Args: as :class:`torch_geometric.nn.conv.RGCNConv`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})` or
          :math:`((|\mathcal{V_s}|, F_{s}), (|\mathcal{V_t}|, F_{t}))`,
          edge indices :math:`(2, |\mathcal{E}|)`, edge types
          :math:`(|\mathcal{E}|)`
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})` or
          :math:`(|\mathcal{V_t}|, F_{out})`
    """
    def forward(self, x: Union[Optional[Tensor], Tuple[Optional[Tensor],
                                                       Tensor]],
                edge_index, edge_type: Optional[Tensor] = None):
        x_l, x_r = x if isinstance(x, tuple) else (x, x)
        reduce = _REDUCE.get(self.aggr) if isinstance(self.aggr, str) else None
        reason = _pyg_reason(reduce, self.aggr, x_l, x_r, edge_index,
                             edge_type)
        if reason is not None:
            warn_pyg_path(self, reason)
            if isinstance(edge_index, Tensor) and \
                    edge_index.dtype == torch.int32:
                # torch (2.13) computes the backward of PyG's gather with an
                # expanded int32 index from the wrong rows
                edge_index = edge_index.long()
            return super().forward(x, edge_index, edge_type)
        if edge_type.dim() != 1 or edge_type.numel() != edge_index.size(1):
            raise ValueError(f"RGCNConv: 'edge_type' must be [num_edges] = "
                             f"[{edge_index.size(1)}], got "
                             f"{list(edge_type.shape)}")
        R, T = self.num_relations, x_r.size(0)
        # (before the layout: on a GPU its error-word watch then copies the
        # word with this call's report in it, and the next call raises)
        check_relations(edge_type, R, 'RGCNConv')
        layout = layout_of(edge_index, x_l.size(0), T, 'RGCNConv')
        # (only the first T' rows can have in-edges: the relation terms are
        # computed for those, the others' are empty)
        active = layout.active_rows()
        Ta = active.num_dst
        groups = relation_layout(active, edge_type, R)
        # [T', R + 1, F_in]: the last group holds the edges of no relation.
        agg = segment_aggregate(groups, x_l, reduce).view(
            Ta, R + 1, x_l.size(1))
        out = self._transform(agg)
        if self.root is not None:
            if Ta == T:
                out = out + x_r @ self.root
            else:  # (the product's output is not saved: added in place)
                root = x_r @ self.root
                root.narrow(0, 0, Ta).add_(out)
                out = root
        elif Ta != T:
            out = F.pad(out, (0, 0, 0, T - Ta))
        if self.bias is not None:
            out = out + self.bias
        return out

    def _transform(self, agg: Tensor) -> Tensor:
        r"""``sum_r agg[:, r] @ W_r`` as one product."""
        T, R = agg.size(0), self.num_relations
        weight = self.weight
        if self.num_blocks is not None:
            nb = self.num_blocks
            h = agg.view(T, R + 1, nb, agg.size(2) // nb)[:, :R]
            return torch.einsum('trbi,rbio->tbo', h, weight).reshape(
                T, self.out_channels)
        if self.num_bases is not None:
            weight = self.comp @ weight.view(self.num_bases, -1)
        weight = weight.view(R, -1, self.out_channels)
        weight = torch.cat([weight, weight.new_zeros((1, ) +
                                                     weight.shape[1:])])
        return agg.view(T, (R + 1) * agg.size(2)) @ weight.view(
            -1, self.out_channels)


def _pyg_reason(reduce, aggr, x_l, x_r, edge_index,
                edge_type) -> Optional[str]:
    if reduce is None:
        return f"aggr={aggr!r}"
    if not fast_graph(edge_index):
        return f"a {type(edge_index).__name__} graph input"
    if x_l is None or not torch.is_floating_point(x_l) or x_l.dim() != 2 \
            or not torch.is_floating_point(x_r):
        return "featureless input (node indices or x=None)"
    if edge_type is None:
        return "no 'edge_type'"
    return None


def relation_layout(layout: TargetLayout, edge_type: Tensor,
                    num_relations: int) -> TargetLayout:
    r"""The slots of :obj:`layout` regrouped by ``(target, relation)``:
    group ``i * (R + 1) + r`` holds target ``i``'s slots of relation ``r``,
    group ``i * (R + 1) + R`` those of a type outside ``0 .. R - 1``. A
    stable sort on the device, cached on :obj:`layout` for this
    :obj:`edge_type` tensor (``[E]``, in ``edge_index`` order)."""
    R1 = num_relations + 1
    cached = layout._cache.get('relations')
    if cached is not None and cached[0]() is edge_type and \
            cached[1] == (edge_type._version, num_relations):
        return cached[2]
    rel = layout.in_layout_order(edge_type, 'edge_type').long()
    rel = torch.where((rel >= 0) & (rel < num_relations), rel,
                      torch.full_like(rel, num_relations))
    key, order = torch.sort(layout.dst.long() * R1 + rel, stable=True)
    bounds = torch.arange(layout.num_dst * R1 + 1, device=key.device)
    groups = TargetLayout(torch.searchsorted(key, bounds),
                          layout.src.index_select(0, order), key,
                          layout.num_src)
    layout._cache['relations'] = (weakref.ref(edge_type),
                                  (edge_type._version, num_relations), groups)
    return groups
