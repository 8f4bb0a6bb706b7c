"""The typed sample as PyG's :class:`HeteroSamplerOutput`.

``fusesample::neighbor_sample`` over a :class:`TypedCSC` returns one sample in
global ids: nodes seeds first and grouped by hop, edges grouped by hop, then
target, then edge type. Keeping each type's entries in that order gives what
PyG's heterogeneous sampler returns: per node type, ids seeds first and
grouped by hop; per edge type, local (row, col) and the edge ids within the
type, grouped by hop. Every node and edge type is present, empty where
nothing was sampled. All of it runs on the sample's device, with the sizes
the op counted per type (``type_counts``): no further host read. The
split itself is one op (``fusesample::split_by_type``).

With ``subgraph_type='induced'`` the edges are instead every edge, of every
type, among the sampled nodes (:func:`to_hetero_induced_output`), as PyG's
torch-sparse sampler returns them.
"""
from typing import Dict, List

import torch
from torch import Tensor
from torch_geometric.sampler import HeteroSamplerOutput
from torch_geometric.typing import EdgeType

from ..ops import NeighborSampleOutput, in_set_entries, split_by_type
from .typed_graph import TypedCSC


class TypedSamplerOutput(HeteroSamplerOutput):
    r""":class:`~torch_geometric.sampler.HeteroSamplerOutput` that also holds
    each edge type's ``edge_index`` (``[2, n]``, its ``row`` and ``col``
    views of it): batch assembly takes it as is instead of stacking the
    two."""
    def __init__(self, *args, edge_index: Dict[EdgeType, Tensor], **kwargs):
        super().__init__(*args, **kwargs)
        self.edge_index = edge_index


def to_hetero_output(graph: TypedCSC, out: NeighborSampleOutput
                     ) -> HeteroSamplerOutput:
    r"""Splits a typed sample (taken with ``graph.op_typing``, so that its
    ``type_counts`` hold every per-type size) by node and edge type with one
    ``fusesample::split_by_type`` call, without reading anything back from
    the device."""
    node_types, edge_types = graph.node_types, graph.edge_types
    NT, T = len(node_types), len(edge_types)
    L = out.num_sampled_edges.numel()
    counts: List[int] = out.type_counts.tolist()  # a host tensor
    node_counts = [counts[i * (L + 1):(i + 1) * (L + 1)] for i in range(NT)]
    edge_counts = [counts[NT * (L + 1) + t * L:NT * (L + 1) + (t + 1) * L]
                   for t in range(T)]
    sizes = [sum(c) for c in node_counts]
    esizes = [sum(c) for c in edge_counts]

    split = split_by_type(out.node, graph.offsets('node_offset'), out.row,
                          out.col, out.edge, graph.offsets('edge_offset'))
    node = split.node.split(sizes)
    batch = None
    if out.batch is not None:
        batch = dict(zip(node_types, out.batch[split.node_order].split(sizes)))
    edge_index = [block.view(2, n) for block, n in
                  zip(split.edge_index.split([2 * n for n in esizes]), esizes)]
    return TypedSamplerOutput(
        node=dict(zip(node_types, node)),
        row={et: ei[0] for et, ei in zip(edge_types, edge_index)},
        col={et: ei[1] for et, ei in zip(edge_types, edge_index)},
        edge=dict(zip(edge_types, split.edge.split(esizes))),
        batch=batch,
        num_sampled_nodes=dict(zip(node_types, node_counts)),
        num_sampled_edges=dict(zip(edge_types, edge_counts)),
        edge_index=dict(zip(edge_types, edge_index)),
    )


def to_hetero_induced_output(graph: TypedCSC, out: NeighborSampleOutput
                             ) -> HeteroSamplerOutput:
    r"""The typed sample's nodes, as :func:`to_hetero_output` splits them,
    with every edge among them: per edge type ``(s, r, d)``, each sampled
    ``d`` node's in-edges of that type whose source is a sampled ``s`` node,
    grouped by target in the type's node order, sources in CSC order; local
    ids, edge ids within the type; no per-hop edge counts
    (``num_sampled_edges`` is ``None``, as for homogeneous induced
    subgraphs). One ``fusesample::in_set_entries`` call scans the typed
    CSC's segment ``v * T + t`` of every (sampled node ``v``, edge type
    ``t`` ending at ``v``'s type) and looks each source up among the
    sampled nodes (global ids are disjoint across types, so that is the
    source type's sampled nodes). Host reads on a GPU: the op's one (the
    number of edges) and the per-type edge counts."""
    split = to_hetero_output(graph, out)
    node_types, edge_types = graph.node_types, graph.edge_types
    T, device = len(edge_types), out.node.device
    start = dict(zip(node_types, graph.node_offset))
    nodes = split.node
    # Global ids of the sampled nodes, sorted, and each one's local id.
    global_ids = torch.cat([nodes[nt] + start[nt] for nt in node_types])
    local_ids = torch.cat([torch.arange(nodes[nt].numel(), device=device)
                           for nt in node_types])
    key, order = torch.sort(global_ids)
    local_of_key = local_ids[order]
    # Positions: per edge type, its target type's sampled nodes in order.
    targets = [nodes[et[-1]] for et in edge_types]
    position = torch.cat([(ids + start[et[-1]]) * T + t for t, (et, ids) in
                          enumerate(zip(edge_types, targets))]) if T else \
        torch.empty(0, dtype=torch.long, device=device)
    n = position.numel()
    g = graph.graph
    nbr_pos, pos, slot = in_set_entries(
        g.colptr, g.row, position, torch.zeros_like(position), key,
        torch.tensor([0, key.numel()], device=device),
        torch.zeros(n, dtype=torch.bool, device=device), graph.node_offset[-1])
    # Entries come by position, so by edge type: split at the types'
    # first positions.
    first = torch.tensor([0] + [ids.numel() for ids in targets],
                         device=device).cumsum(0)
    sizes = torch.searchsorted(pos, first).diff().tolist() if T else []
    edge = g.edge_id[slot] if g.edge_id is not None else slot
    row, col, eid = {}, {}, {}
    for t, (et, a, b, c, e) in enumerate(zip(
            edge_types, local_of_key[nbr_pos].split(sizes),
            pos.split(sizes), first[:-1], edge.split(sizes))):
        row[et], col[et] = a, b - c
        eid[et] = e - graph.edge_offset[t]
    return HeteroSamplerOutput(
        node=nodes, row=row, col=col, edge=eid, batch=split.batch,
        num_sampled_nodes=split.num_sampled_nodes, num_sampled_edges=None)


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
