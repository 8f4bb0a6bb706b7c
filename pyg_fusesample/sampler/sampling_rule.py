"""PyG's ``time_attr`` and ``weight_attr`` turned into the op's rule.

:func:`sampling_rule` reads the time or weight attribute of a
:class:`~torch_geometric.data.Data` or
:class:`~torch_geometric.data.HeteroData` as PyG's
:class:`~torch_geometric.sampler.NeighborSampler` does, checks it, and
builds the :class:`~pyg_fusesample.sampler.rule_graph.RuleCSC` the op reads
(memoised on the graph it reorders).

* Node-level time (``data[time_attr]`` of nodes): an in-edge is admissible if
  its source node's time is no later than the seed's. Node types without the
  attribute are never excluded (PyG's heterogeneous sampler samples their
  edges uniformly). Seeds take ``input_time``, else their own node time.
* Edge-level time (``data[time_attr]`` of edges): an in-edge is admissible if
  its own time is no later than the seed's; every edge type needs the
  attribute, and seeds need ``input_time``.
* Weights: one finite non-negative weight per edge (every edge type).
* Both: the in-edges the time rule admits, drawn from by weight
  (``temporal_strategy='last'`` takes the latest ``k`` positive-weight
  in-edges as they are; with ``replace=True`` it is refused).
"""
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Union

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from .graph_store import CSCGraph
from .rule_graph import (RuleCSC, slot_values, temporal_csc, weighted_csc,
                         weighted_temporal_csc)
from .typed_graph import TypedCSC

# The time of nodes whose type has no time attribute: never later than a seed.
_NO_TIME = torch.iinfo(torch.long).min


@dataclass
class SamplingRule:
    r"""What a sampler passes to the op besides the graph: the reordered
    CSC and its per-slot times or weight prefix sums, the temporal strategy,
    and for node-level time every node's time (global ids; to give seeds
    their default time) and the node times as PyG's ``edge_sample`` takes
    them (a tensor, or a dict per node type)."""
    csc: RuleCSC
    temporal_strategy: str = 'uniform'
    node_time: Optional[Tensor] = None
    pyg_node_time: Optional[Union[Tensor, Dict[str, Tensor]]] = None

    @property
    def is_temporal(self) -> bool:
        return self.csc.edge_time is not None

    def op_args(self, seed_time: Optional[Tensor]) -> dict:
        r"""The op's keyword arguments for a batch with seed times
        :obj:`seed_time` (on the graph's device)."""
        if not self.is_temporal:
            return dict(weight_cumsum=self.csc.weight_cumsum)
        return dict(edge_time=self.csc.edge_time, seed_time=seed_time,
                    temporal_strategy=self.temporal_strategy,
                    weight_cumsum=self.csc.weight_cumsum)


def _check_one_per(arg: str, name: str, t: Tensor, size: int, value: str,
                   per: str, where: str):
    # One `value` per node / edge: a 1-D tensor of `size` entries.
    if t.dim() != 1 or t.numel() != size:
        raise ValueError(f"'{arg}' {name!r} of {where} must hold one {value} "
                         f"per {per} ({size}), got shape {list(t.shape)}")


def check_weight(name: str, weight, num_edges: int, where: str) -> Tensor:
    r"""A ``weight_attr``'s values, checked: a floating-point tensor of one
    finite, non-negative weight per edge (else ``ValueError`` naming
    :obj:`name` and :obj:`where`)."""
    if not isinstance(weight, Tensor) or not weight.is_floating_point():
        raise ValueError(f"'weight_attr' {name!r} of {where} must be a "
                         f"floating-point tensor, got "
                         f"{getattr(weight, 'dtype', type(weight).__name__)}")
    _check_one_per('weight_attr', name, weight, num_edges, 'weight', 'edge',
                   where)
    if weight.numel() > 0:
        bad = ~torch.isfinite(weight) | (weight < 0)
        if bool(bad.any()):
            value = weight[bad][0].item()
            raise ValueError(f"'weight_attr' {name!r} of {where} must be finite "
                             f"and non-negative, found {value}")
    return weight


