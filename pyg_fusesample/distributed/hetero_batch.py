r"""A distributed sample of a heterogeneous part as the ``HeteroData`` batch
:class:`~pyg_fusesample.FusedNeighborLoader` gives on the whole graph.

The sampler works in one id space (typed_part.py): nodes as ids of that
space in batch order, edges as ``id * T + t``. Split by type, each node
type keeps its nodes in batch order (its local ids: their ranks among the
type's), each edge type its edges in batch order, and the per-hop counts
count each type's share of each hop.
"""
from itertools import accumulate
from typing import Dict, List

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from ..sparse.target_layout import register_hetero_batch
from .dist_sampler import DistNeighborSampler, DistSample


def _per_hop(kind: Tensor, bounds: List[int], num_kinds: int) -> Tensor:
    # [num_kinds, hops]: how many items of each kind lie in each range
    # [bounds[h], bounds[h + 1]) (`kind` in [0, num_kinds)).
    hops = len(bounds) - 1
    hop = torch.repeat_interleave(
        torch.tensor([bounds[h + 1] - bounds[h] for h in range(hops)],
                     device=kind.device), output_size=kind.numel())
    return torch.zeros(num_kinds * hops, dtype=torch.long,
                       device=kind.device).index_add_(
                           0, kind * hops + hop,
                           torch.ones_like(kind)).view(num_kinds, hops)


def _bounds(counts: List[int]) -> List[int]:
    return [0, *accumulate(int(c) for c in counts)]


def hetero_batch(sampler: DistNeighborSampler, out: DistSample,
                 seed_type: str, input_id: Tensor,
                 feature_names: Dict[str, List[str]]) -> HeteroData:
    r"""The ``HeteroData`` of :obj:`out` (collective: gathers every node
    type's features in :obj:`feature_names`, types in the partition's
    order; ``2 + F`` all-to-alls for a type of ``F`` features, none for a
    type without)."""
    typed = sampler.typed
    NT, T = len(typed.node_types), typed.num_edge_types
    node = out.node
    kind = typed.type_index(node)
    # every batch node's rank among the nodes of its type (its local id)
    local = torch.empty_like(node)
    data = HeteroData()
    node_hops = _per_hop(kind, _bounds(out.num_sampled_nodes), NT).tolist()
    for i, nt in enumerate(typed.node_types):
        where = (kind == i).nonzero().view(-1)
        local[where] = torch.arange(where.numel(), device=node.device)
        ids = node[where] - typed.node_offset[i]
        store = data[nt]
        store.num_nodes = where.numel()
        names = feature_names.get(nt, [])
        feats = sampler._gather_all(ids, names, node_type=nt)
        for name in names:
            store[name] = feats[name]
        store.n_id = ids
        store.num_sampled_nodes = node_hops[i]
        if out.batch is not None:
            store.batch = out.batch[where]
    etype = out.edge % T
    edge_hops = _per_hop(etype, _bounds(out.num_sampled_edges), T).tolist()
    for t, et in enumerate(typed.edge_types):
        sel = (etype == t).nonzero().view(-1)
        store = data[et]
        store.edge_index = torch.stack([local[out.row[sel]],
                                        local[out.col[sel]]])
        store.e_id = out.edge[sel] // T
        store.num_sampled_edges = edge_hops[t]
    data[seed_type].input_id = input_id
    data[seed_type].batch_size = input_id.numel()
    register_hetero_batch(data)
    return data


def feature_names_of(sampler: DistNeighborSampler) -> Dict[str, List[str]]:
    r"""The node features a batch carries, per node type: ``x`` and ``y``
    where the partition has them."""
    return {nt: [n for n in ('x', 'y')
                 if n in sampler.part.node_feats.get(nt, {})]
            for nt in sampler.typed.node_types}
