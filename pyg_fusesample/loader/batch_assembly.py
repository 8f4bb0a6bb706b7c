"""A mini-batch's storages, filled the way PyG's ``filter_data`` fills them,
without its per-attribute checks and ``__setattr__`` calls.

PyG's generic filter spends most of a GPU batch's host time deciding, for
every attribute of every batch, whether it is node- or edge-level, and in
``Data.__setattr__``. Here that is decided once per storage
(:class:`StorePlan`, rebuilt when the storage's keys or tensors change), the
rows of every node (edge) attribute on the sampling GPU are copied by one
``fusesample::gather_rows_list`` call, and each storage of the batch is filled
in one dictionary update.
"""
import copy
from typing import Dict, List, Optional

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader.utils import index_select
from torch_geometric.sampler import HeteroSamplerOutput

from ..ops import gather_rows_list

# Attribute types sliced by node or edge, as PyG's filter_data slices them.
_ARRAYS = (Tensor, np.ndarray)


class StorePlan:
    r"""How a batch takes each attribute of one storage, in storage order:
    ``entries`` of (key, kind, cat dim, value), kind being ``'edge_index'``,
    ``'num_nodes'``, ``'node'``, ``'edge'`` or ``'other'`` as
    ``torch_geometric.loader.utils.filter_data`` classifies them; and the
    node (edge) attributes gathered row by row on the sampling device (those
    on it, concatenated along dim 0)."""
    def __init__(self, store, parent, device: torch.device,
                 skip: tuple = ()):
        # skip: node attributes gathered elsewhere (a GPUFeatureCache).
        self.skip = skip
        self.entries = []
        for key, value in store.items():
            if key in ('edge_index', 'num_nodes'):
                self.entries.append((key, key, None, None))
            elif isinstance(value, _ARRAYS) and store.is_node_attr(key):
                self.entries.append((key, 'node',
                                     parent.__cat_dim__(key, value, store),
                                     value))
            elif isinstance(value, _ARRAYS) and store.is_edge_attr(key):
                self.entries.append((key, 'edge',
                                     parent.__cat_dim__(key, value, store),
                                     value))
            else:
                self.entries.append((key, 'other', None, value))
        self.values = {key: value for key, _, _, value in self.entries}
        self.node_rows = self._rows('node', device)
        self.edge_rows = self._rows('edge', device)

    def _rows(self, kind: str, device: torch.device) -> List[str]:
        return [key for key, k, dim, value in self.entries
                if k == kind and dim == 0 and isinstance(value, Tensor)
                and _gathered_on(value, device) and key not in self.skip]


def _gathered_on(value: Tensor, device: torch.device) -> bool:
    # Rows the sampling device gathers: those in its memory, and those in
    # pinned host memory, which a GPU reads in place (zero-copy; pinning an
    # attribute is how a user asks for that: features larger than the GPU).
    return value.device == device or (
        device.type == 'cuda' and value.device.type == 'cpu'
        and value.is_pinned())


def signature(store) -> tuple:
    r"""What a :class:`StorePlan` depends on: the keys and the values."""
    return tuple((k, id(v)) for k, v in store.items())


def gather_on_device(plan: StorePlan, node: Optional[Tensor],
                     edge: Optional[Tensor]) -> Dict[str, Tensor]:
    r"""The rows of the plan's device attributes, one
    ``fusesample::gather_rows_list`` call per index. The index is sampler
    output, so its range needs no check (and no host sync)."""
    rows = {}
    for keys, index in ((plan.node_rows, node), (plan.edge_rows, edge)):
        if keys and index is not None and index.is_cuda:
            rows.update(zip(keys, gather_rows_list(
                [plan.values[k] for k in keys], index, check_index=False)))
    return rows


def fill(mapping: dict, values: dict):
    r"""Writes a storage's ``values`` into its ``mapping``; ``None`` removes
    the key (as setting an attribute to ``None`` does)."""
    for key, value in values.items():
        if value is None:
            mapping.pop(key, None)
        else:
            mapping[key] = value


def store_mapping(plan: StorePlan, node: Optional[Tensor],
                  edge: Optional[Tensor], edge_index: Optional[Tensor],
                  rows: Dict[str, Tensor]) -> dict:
    r"""One storage of the batch; ``rows`` holds the attributes already
    gathered by node (edge) id, the others are selected here. Edge-level
    attributes of a sample without edge ids (bidirectional subgraphs) map to
    ``None``: the batch drops them, as PyG's filter does."""
    index = {'node': node, 'edge': edge}
    mapping = {}
    for key, kind, dim, value in plan.entries:
        if kind == 'edge_index':
            mapping[key] = edge_index
        elif kind == 'num_nodes':
            mapping[key] = node.numel()
        elif key in rows:
            mapping[key] = rows[key]
        elif kind == 'edge' and edge is None:
            mapping[key] = None
        elif index.get(kind) is not None and isinstance(value, Tensor):
            mapping[key] = value.index_select(dim, index[kind].to(value.device))
        elif index.get(kind) is not None:  # NumPy (e.g. a memmap): a tensor
            mapping[key] = index_select(value, index[kind].cpu(), dim=dim)
        else:
            mapping[key] = value
    return mapping