def _check_time(name: str, time, size: int, where: str,
                per: str = 'edge') -> Tensor:
    if not isinstance(time, Tensor) or time.is_floating_point() or \
            time.is_complex() or time.dtype == torch.bool:
        raise ValueError(f"'time_attr' {name!r} of {where} must be an integer "
                         f"tensor (PyG's temporal sampling takes int64 "
                         f"times), got "
                         f"{getattr(time, 'dtype', type(time).__name__)}")
    _check_one_per('time_attr', name, time, size, 'time', per, where)
    return time.to(torch.long)


def _memo(graph: CSCGraph, key: tuple, sources: tuple, build) -> RuleCSC:
    # Memoised on the (itself memoised) graph: the rule graph goes with it,
    # and is rebuilt when a source attribute is replaced or modified.
    cache = graph.__dict__.get('_rule_cache')
    if cache is None:
        cache = {}
        object.__setattr__(graph, '_rule_cache', cache)
    versions = tuple(t._version for t in sources)
    hit = cache.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], sources)) \
            and hit[1] == versions:
        return hit[2]
    csc = build()
    cache[key] = (sources, versions, csc)
    return csc


@dataclass
class _Part:
    # One attribute's share of a rule: its memo key and source tensors, and
    # how to compute its value per CSC slot of `graph` (lazily: only when
    # the rule graph is built).
    key: tuple
    sources: tuple
    per_slot: Callable[[CSCGraph], Tensor]


def _build(graph: CSCGraph, weight: Optional[_Part],
           time: Optional[_Part]) -> RuleCSC:
    # The rule graph of a weight part, a time part or both, memoised.
    parts = [p for p in (weight, time) if p is not None]
    key = tuple(p.key for p in parts)
    sources = tuple(t for p in parts for t in p.sources)
    if weight is not None and time is not None:
        build = lambda: weighted_temporal_csc(  # noqa: E731
            graph, weight.per_slot(graph), time.per_slot(graph))
    elif weight is not None:
        build = lambda: weighted_csc(graph, weight.per_slot(graph))  # noqa
    else:
        build = lambda: temporal_csc(graph, time.per_slot(graph))  # noqa
    return _memo(graph, key, sources, build)


def _homogeneous(data: Data, graph: CSCGraph, time_attr, weight_attr,
                 temporal_strategy) -> SamplingRule:
    weight = time = None
    if weight_attr is not None:
        if weight_attr not in data:
            raise ValueError(f"'weight_attr' {weight_attr!r} is not an "
                             f"attribute of the graph")
        w = check_weight(weight_attr, data[weight_attr], graph.num_edges,
                          'the graph')
        weight = _Part(('weight', weight_attr), (w, ),
                       lambda g: slot_values(g, w))
    if time_attr is None:
        return SamplingRule(_build(graph, weight, None))
    if time_attr not in data:
        raise ValueError(f"'time_attr' {time_attr!r} is not an attribute of "
                         f"the graph")
    value = data[time_attr]
    if data.is_node_attr(time_attr):
        node_time = _check_time(time_attr, value, data.num_nodes, 'the nodes',
                                'node')
        time = _Part(('node_time', time_attr), (value, ),
                     lambda g: node_time.cpu()[g.row.cpu().to(torch.long)])
        return SamplingRule(_build(graph, weight, time), temporal_strategy,
                            node_time.to(graph.device), node_time)
    if data.is_edge_attr(time_attr):
        edge_time = _check_time(time_attr, value, graph.num_edges, 'the edges')
        time = _Part(('edge_time', time_attr), (value, ),
                     lambda g: slot_values(g, edge_time))
        return SamplingRule(_build(graph, weight, time), temporal_strategy)
    raise ValueError(f"the time attribute {time_attr!r} is neither a node-level "
                     f"nor an edge-level attribute")


