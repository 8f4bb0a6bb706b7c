r"""A distributed sample of a heterogeneous part as the ``HeteroData`` batch
:class:`~pyg_fusesample.FusedNeighborLoader` gives on the whole graph.

The sampler works in one id space (typed_part.py): nodes as ids of that
space in batch order, edges as ``id * T + t``. Split by type, each node
type keeps its nodes in batch order (its local ids: their ranks among the
type's), each edge type its edges in batch order, and the per-hop counts
count each type's share of each hop.
"""
from itertools import accumulate, islice
from typing import Dict, Iterator, List

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from ..sparse.target_layout import register_hetero_batch
from .dist_sampler import DistNeighborSampler, DistSample


def _per_hop(kind: Tensor, bounds: List[int], num_kinds: int) -> Tensor:
    # [num_kinds, hops]: how many items of each kind lie in each range
    # [bounds[h], bounds[h + 1]) (`kind` in [0, num_kinds)): a hop's items
    # added into its column. (The ranges stay host ints: a hop index made
    # from them on the device would copy a host list there, which PyTorch
    # ends with a stream synchronisation.)
    hops = len(bounds) - 1
    counts = torch.zeros(num_kinds, hops, dtype=torch.long,
                         device=kind.device)
    ones = torch.ones_like(kind)
    for h in range(hops):
        lo, hi = bounds[h], bounds[h + 1]
        counts[:, h].index_add_(0, kind[lo:hi], ones[lo:hi])
    return counts


def _bounds(counts: List[int]) -> List[int]:
    return [0, *accumulate(int(c) for c in counts)]


def hetero_batch(sampler: DistNeighborSampler, out: DistSample,
                 seed_type: str, input_id: Tensor,
                 feature_names: Dict[str, List[str]]) -> HeteroData:
    r"""The ``HeteroData`` of :obj:`out` (collective: gathers every node
    type's features in :obj:`feature_names`, types in the partition's
    order; ``2 + F`` all-to-alls for a type of ``F`` features, none for a
    type without)."""
    return hetero_batches(sampler, [out], seed_type, [input_id],
                          feature_names)[0]


def hetero_batches(sampler: DistNeighborSampler, outs: List[DistSample],
                   seed_type: str, input_ids: List[Tensor],
                   feature_names: Dict[str, List[str]]) -> List[HeteroData]:
    r"""The ``HeteroData`` of each of :obj:`outs` (batches sampled in one
    call), every node type's features gathered once for all of them
    (collective, as :func:`hetero_batch`)."""
    typed = sampler.typed
    T, NT = typed.num_edge_types, len(typed.node_types)
    kinds = [typed.type_index(out.node) for out in outs]
    etypes = [out.edge % T for out in outs]
    # every batch's counts of each node and edge type a hop, read at once
    # (the call's one host read here): [node type][hop], [edge type][hop]
    counts = torch.cat([torch.cat([
        _per_hop(kind, _bounds(out.num_sampled_nodes), NT).view(-1),
        _per_hop(etype, _bounds(out.num_sampled_edges), T).view(-1)])
        for out, kind, etype in zip(outs, kinds, etypes)]).tolist()
    rest = iter(counts)  # (taken in the order they were laid out)
    node_hops, edge_hops = [], []
    for out in outs:
        node_hops.append(_take(rest, NT, len(out.num_sampled_nodes)))
        edge_hops.append(_take(rest, T, len(out.num_sampled_edges)))
    # each batch's nodes of each type and edges of each type, in batch
    # order (a stable sort by type)
    where = [_by_kind(kind, hops) for kind, hops in zip(kinds, node_hops)]
    sel = [_by_kind(etype, hops) for etype, hops in zip(etypes, edge_hops)]
    # every node type's features for all the batches' nodes of it, one
    # gather a type
    rows = []
    for i, nt in enumerate(typed.node_types):
        ids = [out.node[w[i]] - typed.node_offset[i]
               for out, w in zip(outs, where)]
        names = feature_names.get(nt, [])
        feats = sampler._gather_all(torch.cat(ids), names, node_type=nt)
        sizes = [w[i].numel() for w in where]
        rows.append([ids, {n: feats[n].split(sizes) for n in names}])
    batches = []
    for b, out in enumerate(outs):
        node = out.node
        # every batch node's rank among the nodes of its type (its local id)
        local = torch.empty_like(node)
        data = HeteroData()
        for i, nt in enumerate(typed.node_types):
            w = where[b][i]
            local[w] = torch.arange(w.numel(), device=node.device)
            ids, feats = rows[i]
            store = data[nt]
            store.num_nodes = w.numel()
            for name, parts in feats.items():
                store[name] = parts[b]
            store.n_id = ids[b]
            store.num_sampled_nodes = node_hops[b][i]
            if out.batch is not None:
                store.batch = out.batch[w]
        for t, et in enumerate(typed.edge_types):
            s = sel[b][t]
            store = data[et]
            store.edge_index = torch.stack([local[out.row[s]],
                                            local[out.col[s]]])
            store.e_id = out.edge[s] // T
            store.num_sampled_edges = edge_hops[b][t]
        data[seed_type].input_id = input_ids[b]
        data[seed_type].batch_size = input_ids[b].numel()
        register_hetero_batch(data)
        batches.append(data)
    return batches


def _take(values: Iterator[int], rows: int, width: int) -> List[List[int]]:
    # the next rows x width values, as rows
    return [list(islice(values, width)) for _ in range(rows)]


def _by_kind(kind: Tensor, hops: List[List[int]]) -> List[Tensor]:
    # the positions of each kind's items in `kind`, ascending (its items in
    # order), from each kind's counts a hop: no host read
    return list(torch.sort(kind, stable=True)[1].split(
        [sum(h) for h in hops]))


def feature_names_of(sampler: DistNeighborSampler) -> Dict[str, List[str]]:
    r"""The node features a batch carries, per node type: ``x`` and ``y``
    where the partition has them."""
    return {nt: [n for n in ('x', 'y')
                 if n in sampler.part.node_feats.get(nt, {})]
            for nt in sampler.typed.node_types}