def sampled_mapping(plan: StorePlan, node: Tensor, edge: Optional[Tensor],
                    edge_index: Tensor, batch: Optional[Tensor],
                    num_sampled_nodes, num_sampled_edges,
                    rows: Dict[str, Tensor],
                    cached: Optional[Dict] = None) -> dict:
    r"""The storage of a homogeneous batch as PyG's loaders fill it before
    their own metadata: every attribute sliced (:func:`store_mapping`; the
    :obj:`cached` ones, ``{attribute: GPUFeatureCache}``, through their
    caches), then ``n_id``, ``e_id``, ``batch``, ``num_sampled_nodes`` and
    ``num_sampled_edges``."""
    for key, cache in (cached or {}).items():
        rows[key] = cache.gather(node)
    mapping = store_mapping(plan, node, edge, edge_index, rows)
    mapping.setdefault('n_id', node)
    if edge is not None:
        mapping.setdefault('e_id', edge)
    if batch is not None:
        mapping['batch'] = batch
    if num_sampled_nodes is not None:
        mapping['num_sampled_nodes'] = num_sampled_nodes
    if num_sampled_edges is not None:
        mapping['num_sampled_edges'] = num_sampled_edges
    return mapping


class DataPlan:
    r""":class:`StorePlan` of a :class:`Data`'s storage, rebuilt when the
    storage's keys or tensors change (the twin of :class:`HeteroPlans`)."""
    def __init__(self):
        self.signature = self.plan = None

    def get(self, data: Data, device: torch.device,
            cached: Optional[Dict] = None) -> StorePlan:
        # cached: {attribute: cache} gathered elsewhere (a GPUFeatureCache),
        # fixed for the loader's life.
        sig = signature(data._store)
        if sig != self.signature:
            self.plan = StorePlan(data._store, data, device,
                                  skip=tuple(cached or {}))
            self.signature = sig
        return self.plan


class HeteroPlans:
    r""":class:`StorePlan` of every node and edge storage of a
    :class:`HeteroData`, rebuilt when a storage changes."""
    def __init__(self):
        self.signature = None

    def get(self, data: HeteroData, device: torch.device,
            cached: Optional[Dict[str, Dict]] = None) -> 'HeteroPlans':
        # cached: {node type: {attribute: cache}} gathered elsewhere (a
        # GPUFeatureCache), fixed for the loader's life.
        sig = tuple(signature(s) for s in data.stores)
        if sig != self.signature:
            cached = cached or {}
            self.node = {nt: StorePlan(data[nt], data, device,
                                       skip=tuple(cached.get(nt, {})))
                         for nt in data.node_types}
            self.edge = {et: StorePlan(data[et], data, device)
                         for et in data.edge_types}
            self.signature = sig
        return self


def _edge_index(out: HeteroSamplerOutput, edge_type, empty: Tensor) -> Tensor:
    # An edge type's [2, n] edge_index: the sampler's own when its row and
    # col still view it (a TypedSamplerOutput that nothing rewrote, e.g.
    # to_bidirectional), else the two stacked.
    row, col = out.row.get(edge_type, empty), out.col.get(edge_type, empty)
    edge_index = (getattr(out, 'edge_index', None) or {}).get(edge_type)
    if (edge_index is not None and edge_index.size(1) == row.numel() == col.numel()
            and edge_index[0].data_ptr() == row.data_ptr()
            and edge_index[1].data_ptr() == col.data_ptr()):
        return edge_index
    return torch.stack([row, col])


def assemble_hetero(data: HeteroData, plans: HeteroPlans,
                    out: HeteroSamplerOutput, input_type: str,
                    cached: Optional[Dict[str, Dict]] = None) -> HeteroData:
    r"""What :class:`~torch_geometric.loader.NodeLoader` makes of a
    :class:`~torch_geometric.sampler.HeteroSamplerOutput`: the storages of
    :func:`sampled_hetero`, and ``input_id``, ``seed_time``, ``batch_size``
    on the input node type."""
    batch = sampled_hetero(data, plans, out, cached)
    input_id, seed_time = out.metadata[0], out.metadata[1]
    store = batch[input_type]._mapping
    store['input_id'] = input_id
    if seed_time is not None:
        store['seed_time'] = seed_time
    store['batch_size'] = input_id.size(0)
    return batch


def sampled_hetero(data: HeteroData, plans: HeteroPlans,
                   out: HeteroSamplerOutput,
                   cached: Optional[Dict[str, Dict]] = None) -> HeteroData:
    r"""A heterogeneous batch as PyG's loaders fill it before their own
    metadata: every node and edge storage sliced, plus ``n_id``, ``e_id``,
    ``batch``, ``num_sampled_nodes`` / ``num_sampled_edges``.
    :obj:`cached`: ``{node type: {attribute: GPUFeatureCache}}``, rows
    gathered through the cache (the plans skip them)."""
    batch = copy.copy(data)
    empty = torch.empty(0, dtype=torch.long)
    cached = cached or {}
    for nt, plan in plans.node.items():
        node = out.node.get(nt, empty)
        rows = gather_on_device(plan, node, None)
        for key, cache in cached.get(nt, {}).items():
            rows[key] = cache.gather(node)
        mapping = store_mapping(plan, node, None, None, rows)
        mapping.setdefault('n_id', node)
        if out.batch is not None and nt in out.batch:
            mapping['batch'] = out.batch[nt]
        if out.num_sampled_nodes is not None and nt in out.num_sampled_nodes:
            mapping['num_sampled_nodes'] = out.num_sampled_nodes[nt]
        fill(batch[nt]._mapping, mapping)
    for et, plan in plans.edge.items():
        edge = (out.edge or {}).get(et, empty)
        edge_index = _edge_index(out, et, empty)
        mapping = store_mapping(plan, None, edge, edge_index,
                                gather_on_device(plan, None, edge))
        if edge is not None:
            mapping.setdefault('e_id', edge)
        if out.num_sampled_edges is not None and et in out.num_sampled_edges:
            mapping['num_sampled_edges'] = out.num_sampled_edges[et]
        fill(batch[et]._mapping, mapping)
    return batch
