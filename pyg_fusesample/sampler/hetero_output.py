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
"""
from typing import Dict, List

import torch
from torch import Tensor
from torch_geometric.sampler import HeteroSamplerOutput
from torch_geometric.typing import EdgeType

from ..ops import NeighborSampleOutput, split_by_type
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
