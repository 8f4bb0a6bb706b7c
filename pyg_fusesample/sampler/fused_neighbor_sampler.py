"""FusedNeighborSampler: PyG's NeighborSampler contract on the fused op."""
import copy
from typing import Dict, List, Optional, Union

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData
from torch_geometric.sampler import (BaseSampler, EdgeSamplerInput,
                                     HeteroSamplerOutput, NegativeSampling,
                                     NodeSamplerInput, NumNeighbors,
                                     SamplerOutput)
from torch_geometric.sampler.base import SubgraphType
from torch_geometric.sampler.neighbor_sampler import edge_sample

from ..environment import concrete_device
from ..ops import (NeighborSampleOutput, PendingNeighborSample,
                   induced_subgraph, neighbor_sample, neighbor_sample_async)
from ..ops.rng_keys import draw_rng_seeds  # noqa: F401  (re-exported)
from .graph_store import CSCGraph, build_csc
from .hetero_output import (check_seed_range, to_hetero_induced_output,
                            to_hetero_output, typed_seeds)
from .rule_graph import RuleCSC
from .sampling_rule import SamplingRule, sampling_rule
from .negative_sampling import KeyedNegativeSampling
from .remote_store import is_remote, remote_graph
from .typed_graph import TypedCSC, build_typed_csc


def _check_host_graph_args(device, is_hetero: bool, subgraph_type,
                           time_attr, weight_attr):
    if device is None or torch.device(device).type != 'cuda':
        raise ValueError("'graph_in_host_memory=True' keeps the graph in "
                         "pinned host memory for a GPU to sample: pass "
                         "device='cuda'")
    if is_hetero or subgraph_type != SubgraphType.directional \
            or time_attr is not None:
        raise NotImplementedError(
            "'graph_in_host_memory=True' supports homogeneous, directional "
            "sampling, uniform or weighted, for now (no HeteroData, "
            "subgraph_type or time_attr)")


def _as_fanouts(num_neighbors) -> List[int]:
    if isinstance(num_neighbors, NumNeighbors):
        num_neighbors = num_neighbors.values
    if isinstance(num_neighbors, dict):
        raise NotImplementedError(
            "FusedNeighborSampler samples homogeneous graphs; per-edge-type "
            "'num_neighbors' (heterogeneous sampling) is not supported yet")
    if not isinstance(num_neighbors, (list, tuple)):
        raise TypeError(f"'num_neighbors' must be a list of ints (one per "
                        f"hop), got {type(num_neighbors).__name__}")
    fanouts = []
    for hop, k in enumerate(num_neighbors):
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"'num_neighbors[{hop}]' must be an int, got "
                            f"{k!r}")
        if k < -1:
            raise ValueError(f"'num_neighbors[{hop}]' is {k}; use a count "
                             f">= 0, or -1 for all neighbours")
        fanouts.append(k)
    return fanouts


def _typed_fanouts(num_neighbors, edge_types) -> List[int]:
    # PyG's NumNeighbors semantics (a list for every edge type, or a dict
    # with an optional default; the same hop count everywhere), flattened
    # hop-major for the typed op.
    if not isinstance(num_neighbors, NumNeighbors):
        num_neighbors = NumNeighbors(num_neighbors)
    values = num_neighbors._get_values(edge_types)
    per_type = [_as_fanouts(values[et]) for et in edge_types]
    hops = len(per_type[0]) if per_type else 0
    return [per_type[t][h] for h in range(hops) for t in range(len(per_type))]


