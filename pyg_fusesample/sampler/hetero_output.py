"""The typed sample as PyG's :class:`HeteroSamplerOutput`.

``fusesample::neighbor_sample`` over a :class:`TypedCSC` returns one sample in
global ids: nodes seeds first and grouped by hop, edges grouped by hop, then
target, then edge type. Keeping each type's entries in that order gives what
PyG's heterogeneous sampler returns: per node type, ids seeds first and
grouped by hop; per edge type, local (row, col) and the edge ids within the
type, grouped by hop. Every node and edge type is present, empty where
nothing was sampled. All of it runs on the sample's device, with the sizes
the op counted per type (``type_counts``): no further host read.
"""
from typing import Dict, List

import torch
from torch import Tensor
from torch_geometric.sampler import HeteroSamplerOutput

from ..ops import NeighborSampleOutput
from .typed_graph import TypedCSC


def _grouping(ids: Tensor, offset: Tensor, num_types: int):
    # Each global id's type (offset[i] <= id < offset[i + 1]) and a stable
    # order that groups the entries by type. The sort keys are bytes where
    # the types fit: a radix sort then takes one pass (8 for int64 keys).
    types = torch.searchsorted(offset, ids, right=True) - 1
    key = types.to(torch.uint8 if num_types <= 256 else torch.int32)
    return types, torch.sort(key, stable=True).indices


def to_hetero_output(graph: TypedCSC, out: NeighborSampleOutput
                     ) -> HeteroSamplerOutput:
    r"""Splits a typed sample (taken with ``graph.op_typing``, so that its
    ``type_counts`` hold every per-type size) by node and edge type, without
    reading anything back from the device."""
    node_types, edge_types = graph.node_types, graph.edge_types
    NT, T = len(node_types), len(edge_types)
    L = out.num_sampled_edges.numel()
    counts: List[int] = out.type_counts.tolist()  # a host tensor
    node_counts = [counts[i * (L + 1):(i + 1) * (L + 1)] for i in range(NT)]
    edge_counts = [counts[NT * (L + 1) + t * L:NT * (L + 1) + (t + 1) * L]
                   for t in range(T)]
    sizes = [sum(c) for c in node_counts]
    esizes = [sum(c) for c in edge_counts]

    node_offset = graph.offsets('node_offset')
    ntype, norder = _grouping(out.node, node_offset, NT)
    # Local id within its type of every node of the sample, for the edges.
    # The types' starts are counted on the device: a tensor made from the
    # host's counts would be a blocking copy, which waits for the stream.
    per_type = torch.zeros(NT, dtype=torch.long, device=ntype.device)
    per_type.index_add_(0, ntype, torch.ones_like(ntype))
    starts = per_type.cumsum(0) - per_type
    nlocal = torch.empty_like(norder)
    nlocal[norder] = torch.arange(norder.numel(), device=norder.device) - \
        starts[ntype[norder]]
    node = (out.node - node_offset[ntype])[norder].split(sizes)
    batch = None
    if out.batch is not None:
        batch = dict(zip(node_types, out.batch[norder].split(sizes)))

    row = col = edge = ()
    if T > 0:
        edge_offset = graph.offsets('edge_offset')
        etype, eorder = _grouping(out.edge, edge_offset, T)
        row = nlocal[out.row[eorder]].split(esizes)
        col = nlocal[out.col[eorder]].split(esizes)
        edge = (out.edge - edge_offset[etype])[eorder].split(esizes)
    return HeteroSamplerOutput(
        node=dict(zip(node_types, node)),
        row=dict(zip(edge_types, row)),
        col=dict(zip(edge_types, col)),
        edge=dict(zip(edge_types, edge)),
        batch=batch,
        num_sampled_nodes=dict(zip(node_types, node_counts)),
        num_sampled_edges=dict(zip(edge_types, edge_counts)),
    )


def typed_seeds(graph: TypedCSC, seeds: Dict[str, Tensor]) -> Tensor:
    r"""Global ids of per-type seeds."""
    start = dict(zip(graph.node_types, graph.node_offset))
    out = [ids + start[nt] for nt, ids in seeds.items()]
    return torch.cat(out) if out else torch.empty(0, dtype=torch.long)


def check_seed_range(graph: TypedCSC, node_type: str, ids: Tensor):
    r"""Raises :class:`IndexError` unless :obj:`ids` lie in their type's
    range (the op checks only the global range). For host tensors: on a GPU
    the check would be a host synchronisation."""
    i = graph.node_types.index(node_type)
    size = graph.node_offset[i + 1] - graph.node_offset[i]
    if ids.numel() > 0:
        lo, hi = torch.aminmax(ids)
        if int(lo) < 0 or int(hi) >= size:
            raise IndexError(f"seed ids of node type {node_type!r} lie in "
                             f"[{int(lo)}, {int(hi)}], outside [0, {size})")
