"""A heterogeneous graph as one typed CSC: what the sampler op reads.

Node types are laid end to end in one id space (type ``i`` owns global ids
``node_offset[i] .. node_offset[i + 1]``), and so are edge types. The CSC has
``T = len(edge_types)`` segments per node: segment ``v * T + t`` holds node
``v``'s in-edges of edge type ``t`` (``fusesample::neighbor_sample`` with
``num_edge_types=T``), so one launch samples every edge type of every hop.
Its ``edge_id`` is the global edge id (``edge_offset[t]`` + the id within the
type). A node's segments of edge types that do not end at its type are
empty: ``colptr`` costs ``8 * N * T`` bytes, small next to the edges for
graphs with a handful of relations (ogbn-mag: 7 with reverses).

Built once per graph and device and memoised on the
:class:`~torch_geometric.data.HeteroData` (weakly), invalidated when an
``edge_index`` is replaced or modified in place.
"""
import weakref
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType, NodeType

from .graph_store import CSCGraph, build_csc


@dataclass(frozen=True)
class TypedCSC:
    r"""The typed CSC of a :class:`~torch_geometric.data.HeteroData`
    (see the module docstring): ``graph`` holds ``colptr`` (``[N T + 1]``),
    ``row`` (global source ids) and ``edge_id`` (global edge ids)."""
    graph: CSCGraph
    node_types: List[NodeType]
    edge_types: List[EdgeType]
    node_offset: List[int]     # [len(node_types) + 1]
    edge_offset: List[int]     # [len(edge_types) + 1]

    @property
    def num_edge_types(self) -> int:
        return len(self.edge_types)

    @property
    def op_typing(self) -> Dict[str, List[int]]:
        r"""The op's type tables (``kernels/sampler/type_counts.h``): type
        offsets, and each edge type's (source, target) node type index. A
        graph without edge types samples with one empty segment per node."""
        if '_typing' not in self.__dict__:
            index = {nt: i for i, nt in enumerate(self.node_types)}
            nodes = [index[nt] for et in self.edge_types
                     for nt in (et[0], et[-1])]
            object.__setattr__(self, '_typing', dict(
                node_type_offsets=self.node_offset,
                edge_type_offsets=self.edge_offset if nodes else [0, 0],
                edge_type_nodes=nodes or [0, 0]))
        return self.__dict__['_typing']

    @property
    def device(self) -> torch.device:
        return self.graph.device

    def offsets(self, kind: str) -> Tensor:
        r"""``node_offset`` or ``edge_offset`` as an int64 tensor on the
        graph's device (cached)."""
        key = '_' + kind
        if key not in self.__dict__:
            object.__setattr__(self, key, torch.tensor(
                getattr(self, kind), dtype=torch.long, device=self.device))
        return self.__dict__[key]


# id(data) -> (weakref, signature, {(is_sorted, device): TypedCSC}).
_cache: Dict[int, tuple] = {}


def _signature(data: HeteroData) -> Tuple:
    # What the typed CSC depends on: every edge_index (identity and version)
    # and every node count.
    edges = tuple((et, id(data[et].edge_index), data[et].edge_index._version)
                  for et in data.edge_types)
    return edges, tuple((nt, data[nt].num_nodes) for nt in data.node_types)


def _check(data: HeteroData):
    for nt in data.node_types:
        if data[nt].num_nodes is None:
            raise ValueError(f"node type '{nt}' has no 'num_nodes' (and no "
                             f"node attribute to infer it from)")
    for et in data.edge_types:
        if 'edge_index' not in data[et]:
            raise ValueError(f"edge type {et} has no 'edge_index' "
                             f"(SparseTensor 'adj_t' graphs are not supported "
                             f"yet)")
        ei = data[et].edge_index
        if not isinstance(ei, Tensor) or ei.dim() != 2 or ei.size(0) != 2:
            raise ValueError(f"'edge_index' of edge type {et} must be a "
                             f"Tensor of shape [2, num_edges]")


def _build(data: HeteroData, is_sorted: bool, device) -> TypedCSC:
    node_types, edge_types = list(data.node_types), list(data.edge_types)
    node_offset = [0]
    for nt in node_types:
        node_offset.append(node_offset[-1] + int(data[nt].num_nodes))
    start = dict(zip(node_types, node_offset))
    size = dict(zip(node_types, (int(data[nt].num_nodes) for nt in node_types)))
    T, N = len(edge_types), node_offset[-1]
    edge_offset, src, key = [0], [], []
    for t, et in enumerate(edge_types):
        ei = data[et].edge_index.to(device=device, dtype=torch.long)
        if ei.numel() > 0:
            (lo_s, lo_d), (hi_s, hi_d) = ei.min(1).values.tolist(), ei.max(1).values.tolist()
            if min(lo_s, lo_d) < 0 or hi_s >= size[et[0]] or hi_d >= size[et[-1]]:
                raise ValueError(
                    f"'edge_index' of edge type {et} holds ids outside its "
                    f"node types' ranges ([0, {size[et[0]]}) for sources, "
                    f"[0, {size[et[-1]]}) for targets)")
        src.append(ei[0] + start[et[0]])
        key.append((ei[1] + start[et[-1]]) * T + t)
        edge_offset.append(edge_offset[-1] + ei.size(1))
    if T == 0:
        edge_index = torch.empty(2, 0, dtype=torch.long, device=device)
    else:
        edge_index = torch.stack([torch.cat(src), torch.cat(key)])
    # Sorted by target within each type is not sorted by (target, type)
    # overall, so is_sorted only spares work when there is one edge type.
    graph = build_csc(edge_index, N * max(T, 1), is_sorted=is_sorted and T == 1,
                      device=device)
    return TypedCSC(graph, node_types, edge_types, node_offset, edge_offset)


def build_typed_csc(data: HeteroData, is_sorted: bool = False,
                    device=None) -> TypedCSC:
    r"""The (memoised) :class:`TypedCSC` of :obj:`data` on :obj:`device`
    (default: where the first ``edge_index`` lives)."""
    _check(data)
    if device is None:
        stores = [data[et].edge_index for et in data.edge_types]
        device = stores[0].device if stores else torch.device('cpu')
    device = torch.device(device)
    key, sig = id(data), _signature(data)
    entry = _cache.get(key)
    if entry is None or entry[0]() is not data or entry[1] != sig:
        entry = (weakref.ref(data), sig, {})
        _cache[key] = entry
        weakref.finalize(data, _cache.pop, key, None)
    graphs = entry[2]
    if (is_sorted, str(device)) not in graphs:
        graphs[(is_sorted, str(device))] = _build(data, is_sorted, device)
    return graphs[(is_sorted, str(device))]
