"""``trim_to_layer`` built into PyG's ``BasicGNN`` models (GraphSAGE, GCN,
GAT, ...) once :func:`~pyg_fusesample.nn.to_fused` has swapped their convs.

PyG's ``trim_to_layer`` narrows layer ``l``'s input to the nodes and edges
within ``L - l`` hops of the seeds, yet each layer still computes an output
row for every node it was given, and the next layer drops the outermost hop
again. Here layer ``l`` computes only the rows the next layer reads (nodes
within ``L - l - 1`` hops): a ``SAGEConv`` is called bipartite ``(x,
x[:T])``, which skips the root transform and the aggregation of the dropped
rows; other convs compute theirs and are sliced. The batch's per-hop counts
come from the call (PyG's ``num_sampled_nodes_per_hop`` /
``num_sampled_edges_per_hop`` arguments). The output holds the rows of the
seeds (``batch_size``), the rows a mini-batch loss reads, where PyG's
trimmed model returns those of the seeds and their first hop.
"""
from itertools import accumulate
from typing import List, Optional

import torch
from torch import Tensor

from ..sparse.target_layout import batch_counts, register_checked_batch
from .sage_conv import SAGEConv


def trimmable(model) -> Optional[str]:
    r"""Why :func:`trimmed_forward` cannot stand in for :obj:`model`'s
    forward (``None``: it can)."""
    if getattr(model, 'jk_mode', None) is not None:
        return f"jk={model.jk_mode!r} reads every layer's rows"
    if any(not isinstance(n, torch.nn.Identity) for n in model.norms):
        return "normalisation layers would see fewer rows than in PyG's model"
    return None


def trimmed_forward(model, x: Tensor, edge_index: Tensor,
                    edge_weight: Optional[Tensor] = None,
                    edge_attr: Optional[Tensor] = None,
                    batch: Optional[Tensor] = None,
                    batch_size: Optional[int] = None,
                    num_sampled_nodes_per_hop: Optional[List[int]] = None,
                    num_sampled_edges_per_hop: Optional[List[int]] = None
                    ) -> Tensor:
    r"""``model.forward`` (a ``BasicGNN``) with the counts given: layer
    ``l`` computes the rows within ``L - l - 1`` hops of the seeds only."""
    if num_sampled_nodes_per_hop is None or not isinstance(
            edge_index, Tensor):
        return type(model).forward(model, x, edge_index, edge_weight,
                                   edge_attr, batch, batch_size,
                                   num_sampled_nodes_per_hop,
                                   num_sampled_edges_per_hop)
    if isinstance(edge_weight, Tensor) and isinstance(edge_attr, Tensor):
        raise NotImplementedError("'trim_to_layer' functionality does not "
                                  "yet support trimming of both "
                                  "'edge_weight' and 'edge_attr'")
    if not torch.compiler.is_compiling() and \
            batch_counts(edge_index) is None:
        # Not a fused loader's batch (PyG's loader's, or one moved with
        # .to(device)): checked once here, so no layer sorts or checks it.
        register_checked_batch(edge_index, num_sampled_nodes_per_hop,
                               num_sampled_edges_per_hop)
    nodes = list(accumulate(int(n) for n in num_sampled_nodes_per_hop))
    edges = [0] + list(accumulate(int(e) for e in num_sampled_edges_per_hop))
    L = model.num_layers
    for i, conv in enumerate(model.convs):
        # Layer i reads hops <= L - i, writes hops <= L - i - 1.
        hop = max(min(L - i, len(edges) - 1), 0)
        E, T = edges[hop], nodes[max(hop - 1, 0)]
        x = _rows(x, nodes[min(hop, len(nodes) - 1)])
        ei = edge_index.narrow(1, 0, E)
        kwargs = {}
        if model.supports_edge_weight:
            kwargs['edge_weight'] = None if edge_weight is None else \
                edge_weight.narrow(0, 0, E)
        if model.supports_edge_attr:
            kwargs['edge_attr'] = None if edge_attr is None else \
                edge_attr.narrow(0, 0, E)
        if isinstance(conv, SAGEConv):
            x = conv((x, x.narrow(0, 0, T)), ei, **kwargs)
        else:
            x = _rows(conv(x, ei, **kwargs), T)
        if i < L - 1:
            # (act before or after the norm is one place: norms are
            # Identity here, see trimmable)
            if model.act is not None:
                x = model.act(x)
            x = model.dropout(x)
    return model.lin(x) if hasattr(model, 'lin') else x


def _rows(x: Tensor, n: int) -> Tensor:
    # x's first n rows; x itself where that is all of them: a narrow is
    # recorded by autograd even then, and its backward writes a zero tensor
    # of x's shape and copies the gradient into it (two kernels a layer).
    return x if x.size(0) == n else x.narrow(0, 0, n)
