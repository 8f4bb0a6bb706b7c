"""The typed sample as PyG's :class:`HeteroSamplerOutput`.

``fusesample::neighbor_sample`` over a :class:`TypedCSC` returns one sample in
global ids: nodes seeds first and grouped by hop, edges grouped by hop, then
target, then edge type. Keeping each type's entries in that order gives what
PyG's heterogeneous sampler returns: per node type, ids seeds first and
grouped by hop; per edge type, local (row, col) and the edge ids within the
type, grouped by hop. Every node and edge type is present, empty where
nothing was sampled. All of it runs on the sample's device; the per-type
sizes are read in one host copy.
"""
from typing import Dict, List, Optional

import torch
from torch import Tensor
from torch_geometric.sampler import HeteroSamplerOutput

from ..ops import NeighborSampleOutput
from .typed_graph import TypedCSC


def _types_and_hops(ids: Tensor, offset: Tensor, per_hop: List[int]):
    # The type of each global id (offset[i] <= id < offset[i + 1]) and the
    # hop of each position (per_hop[h] consecutive entries each).
    types = torch.searchsorted(offset, ids, right=True) - 1
    hops = torch.repeat_interleave(
        torch.arange(len(per_hop), device=ids.device),
        torch.tensor(per_hop, device=ids.device), output_size=ids.numel())
    return types, hops


def _group(types: Tensor, num_types: int):
    # A stable order that groups entries by type, and each entry's position
    # within its type.
    order = torch.sort(types, stable=True).indices
    counts = torch.bincount(types, minlength=num_types)
    starts = torch.cumsum(counts, 0) - counts
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel(), device=order.device) - starts[types[order]]
    return order, local


def to_hetero_output(graph: TypedCSC, out: NeighborSampleOutput,
                     edge: Optional[Tensor] = None,
                     row: Optional[Tensor] = None, col: Optional[Tensor] = None,
                     ) -> HeteroSamplerOutput:
    r"""Splits a typed sample by node and edge type. ``row``/``col``/
    ``edge`` override the sample's edges (an induced subgraph's), whose
    per-hop edge counts are then not reported."""
    node_types, edge_types = graph.node_types, graph.edge_types
    NT, T = len(node_types), len(edge_types)
    nsn = out.num_sampled_nodes.tolist()
    by_hop = edge is None
    if by_hop:
        row, col, edge = out.row, out.col, out.edge
        nse = out.num_sampled_edges.tolist()
    else:
        nse = [edge.numel()]
    L = len(nse)

    ntype, nhop = _types_and_hops(out.node, graph.offsets('node_offset'), nsn)
    etype, ehop = _types_and_hops(edge, graph.offsets('edge_offset'), nse)
    # One host copy: nodes per (type, hop) and edges per (edge type, hop).
    counts = torch.cat([
        torch.bincount(ntype * (L + 1) + nhop, minlength=NT * (L + 1)),
        torch.bincount(etype * L + ehop, minlength=T * L)]).tolist()
    node_counts = [counts[i * (L + 1):(i + 1) * (L + 1)] for i in range(NT)]
    edge_counts = [counts[NT * (L + 1) + t * L:NT * (L + 1) + (t + 1) * L]
                   for t in range(T)]

    norder, nlocal = _group(ntype, NT)
    eorder, _ = _group(etype, T)
    node_offset = graph.offsets('node_offset')
    edge_offset = graph.offsets('edge_offset')
    sizes = [sum(c) for c in node_counts]
    node = (out.node - node_offset[ntype])[norder].split(sizes)
    batch = None
    if out.batch is not None:
        batch = dict(zip(node_types, out.batch[norder].split(sizes)))
    esizes = [sum(c) for c in edge_counts]
    row = nlocal[row][eorder].split(esizes)
    col = nlocal[col][eorder].split(esizes)
    edge = (edge - edge_offset[etype])[eorder].split(esizes)
    return HeteroSamplerOutput(
        node=dict(zip(node_types, node)),
        row=dict(zip(edge_types, row)),
        col=dict(zip(edge_types, col)),
        edge=dict(zip(edge_types, edge)),
        batch=batch,
        num_sampled_nodes=dict(zip(node_types, node_counts)),
        num_sampled_edges=(dict(zip(edge_types, edge_counts)) if by_hop
                           else None),
    )


def typed_seeds(graph: TypedCSC, seeds: Dict[str, Tensor]) -> Tensor:
    r"""Global ids of per-type seeds (one node type: the loaders' case)."""
    start = dict(zip(graph.node_types, graph.node_offset))
    return torch.cat([ids + start[nt] for nt, ids in seeds.items()])