class FusedNeighborSampler(BaseSampler):
    r"""Multi-hop neighbour sampling (uniform, temporal or weighted) for
    homogeneous and heterogeneous graphs, with the arguments and output of
    :class:`torch_geometric.sampler.NeighborSampler`.

    All hops (and, for a :class:`~torch_geometric.data.HeteroData`, all edge
    types) are sampled, deduplicated and relabelled in one call of the
    ``fusesample::neighbor_sample`` op, on the device where the graph lives
    (parallel C++ on the CPU). The graph is kept as CSC (a typed CSC with a
    segment per edge type for heterogeneous graphs:
    :mod:`~pyg_fusesample.sampler.typed_graph`), memoised per graph.

    Args:
        data (Data or HeteroData): the graph.
        num_neighbors (List[int] or Dict[EdgeType, List[int]]): fan-out per
            hop, ``-1`` for all neighbours; for heterogeneous graphs a list
            applies to every edge type, a dict gives each edge type its own
            (as :class:`~torch_geometric.sampler.NumNeighbors`).
        subgraph_type (str): ``'directional'`` (sampled edges only),
            ``'bidirectional'`` (sampled edges and their reverses) or
            ``'induced'`` (all edges among the sampled nodes).
        replace (bool): sample with replacement.
        disjoint (bool): each seed gets its own subtree (adds ``batch``).
        is_sorted (bool): ``edge_index`` is sorted by target.
        generator (torch.Generator, optional): source of per-batch RNG keys
            when no key is passed to :meth:`sample_from_nodes`.
        device: where to sample (default: where ``data.edge_index`` lives).
        fused (bool): on CUDA, sample all hops in one kernel launch with one
            host sync per batch (default); ``False`` uses one launch per
            phase and a sync per hop (kept for comparison).
        graph_in_host_memory (bool): keep the CSC in pinned host memory and
            sample it on :obj:`device` (a GPU), which reads it in place
            through unified addressing: for graphs larger than the GPU.
            Homogeneous, directional sampling (uniform or weighted) for
            now.
            (default: ``False``)

        temporal_strategy (str): ``'uniform'`` or ``'last'`` (temporal).
        time_attr (str, optional): temporal sampling by this node- or
            edge-level attribute (int64 times): no sampled in-edge is later
            than its seed's time (``input_time``, else the seed's node time);
            subgraphs are then disjoint. See
            :mod:`~pyg_fusesample.sampler.sampling_rule`.
        weight_attr (str, optional): weighted sampling by this edge-level
            attribute (finite, non-negative): draws proportional to weight,
            zero-weight edges never drawn.

    ``data`` may also be a ``(FeatureStore, GraphStore)`` pair, as for PyG's
    loaders (its structure, and the times of ``time_attr``, read once).

    With both ``weight_attr`` and ``time_attr``, the in-edges the time rule
    admits are drawn from by weight (``temporal_strategy='last'`` takes the
    latest ``k`` positive-weight in-edges as they are). Backward sampling,
    weighted sampling of store data, and weights with time under
    ``temporal_strategy='last'`` with ``replace=True`` raise
    :class:`NotImplementedError`.
    """
    def __init__(
        self,
        data: Union[Data, HeteroData],
        num_neighbors: Union[List[int], Dict, NumNeighbors],
        subgraph_type: Union[SubgraphType, str] = 'directional',
        replace: bool = False,
        disjoint: bool = False,
        temporal_strategy: str = 'uniform',
        time_attr: Optional[str] = None,
        weight_attr: Optional[str] = None,
        is_sorted: bool = False,
        share_memory: bool = False,
        directed: bool = True,
        sample_direction: str = 'forward',
        generator: Optional[torch.Generator] = None,
        device=None,
        fused: bool = True,
        graph_in_host_memory: bool = False,
    ):
        self._edge_permutation = None
        if is_remote(data):
            if weight_attr is not None:  # (PyG's sampler raises too)
                raise NotImplementedError(
                    "'weight_attr' is not supported for (FeatureStore, "
                    "GraphStore) data")
            if graph_in_host_memory:
                raise NotImplementedError(
                    "'graph_in_host_memory' takes Data, not (FeatureStore, "
                    "GraphStore) data")
            data, self._edge_permutation = remote_graph(data, time_attr)
        if not isinstance(data, (Data, HeteroData)):
            raise NotImplementedError(
                f"FusedNeighborSampler samples 'Data', 'HeteroData' and "
                f"(FeatureStore, GraphStore) data, got {type(data).__name__}")
        # The graph it samples (for store data, the structure read from the
        # stores; remote_store.py).
        self.graph_data = data
        if sample_direction != 'forward':
            raise NotImplementedError("only sample_direction='forward' is "
                                      "supported")
        self.is_hetero = isinstance(data, HeteroData)
        edge_index = None
        if not self.is_hetero:
            edge_index = data.get('edge_index')
            if edge_index is None and 'adj_t' in data:
                raise ValueError("'data' has no 'edge_index' (SparseTensor "
                                 "'adj_t' graphs are not supported yet)")
            if edge_index is None:  # a graph without edges, as PyG takes it
                edge_index = torch.empty(2, 0, dtype=torch.long)
        if not directed:
            subgraph_type = SubgraphType.induced

        self.subgraph_type = SubgraphType(subgraph_type)
        self.replace = replace
        self.disjoint = disjoint
        self.temporal_strategy = temporal_strategy
        self.time_attr = time_attr
        self.weight_attr = weight_attr
        self.keep_orig_edges = False
        self.generator = generator
        self.fused = fused
        if weight_attr is not None and time_attr is not None and replace \
                and temporal_strategy == 'last':
            raise NotImplementedError(
                "weighted sampling with replacement under "
                "temporal_strategy='last' is not supported (the latest k "
                "in-edges are taken without replacement)")
        if self.disjoint and self.subgraph_type == SubgraphType.induced:
            raise NotImplementedError("'disjoint=True' together with "
                                      "subgraph_type='induced' is not "
                                      "supported")
        self.typed: Optional[TypedCSC] = None
        # Where sampling runs when the graph is not there (host graph).
        self._sample_device: Optional[torch.device] = None
        if graph_in_host_memory:
            _check_host_graph_args(device, self.is_hetero, self.subgraph_type,
                                   time_attr, weight_attr)
            self._sample_device = concrete_device(device)
            device = 'cpu'
        if self.is_hetero:
            self.typed = build_typed_csc(data, is_sorted=is_sorted,
                                         device=device)
            self.node_types = self.typed.node_types
            self.edge_types = self.typed.edge_types
            self.num_nodes = {nt: data[nt].num_nodes for nt in self.node_types}
            self.num_neighbors = _typed_fanouts(num_neighbors, self.edge_types)
            if not self.edge_types:  # no relation: hops that draw nothing
                hops = len(NumNeighbors(num_neighbors).values) if isinstance(
                    num_neighbors, (list, tuple)) else 0
                self.num_neighbors = [0] * hops
            self.graph: CSCGraph = self.typed.graph
        else:
            self.num_nodes = data.num_nodes
            self.num_neighbors = _as_fanouts(num_neighbors)
            self.graph: CSCGraph = build_csc(edge_index, self.num_nodes,
                                             is_sorted=is_sorted,
                                             device=device)
        # Temporal / weighted sampling: the graph reordered within segments,
        # with the times or weight prefix sums the op's rule reads.
        self.rule: Optional[SamplingRule] = sampling_rule(
            data, self.graph, self.typed, time_attr, weight_attr,
            temporal_strategy)
        if self.rule is not None:
            self.graph = self.rule.csc.graph
        # Temporal subgraphs are disjoint, as PyG's NeighborSampler makes them.
        self.disjoint = disjoint or self.is_temporal
        if graph_in_host_memory:
            g = self.graph
            self.graph = CSCGraph(g.colptr.pin_memory(), g.row.pin_memory(),
                                  None if g.edge_id is None
                                  else g.edge_id.pin_memory(), g.num_nodes)
            if self.rule is not None:  # weighted: the prefix sums too
                self.rule.csc = RuleCSC(
                    self.graph, None, self.rule.csc.weight_cumsum.pin_memory())
        if share_memory and self.graph.device.type == 'cpu':
            for t in (self.graph.colptr, self.graph.row, self.graph.edge_id):
                if t is not None:
                    t.share_memory_()

    @property
    def device(self) -> torch.device:
        # Where sampling runs (and its outputs live): the graph's device,
        # or the GPU that reads a graph in host memory.
        return self._sample_device or self.graph.device

    @property
    def graph_in_host_memory(self) -> bool:
        return self._sample_device is not None

    @property
    def is_temporal(self) -> bool:
        return self.rule is not None and self.rule.is_temporal

    @property
    def node_time(self):
        r"""Node-level times as PyG's samplers hold them (``None`` unless
        the time attribute is node-level)."""
        return None if self.rule is None else self.rule.pyg_node_time

    @property
    def _typing(self) -> dict:
        # The op's type tables: per-type sizes come with a typed sample.
        return self.typed.op_typing if self.is_hetero else {}

    @property
    def num_edge_types(self) -> int:
        r"""Segments per node of the CSC the op reads (1: homogeneous)."""
        return max(len(self.edge_types), 1) if self.is_hetero else 1

    @property
    def edge_permutation(self):
        # The op returns the graph's own edge ids; for store data, positions
        # in GraphStore.coo()'s order, which this maps to the stored layout's
        # (None: the same), as PyG's sampler's perm does.
        return self._edge_permutation

    def sample_from_nodes(self, inputs: NodeSamplerInput,
                          rng_seed: Optional[int] = None) -> SamplerOutput:
        seed, rng_seed, seed_time = self._node_seeds(inputs, rng_seed)
        out = self._sample(seed, rng_seed, seed_time)
        return self._finish(out, (inputs.input_id, inputs.time))

    def sample_from_nodes_async(self, inputs: NodeSamplerInput,
                                rng_seed: Optional[int] = None
                                ) -> 'PendingSamplerOutput':
        r""":meth:`sample_from_nodes` without waiting: with the fused CUDA
        kernel the sampling is enqueued on the current stream and this
        returns at once; ``.wait()`` gives the same
        :class:`~torch_geometric.sampler.SamplerOutput`. Elsewhere (CPU,
        ``fused=False``) the sample is complete when this returns."""
        if not (self.fused and self.device.type == 'cuda'):
            return PendingSamplerOutput(
                self, self.sample_from_nodes(inputs, rng_seed), None)
        seed, rng_seed, seed_time = self._node_seeds(inputs, rng_seed)
        g = self.graph
        pending = neighbor_sample_async(g.colptr, g.row, g.edge_id, seed,
                                        self.num_neighbors, self.replace,
                                        self.disjoint, rng_seed,
                                        self.num_edge_types, **self._typing,
                                        **self._rule_args(seed_time))
        return PendingSamplerOutput(self, pending,
                                    (inputs.input_id, inputs.time))

    def sample_from_edges(self, inputs: EdgeSamplerInput,
                          neg_sampling: Optional[NegativeSampling] = None,
                          rng_seed: Optional[int] = None) -> SamplerOutput:
        rng_seed = self._key(rng_seed)

        def sample_fn(seed, seed_time=None):
            types = ()
            if isinstance(seed, dict):  # heterogeneous: {node type: ids}
                types = tuple(seed)
                if isinstance(seed_time, dict):
                    seed_time = torch.cat([seed_time[nt] for nt in seed])
                seed = typed_seeds(self.typed, {
                    nt: self._on_device(ids) for nt, ids in seed.items()})
            seed = self._on_device(seed)
            seed_time = self._seed_time(seed, seed_time, types)
            return self._sampler_output(self._sample(seed, rng_seed, seed_time))

        # The seed edges and their negatives on the sampling device (PyG's
        # edge_sample follows its inputs' device), negatives drawn from the
        # batch's key; input ids stay on the CPU, as for node batches.
        inputs = copy.copy(inputs)
        if self.is_hetero and inputs.input_type is not None:
            for ids, nt in ((inputs.row, inputs.input_type[0]),
                            (inputs.col, inputs.input_type[-1])):
                if ids.device.type == 'cpu':
                    check_seed_range(self.typed, nt, ids)
        inputs.row, inputs.col = self._on_device(inputs.row), self._on_device(inputs.col)
        # Labels on the device too; binary negatives' implicit positive
        # labels are the ones PyG's edge_sample would make, made there.
        if inputs.label is not None:
            inputs.label = inputs.label.to(self.device)
        elif neg_sampling is not None and neg_sampling.is_binary():
            inputs.label = torch.ones(inputs.row.numel(), device=self.device)
        if neg_sampling is not None:
            neg_sampling = KeyedNegativeSampling(neg_sampling, self.device,
                                                 rng_seed)
        if inputs.time is not None:
            inputs.time = self._on_device(inputs.time)
        out = edge_sample(inputs, sample_fn, self.num_nodes, self.disjoint,
                          self._edge_sample_node_time(), neg_sampling)
        if self.subgraph_type == SubgraphType.bidirectional:
            out = out.to_bidirectional(keep_orig_edges=self.keep_orig_edges)
        return out

    def _edge_sample_node_time(self):
        # PyG's edge_sample takes node times to draw temporal negatives that
        # are no later than their seed edge.
        time = self.node_time
        if isinstance(time, dict):
            return {nt: t.to(self.device) for nt, t in time.items()}
        return None if time is None else time.to(self.device)

    def _seed_time(self, seed: Tensor, seed_time: Optional[Tensor],
                   seed_types=()) -> Optional[Tensor]:
        # The seeds' times for the op (global ids `seed`, of node types
        # `seed_types` when heterogeneous): the given ones, else, for
        # node-level time, the seeds' own node times. Decided from the node
        # types, on the host: no read of the device per batch.
        if not self.is_temporal:
            if seed_time is not None:
                raise ValueError("seed times ('input_time') were given, but "
                                 "the sampler is not temporal (no "
                                 "'time_attr')")
            return None
        if seed_time is None:
            node_time = self.rule.pyg_node_time
            if node_time is None:
                raise ValueError("edge-level temporal sampling needs the "
                                 "seeds' times ('input_time' / "
                                 "'edge_label_time')")
            untimed = [nt for nt in seed_types if nt not in node_time]
            if untimed:
                raise ValueError(f"the seeds' node type(s) {untimed} have no "
                                 f"{self.time_attr!r} attribute: pass their "
                                 f"times as 'input_time'")
            return self.rule.node_time[seed]
        if seed_time.numel() != seed.numel():
            raise ValueError(f"'input_time' must hold one time per seed "
                             f"({seed.numel()}), got {seed_time.numel()}")
        return self._on_device(seed_time)

    def _rule_args(self, seed_time: Optional[Tensor]) -> dict:
        # The op's temporal / weighted arguments (seed times from _seed_time).
        return {} if self.rule is None else self.rule.op_args(seed_time)

    def _node_seeds(self, inputs: NodeSamplerInput, rng_seed: Optional[int]):
        seed = self._on_device(inputs.node)
        if self.is_hetero:
            if inputs.input_type not in self.num_nodes:
                raise ValueError(
                    f"the input node type {inputs.input_type!r} is not a node "
                    f"type of the graph ({', '.join(map(repr, self.node_types))})")
            seed = typed_seeds(self.typed, {inputs.input_type: seed})
        elif inputs.input_type is not None:
            raise ValueError(f"the graph is homogeneous, but an input node "
                             f"type ({inputs.input_type!r}) was given")
        seed_time = self._seed_time(
            seed, inputs.time, (inputs.input_type,) if self.is_hetero else ())
        return seed, self._key(rng_seed), seed_time

    def _key(self, rng_seed: Optional[int]) -> int:
        # The batch's RNG key: the given one, else one from the generator.
        if rng_seed is None:
            rng_seed = draw_rng_seeds(1, self.generator)[0]
        return rng_seed

    def _on_device(self, seed: Tensor) -> Tensor:
        return seed.to(device=self.device, dtype=torch.long)

    def _sample(self, seed: Tensor, rng_seed: int,
                seed_time: Optional[Tensor] = None) -> NeighborSampleOutput:
        g = self.graph
        return neighbor_sample(g.colptr, g.row, g.edge_id, seed,
                               self.num_neighbors, self.replace,
                               self.disjoint, rng_seed, self.fused,
                               self.num_edge_types, **self._typing,
                               **self._rule_args(seed_time))

    def _sampler_output(self, out: NeighborSampleOutput
                        ) -> Union[SamplerOutput, HeteroSamplerOutput]:
        if self.is_hetero:
            if self.subgraph_type == SubgraphType.induced:
                return to_hetero_induced_output(self.typed, out)
            return to_hetero_output(self.typed, out)
        g = self.graph
        row, col, edge = out.row, out.col, out.edge
        num_sampled_edges = out.num_sampled_edges.tolist()
        if self.subgraph_type == SubgraphType.induced:
            row, col, edge = induced_subgraph(g.colptr, g.row, g.edge_id,
                                              out.node)
            num_sampled_edges = None  # edges are not grouped by hop
        return SamplerOutput(
            node=out.node,
            row=row,
            col=col,
            edge=edge,
            batch=out.batch,
            num_sampled_nodes=out.num_sampled_nodes.tolist(),
            num_sampled_edges=num_sampled_edges,
        )

    def _finish(self, out: NeighborSampleOutput, metadata
                ) -> Union[SamplerOutput, HeteroSamplerOutput]:
        # The op's output as PyG's node_sample + NeighborSampler return it.
        out = self._sampler_output(out)
        out.metadata = metadata
        if self.subgraph_type == SubgraphType.bidirectional:
            out = out.to_bidirectional(keep_orig_edges=self.keep_orig_edges)
        return out

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(num_neighbors='
                f'{self.num_neighbors}, replace={self.replace}, '
                f'subgraph_type={self.subgraph_type.value}, '
                f'disjoint={self.disjoint}, device={self.device})')


class PendingSamplerOutput:
    r"""A :meth:`FusedNeighborSampler.sample_from_nodes_async` result:
    :meth:`wait` returns its :class:`~torch_geometric.sampler.SamplerOutput`
    (blocking only until the stream has produced it)."""
    __slots__ = ('_sampler', '_pending', '_metadata')

    def __init__(self, sampler: FusedNeighborSampler,
                 pending: Union[PendingNeighborSample, SamplerOutput],
                 metadata):
        self._sampler = sampler
        self._pending = pending
        self._metadata = metadata

    def wait(self) -> SamplerOutput:
        if isinstance(self._pending, PendingNeighborSample):
            self._pending = self._sampler._finish(self._pending.wait(),
                                                  self._metadata)
        return self._pending
