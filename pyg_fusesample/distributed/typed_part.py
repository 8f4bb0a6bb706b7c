r"""A heterogeneous part as the distributed sampler reads it: one typed CSC
in one id space, as :class:`~pyg_fusesample.sampler.typed_graph.TypedCSC`
lays out the whole graph for the single-process sampler.

Node types are laid end to end in META's order (type ``i``'s node ``v`` is
``node_offset[i] + v``). The part's owned nodes, all types together, are
those ids ascending (type by type, each ascending), and its CSC has ``T``
segments per owned node: segment ``j * T + t`` holds owned node ``j``'s
in-edges of edge type ``t`` (empty where ``t`` does not end at its type),
sources as ids of the one space, in edge id order as the whole graph's
typed CSC holds them. So draws keyed by ``(hop * T + t, position)`` are the
whole graph's (``draw_key`` in ``kernels/sampler/sample_count.h``). An
edge is carried as ``id * T + t`` (``id``: type-local), so one integer says
both its type and its id.
"""
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Dict, List, Tuple

import torch
from torch import Tensor

from .partition_files import PartCSC, Partition


@dataclass(eq=False)
class TypedPart:
    r"""The typed layout of a heterogeneous :class:`Partition` (see the
    module): ``nodes`` (owned ids of the one space, ascending), ``owner``
    (one space id -> part), ``csc`` (``T`` segments per owned node),
    ``node_offset`` (``[NT + 1]``, host ints), ``local_offset`` (where each
    node type's owned nodes start in ``nodes``)."""
    node_types: List[str]
    edge_types: List[Tuple[str, str, str]]
    node_offset: List[int]
    local_offset: List[int]
    nodes: Tensor
    owner: Tensor
    csc: PartCSC
    # (node_offset's inner bounds on each device they were asked on: a
    # list made a tensor there is a copy the host waits for)
    _bounds: Dict[torch.device, Tensor] = field(
        default_factory=dict, init=False, repr=False)

    @property
    def num_edge_types(self) -> int:
        return len(self.edge_types)

    def type_of(self, node_type: str) -> int:
        if node_type not in self.node_types:
            raise KeyError(f"unknown node type {node_type!r} (the partition "
                           f"has {self.node_types})")
        return self.node_types.index(node_type)

    def type_index(self, node: Tensor) -> Tensor:
        r"""The node type (its index) of each id of the one space."""
        bounds = self._bounds.get(node.device)
        if bounds is None:
            bounds = self._bounds[node.device] = torch.tensor(
                self.node_offset[1:-1], device=node.device)
        return torch.bucketize(node, bounds, right=True)


def typed_part(part: Partition) -> TypedPart:
    r"""The :class:`TypedPart` of a heterogeneous part (on the part's
    device)."""
    node_types, edge_types = list(part.node_types), [
        tuple(et) for et in part.edge_types]
    dev = part.device
    node_offset = [0, *accumulate(part.node_map[nt].numel()
                                  for nt in node_types)]
    owned = [part.nodes[nt].to(torch.long) for nt in node_types]
    local_offset = [0, *accumulate(ids.numel() for ids in owned)]
    nodes = torch.cat([ids + off for ids, off in zip(owned, node_offset)])
    owner = torch.cat([part.node_map[nt].to(torch.long)
                       for nt in node_types])
    T = len(edge_types)
    n_local = local_offset[-1]
    keys, rows, eids, attrs, times = [], [], [], [], []
    for t, et in enumerate(edge_types):
        csc = part.csc[et]
        s, d = node_types.index(et[0]), node_types.index(et[-1])
        deg = csc.colptr[1:] - csc.colptr[:-1]
        dst = torch.repeat_interleave(
            torch.arange(deg.numel(), device=dev), deg,
            output_size=csc.num_edges)
        keys.append((local_offset[d] + dst) * T + t)
        rows.append(csc.row.to(torch.long) + node_offset[s])
        eids.append(csc.edge_id.to(torch.long) * T + t)
        attrs.append(csc.edge_attr)
        times.append(csc.edge_time)
    order = None
    if T and sum(k.numel() for k in keys):
        key = torch.cat(keys)
        # (stable: within a segment, the type's CSC order: edge id order)
        key, order = torch.sort(key, stable=True)
        row, eid = torch.cat(rows)[order], torch.cat(eids)[order]
    else:
        key = row = eid = torch.zeros(0, dtype=torch.long, device=dev)
    colptr = torch.searchsorted(
        key, torch.arange(n_local * T + 1, device=dev))

    def along(values):
        # an edge attribute of every edge type (weights: [e] or [e, 1]) in
        # the typed CSC's order; None unless every edge type has it
        if not values or any(v is None or v.dim() > 2 or (
                v.dim() == 2 and v.size(1) != 1) for v in values):
            return None
        flat = torch.cat([v.reshape(-1) for v in values])
        return flat if order is None else flat[order]
    return TypedPart(node_types, edge_types, node_offset, local_offset,
                     nodes, owner,
                     PartCSC(colptr, row, eid, (node_offset[-1],
                                                node_offset[-1]),
                             along(attrs), along(times)))


def typed_fanouts(num_neighbors, edge_types: List[Tuple[str, str, str]]
                  ) -> List[List[int]]:
    r"""Per hop, the fan-out of every edge type (``T`` per hop), from one
    list for all edge types or a dict edge type -> list (as the loaders
    take them; every list of the same length)."""
    if isinstance(num_neighbors, dict):
        given = {tuple(k): [int(x) for x in v]
                 for k, v in num_neighbors.items()}
        unknown = [k for k in given if k not in edge_types]
        if unknown:
            raise ValueError(f"'num_neighbors' names edge types the "
                             f"partition does not have: {unknown}")
        hops = {len(v) for v in given.values()}
        if len(hops) > 1:
            raise ValueError("'num_neighbors' must give every edge type the "
                             "same number of hops")
        L = hops.pop() if hops else 0
        per_type = [given.get(et, [0] * L) for et in edge_types]
    else:
        ks = [int(x) for x in num_neighbors]
        L = len(ks)
        per_type = [ks] * len(edge_types)
    out = [[per_type[t][h] for t in range(len(edge_types))]
           for h in range(L)]
    if any(k < -1 for hop in out for k in hop):
        raise ValueError(f"'num_neighbors' must be >= -1, got "
                         f"{num_neighbors}")
    return out
