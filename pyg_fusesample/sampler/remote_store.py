"""``(FeatureStore, GraphStore)`` data: the graph the sampler reads.

PyG's loaders take a pair of stores instead of a ``Data`` / ``HeteroData``
(``NeighborLoader((feature_store, graph_store), ...)``). The sampler needs
only the graph's structure and node counts, so it reads them once into a
skeleton ``Data`` (no node type: every edge attribute has ``edge_type`` None)
or ``HeteroData`` holding ``num_nodes`` per node type and ``edge_index`` per
edge type, in the COO order ``GraphStore.coo()`` returns, and samples that
as it samples any graph. ``edge_permutation`` maps those COO positions to
the positions in each edge type's stored layout, as PyG's sampler's
``perm`` does, so a batch's ``e_id`` means what it means in PyG. The
features stay in the feature store: the loader's PyG filter fetches a
batch's rows with ``multi_get_tensor``.
"""
import copy
from typing import Dict, Optional, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.data import (Data, FeatureStore, GraphStore, HeteroData,
                                  remote_backend_utils)


def is_remote(data) -> bool:
    r"""Whether :obj:`data` is a ``(FeatureStore, GraphStore)`` pair."""
    return (isinstance(data, (tuple, list)) and len(data) == 2
            and isinstance(data[0], FeatureStore)
            and isinstance(data[1], GraphStore))


def remote_graph(data: Tuple[FeatureStore, GraphStore],
                 time_attr: Optional[str] = None
                 ) -> Tuple[Union[Data, HeteroData],
                            Optional[Union[Tensor, Dict]]]:
    r"""The skeleton graph of a store pair (see the module docstring) and
    its edge permutation (``None`` where the COO is the stored order). With
    :obj:`time_attr`, the feature store's tensors of that name come along:
    node-level ones (group name a node type, or ``None``) on their node
    type, edge-level ones (group name an edge type) on their edge type, in
    the skeleton's COO order."""
    feature_store, graph_store = data
    edge_attrs = graph_store.get_all_edge_attrs()
    if not edge_attrs:
        raise ValueError("the GraphStore holds no edges")
    edge_types = list(dict.fromkeys(attr.edge_type for attr in edge_attrs))
    row, col, perm = graph_store.coo(edge_types)
    times = _times(feature_store, time_attr)
    if edge_types == [None]:  # homogeneous, as PyG's sampler reads it
        # (coo() hands out the one edge type's tensors without a dict)
        graph = Data(edge_index=torch.stack([row, col]),
                     num_nodes=max(edge_attrs[0].size))
        if None in times:
            graph[time_attr] = times[None]
        return graph, perm
    graph = HeteroData()
    node_types = {attr.group_name for attr in
                  feature_store.get_all_tensor_attrs()
                  if isinstance(attr.group_name, str)}
    node_types |= {nt for et in edge_types for nt in (et[0], et[-1])}
    for nt in sorted(node_types):
        graph[nt].num_nodes = remote_backend_utils.size(feature_store,
                                                        graph_store, nt)
    for et in edge_types:
        graph[et].edge_index = torch.stack([row[et], col[et]])
    for group, time in times.items():
        if isinstance(group, tuple) and perm.get(group) is not None:
            time = time[perm[group]]  # (stored order -> COO order)
        graph[group][time_attr] = time
    perm = {et: p for et, p in perm.items() if p is not None}
    return graph, perm or None


def _times(feature_store: FeatureStore, time_attr: Optional[str]) -> Dict:
    # {group name: the whole tensor} of the feature store's time_attr.
    if time_attr is None:
        return {}
    attrs = [copy.copy(attr) for attr in feature_store.get_all_tensor_attrs()
             if attr.attr_name == time_attr]
    if not attrs:
        raise ValueError(f"temporal sampling: the FeatureStore holds no "
                         f"'{time_attr}' tensor")
    for attr in attrs:
        attr.index = None  # the whole tensor
    return {attr.group_name: t for attr, t in
            zip(attrs, feature_store.multi_get_tensor(attrs))}
