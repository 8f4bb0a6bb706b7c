"""``SAGEConv``: PyG's layer, aggregating as a segment reduction over the
targets' in-edges."""
from typing import Optional, Tuple, Union

import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import SAGEConv as PyGSAGEConv

from ..ops.aggregate_linear import aggregate_linear
from ..ops.segment import segment_aggregate
from .minibatch_common import (fast_graph, layout_of, linear_first,
                               pyg_fallback, uninitialized, warn_pyg_path)

_REDUCE = {'mean': 'mean', 'add': 'sum', 'sum': 'sum', 'max': 'max'}


@pyg_fallback
class SAGEConv(PyGSAGEConv):
    r"""PyG's :class:`~torch_geometric.nn.conv.SAGEConv`, computed as a
    segment reduction over each target's in-edges:

    .. math::
        \mathbf{x}^{\prime}_i = \mathbf{W}_1 \mathbf{x}_i + \mathbf{W}_2
        \cdot \mathrm{aggr}_{j \in \mathcal{N}(i)} \mathbf{x}_j

    Same constructor, parameters (a PyG state dict loads unchanged),
    ``forward`` and output as PyG's layer. On a batch of
    :class:`~pyg_fusesample.FusedNeighborLoader` (or a
    ``trim_to_layer`` prefix of one) the edges are already grouped by
    target, so the aggregation needs no sort, no atomics and no host
    synchronisation, and its backward is deterministic; any other
    ``edge_index`` is checked and sorted once per tensor. When applying
    ``W_2`` before the (linear) aggregation costs less (it maps to fewer
    channels than it reads, and its product over every source row costs
    less than the bytes it saves:
    :func:`~pyg_fusesample.nn.minibatch_common.linear_first`), it is: the
    same result up to rounding. Bipartite ``(x_src, x_dst)`` inputs
    compute only the ``x_dst`` rows, which is how a model computes only the
    nodes the next layer needs (:func:`~pyg_fusesample.nn.to_fused`).

    Aggregations ``'mean'``, ``'sum'`` / ``'add'`` and ``'max'`` take this
    path; other aggregations (lists, ``'lstm'``, modules) and
    ``SparseTensor`` / ``torch.sparse`` graph inputs run PyG's code, with a
    warning once.

    Args: as :class:`torch_geometric.nn.conv.SAGEConv`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})` or
          :math:`((|\mathcal{V_s}|, F_{s}), (|\mathcal{V_t}|, F_{t}))`,
          edge indices :math:`(2, |\mathcal{E}|)`
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})` or
          :math:`(|\mathcal{V_t}|, F_{out})`
    """
    def forward(self, x: Union[Tensor, Tuple[Tensor, Optional[Tensor]]],
                edge_index, size: Optional[Tuple[int, int]] = None) -> Tensor:
        reduce = _REDUCE.get(self.aggr) if isinstance(self.aggr, str) else None
        if reduce is None or not fast_graph(edge_index):
            warn_pyg_path(self, f"aggr={self.aggr!r}" if reduce is None else
                          f"a {type(edge_index).__name__} graph input")
            return super().forward(x, edge_index, size)
        x_src, x_dst = (x, x) if isinstance(x, Tensor) else x
        num_dst = size[1] if size is not None else (
            x_dst.size(0) if x_dst is not None else None)
        if num_dst is None:
            warn_pyg_path(self, "neither x_dst nor 'size' gives the targets")
            return super().forward(x, edge_index, size)
        if self.project and hasattr(self, 'lin'):
            x_src = self.lin(x_src).relu()
        layout = layout_of(edge_index, x_src.size(0), num_dst, 'SAGEConv')
        lin_l = self.lin_l
        root = self.root_weight and x_dst is not None
        if root and x_dst.size(0) != num_dst:
            raise ValueError(f"SAGEConv: 'x_dst' has {x_dst.size(0)} rows but "
                             f"'size' gives {num_dst} targets")
        if uninitialized(lin_l.weight, self.lin_r.weight if root else None):
            out = lin_l(segment_aggregate(layout, x_src, reduce))
            if root:
                out = out + self.lin_r(x_dst)
        else:
            out = aggregate_linear(
                layout, x_src, reduce, lin_l.weight, lin_l.bias,
                x_dst if root else None, self.lin_r.weight if root else None,
                reduce != 'max' and linear_first(layout, lin_l.in_channels,
                                                 lin_l.out_channels, x_src))
        if self.normalize:
            out = F.normalize(out, p=2., dim=-1)
        return out