def _per_edge_type(data: HeteroData, typed: TypedCSC, attr: str, kind: str,
                   check) -> Tensor:
    # The attribute of every edge type, concatenated in the typed CSC's edge
    # type order: indexed by global edge id.
    missing = [et for et in typed.edge_types if attr not in data[et]]
    if missing:
        raise ValueError(f"{kind} {attr!r} is missing on edge type(s) "
                         f"{missing}: every edge type needs it")
    parts = [check(attr, data[et][attr], data[et].edge_index.size(1),
                   f"edge type {et}") for et in typed.edge_types]
    if not parts:
        return torch.empty(0)
    return torch.cat([p.cpu() for p in parts])


def every_node_time(node_types, node_offset, times: Dict[str, Tensor],
                    device=None) -> Tensor:
    r"""Every node's time in the id space of node types laid end to end
    (type ``i`` from ``node_offset[i]``), from the times of the node types
    that have them: nodes of the others are never later than a seed."""
    node_time = torch.full((node_offset[-1], ), _NO_TIME, dtype=torch.long,
                           device=device)
    for i, nt in enumerate(node_types):
        if nt in times:
            node_time[node_offset[i]:node_offset[i + 1]] = times[nt]
    return node_time


def _heterogeneous(data: HeteroData, typed: TypedCSC, time_attr, weight_attr,
                   temporal_strategy) -> SamplingRule:
    graph = typed.graph
    weight = time = None
    if weight_attr is not None:
        w = _per_edge_type(data, typed, weight_attr, "'weight_attr'",
                           check_weight)
        weight = _Part(('weight', weight_attr),
                       tuple(data[et][weight_attr] for et in typed.edge_types),
                       lambda g: slot_values(g, w))
    if time_attr is None:
        return SamplingRule(_build(graph, weight, None))
    node_level = [nt for nt in typed.node_types if time_attr in data[nt]]
    edge_level = [et for et in typed.edge_types if time_attr in data[et]]
    if node_level and edge_level:
        raise ValueError(f"the time attribute {time_attr!r} holds both node-level "
                         f"and edge-level information")
    if edge_level:
        edge_time = _per_edge_type(data, typed, time_attr, "'time_attr'",
                                   _check_time)
        time = _Part(('edge_time', time_attr),
                     tuple(data[et][time_attr] for et in typed.edge_types),
                     lambda g: slot_values(g, edge_time))
        return SamplingRule(_build(graph, weight, time), temporal_strategy)
    if not node_level:
        raise ValueError(f"the time attribute {time_attr!r} is neither a "
                         f"node-level nor an edge-level attribute")
    times = {nt: _check_time(time_attr, data[nt][time_attr], data[nt].num_nodes,
                             f"node type {nt!r}", 'node') for nt in node_level}
    node_time = every_node_time(typed.node_types, typed.node_offset, times)
    time = _Part(('node_time', time_attr),
                 tuple(data[nt][time_attr] for nt in node_level),
                 lambda g: node_time[g.row.cpu().to(torch.long)])
    return SamplingRule(_build(graph, weight, time), temporal_strategy,
                        node_time.to(graph.device), times)


def sampling_rule(data: Union[Data, HeteroData], graph: CSCGraph,
                  typed: Optional[TypedCSC], time_attr: Optional[str],
                  weight_attr: Optional[str],
                  temporal_strategy: str = 'uniform') -> Optional[SamplingRule]:
    r"""The :class:`SamplingRule` of PyG's sampler arguments (``None`` for
    uniform sampling). Raises :class:`ValueError` naming the argument for an
    unknown, missing or malformed attribute. With both, the in-edges a
    seed's time admits are drawn from by weight."""
    if time_attr is None and weight_attr is None:
        return None
    if temporal_strategy not in ('uniform', 'last'):
        raise ValueError(f"'temporal_strategy' must be 'uniform' or 'last', "
                         f"got {temporal_strategy!r}")
    if typed is not None:
        return _heterogeneous(data, typed, time_attr, weight_attr,
                              temporal_strategy)
    return _homogeneous(data, graph, time_attr, weight_attr, temporal_strategy)
