"""FusedNeighborLoader: a drop-in for PyG's NeighborLoader."""
import warnings
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import NodeLoader
from torch_geometric.loader.utils import get_input_nodes, infer_filter_per_worker
from torch_geometric.sampler import (HeteroSamplerOutput, NodeSamplerInput,
                                     SamplerOutput)
from torch_geometric.sampler.base import SubgraphType
from torch_geometric.typing import InputNodes, OptTensor

from ..sampler import FusedNeighborSampler, GPUFeatureCache
from ..sparse.target_layout import register_batch, register_hetero_batch
from .background import BackgroundIterator
from .batch_assembly import (DataPlan, HeteroPlans, StorePlan,
                             assemble_hetero, fill, gather_on_device,
                             sampled_mapping)
from .feature_caches import check_feature_cache
from .native_epoch import NativeEpoch
from .seeded_batches import (BatchDataset, SeededBatchSampler,
                             resolve_generator)


def _input_type(data: HeteroData, input_nodes) -> str:
    # The node type of a heterogeneous loader's seeds: 'type' or
    # ('type', ids or mask), as NeighborLoader takes them.
    if isinstance(input_nodes, (list, tuple)) and len(input_nodes) == 2:
        input_nodes = input_nodes[0]
    if not isinstance(input_nodes, str):
        raise ValueError("'input_nodes' of a HeteroData must name the node "
                         "type of the seeds: a node type or a (node type, "
                         "indices or mask) pair")
    if input_nodes not in data.node_types:
        raise ValueError(f"'input_nodes' names the node type "
                         f"{input_nodes!r}, which the graph does not have "
                         f"({', '.join(map(repr, data.node_types))})")
    return input_nodes


def _check_input_nodes(input_nodes, num_nodes: int):
    if not isinstance(input_nodes, Tensor):
        return  # None (all nodes), or a name/tuple PyG resolves and checks
    if input_nodes.dim() != 1:
        raise ValueError(f"'input_nodes' must be 1-dimensional (indices or "
                         f"a boolean mask), got shape "
                         f"{list(input_nodes.shape)}")
    if input_nodes.dtype == torch.bool:
        if input_nodes.numel() != num_nodes:
            raise ValueError(f"'input_nodes' is a boolean mask of length "
                             f"{input_nodes.numel()}, but the graph has "
                             f"{num_nodes} nodes")
    elif input_nodes.dtype.is_floating_point or input_nodes.is_complex():
        raise ValueError(f"'input_nodes' must hold integer node indices or "
                         f"be a boolean mask, got {input_nodes.dtype}")


class _InProcessIterator:
    # With num_workers=0 a batch is sample + filter; DataLoader's generic
    # iterator (fetcher, collation checks, worker bookkeeping) costs more host
    # time than a GPU takes to sample a batch, so it is bypassed.
    #
    # On a GPU the epoch's seeds are put on the device once, in batch order,
    # and each batch takes a slice: no per-batch copy from the host.
    #
    # With `lookahead` (prefetch on a GPU), batch i+1's sampling is enqueued
    # as batch i is handed out: on the stream it runs after batch i's feature
    # gathers and before the training step the caller enqueues next, and its
    # sizes are read one call later, when the stream has long passed it. So
    # the host never waits for a training step to finish, and assembling a
    # batch overlaps the GPU's work instead of leaving the GPU idle. The keys
    # and order are those of the plain path: the batches are bitwise equal.
    def __init__(self, loader: 'FusedNeighborLoader', lookahead: bool):
        self.loader = loader
        self.pin = loader.pin_memory and torch.cuda.is_available()
        self.lookahead = lookahead
        sampler = loader.sampler
        order, keys = sampler.plan()
        self.batches = sampler.slices(order, keys, loader._device_seeds(order))
        self.num_batches = len(keys)
        self.pending = self._launch() if lookahead else None

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self.num_batches

    def _launch(self):
        item = next(self.batches, None)
        if item is None:
            return None
        positions, key, seeds = item
        return self.loader.node_sampler.sample_from_nodes_async(
            self.loader._node_input(positions, seeds), rng_seed=key)

    def __next__(self):
        loader = self.loader
        if self.lookahead:
            pending = self.pending
            if pending is None:
                raise StopIteration
            self.pending = self._launch()
            out = pending.wait()
        else:
            positions, key, seeds = next(self.batches)
            out = loader.node_sampler.sample_from_nodes(
                loader._node_input(positions, seeds), rng_seed=key)
        out = loader.filter_fn(out)
        if self.pin:
            out = out.pin_memory()
        return out


class _NativeIterator(NativeEpoch):
    # prefetch='thread' for plain batches (_plain_batches, directional
    # subgraphs): fusesample.BatchPrefetcher (kernels/loader/
    # batch_prefetcher.cpp) assembles the epoch's batches on a native thread
    # that never takes the GIL -- sampling, its size read-back, edge_index and
    # the row gathers of every node and edge attribute on the sampling
    # device -- at most `depth` ahead, on a GPU on a stream of its own. The
    # training thread only takes the ready tensors and builds the Data. A
    # Python thread doing the same work would take turns with the training
    # thread on the GIL, and a step bound by the host's launch rate would not
    # get faster (see the C++ file).
    # Keys, order and ops are those of the plain path: the batches are
    # bitwise equal. With `lookahead`, fused GPU sampling is enqueued one
    # batch ahead of the batch being assembled (so one thread).
    lookahead = True

    def __init__(self, loader: 'FusedNeighborLoader'):
        self.loader = loader
        self.plan = plan = loader._filter_plan()
        sampler, ns = loader.sampler, loader.node_sampler
        order, keys = sampler.plan()
        g = ns.graph
        # Temporal / weighted: the rule's tensors, and the epoch's seed times
        # (the given input times, else the seeds' node times) cut with the
        # seeds; a batch's `seed_time` attribute is its cut of input_time.
        seeds, input_time = loader._epoch_inputs(order)
        rule = ns._rule_args(ns._seed_time(seeds, input_time))
        prefetcher = torch.classes.fusesample.BatchPrefetcher(
            g.colptr, g.row, g.edge_id, seeds,
            sampler.batch_size, keys, ns.num_neighbors, ns.replace,
            ns.disjoint, ns.fused, [plan.values[k] for k in plan.node_rows],
            [plan.values[k] for k in plan.edge_rows], self.depth,
            self.lookahead, rule.get('edge_time'), rule.get('seed_time'),
            rule.get('temporal_strategy') == 'last', rule.get('weight_cumsum'))
        self.rows = plan.node_rows + plan.edge_rows
        self.windows = sampler.slices(order, keys, input_time)
        self.disjoint = ns.disjoint
        self.pin = (loader.pin_memory and torch.cuda.is_available()
                    and ns.device.type == 'cpu')
        super().__init__(prefetcher, len(keys), self._make)

    def _make(self, tensors):
        node, edge_index, edge, batch, nsn, nse, *rows = tensors
        loader = self.loader
        positions, _, seed_time = next(self.windows)
        out = loader._assemble(
            self.plan, node, edge, edge_index,
            batch if self.disjoint else None, nsn.tolist(), nse.tolist(),
            loader._input_id(positions), seed_time,
            dict(zip(self.rows, rows)))
        if self.pin:
            out = out.pin_memory()
        return out


def _background_iterator(loader: 'FusedNeighborLoader') -> BackgroundIterator:
    # prefetch='thread': a daemon thread runs the plain in-process iterator
    # (loader/background.py). Batches are those of prefetch=False: the
    # epoch's order and keys are drawn here, in the consumer's thread, when
    # the in-process iterator is made.
    batches = _InProcessIterator(loader, lookahead=False)
    stream = torch.cuda.current_stream(loader.node_sampler.device)
    return BackgroundIterator.start(batches, stream, len(batches),
                                    'FusedNeighborLoader-prefetch')


class FusedNeighborLoader(NodeLoader):
    r"""A data loader that samples multi-hop neighbourhoods with fused C++
    (and, on GPUs, CUDA) kernels; a drop-in replacement for
    :class:`torch_geometric.loader.NeighborLoader` on homogeneous
    :class:`~torch_geometric.data.Data` and heterogeneous
    :class:`~torch_geometric.data.HeteroData`.

    It takes :class:`~torch_geometric.loader.NeighborLoader`'s arguments and
    yields the same mini-batches: a :class:`~torch_geometric.data.Data` with
    local ``edge_index`` (row = sampled neighbour, col = target), ``n_id``
    (unique, seeds first, grouped by hop), ``e_id``, ``input_id``,
    ``batch_size``, ``num_sampled_nodes`` and ``num_sampled_edges`` per hop
    (so :func:`~torch_geometric.utils.trim_to_layer` works) and every node
    and edge attribute sliced; for a :class:`HeteroData`, PyG's
    heterogeneous batch (all of the above per node and edge type, every type
    present). Heterogeneous batches sample every edge type of every hop in
    one launch of the typed sampler.

    .. code-block:: python

        from pyg_fusesample import FusedNeighborLoader as NeighborLoader

        loader = NeighborLoader(data, num_neighbors=[15, 10], batch_size=1024,
                                input_nodes=data.train_mask, shuffle=True,
                                seed=0)

    Args:
        data (Data or HeteroData): the graph.
        num_neighbors (List[int] or Dict[EdgeType, List[int]]): neighbours
            sampled per hop (``-1``: all); per edge type for heterogeneous
            graphs (a list applies to every edge type).
        input_nodes (Tensor or str or Tuple[str, Tensor], optional): seed
            nodes, as indices or a boolean mask (default: all nodes); for a
            :class:`HeteroData`, the seeds' node type, alone or with indices
            or a mask.
        input_time (Tensor, optional): the seeds' times (temporal sampling;
            default: their node times under :obj:`time_attr`).
        replace (bool): sample with replacement. (default: ``False``)
        subgraph_type (str): ``'directional'``, ``'bidirectional'`` or
            ``'induced'``. (default: ``'directional'``)
        disjoint (bool): each seed gets its own subtree; adds ``batch``.
        temporal_strategy (str): ``'uniform'`` or ``'last'`` (temporal).
        time_attr (str, optional): temporal sampling by this node- or
            edge-level int64 attribute: no sampled edge is later than its
            seed's time (subgraphs are then disjoint).
        weight_attr (str, optional): weighted sampling by this edge-level
            attribute (finite, non-negative).
        transform (callable, optional): applied to each mini-batch.
        transform_sampler_output (callable, optional): applied to the
            :class:`~torch_geometric.sampler.SamplerOutput`.
        is_sorted (bool): ``edge_index`` is sorted by target.
        filter_per_worker (bool, optional): slice features in the workers.
        neighbor_sampler (FusedNeighborSampler, optional): reuse a sampler.
        seed (int, optional): makes shuffling and sampling bitwise repeatable.
        generator (torch.Generator, optional): the same, from a generator
            (``seed`` and ``generator`` are exclusive). Without either, keys
            come from PyTorch's global RNG (so ``torch.manual_seed`` works).
        fused (bool): on a GPU, sample all hops in one kernel launch with
            one host sync per batch (default); ``False`` launches per phase
            with a sync per hop (the ablation baseline).
        prefetch (bool or str, optional): with ``num_workers=0``, prepare
            batches ahead of the training step; the batches are the same in
            every mode.
            ``'thread'``: assemble batches on a background thread, at most two
            ahead. Plain batches (a :class:`Data`, no
            ``transform_sampler_output``, directional subgraphs) take a native
            thread that never holds the GIL and, on a GPU, works on a CUDA
            stream of its own; the training thread only takes the finished
            tensors. This also works on CPU data. Other batches take a Python
            thread on the stream current when iteration starts (GPU data
            only). For training steps bound by the host's launch rate, the
            batch assembly's host time is then no longer added to the step.
            ``True`` (GPU data): enqueue the next batch's sampling as the
            current batch is handed out and read it one batch later, so the
            host never waits for a training step.
            (default: ``'thread'`` for plain batches, else ``True``, when the
            graph is on a GPU, ``fused=True`` and ``num_workers=0``;
            otherwise ``False``)
        feature_cache (Dict[str, GPUFeatureCache] or Dict[Tuple[str, str],
            GPUFeatureCache], optional): node attributes gathered through a
            :class:`~pyg_fusesample.sampler.GPUFeatureCache` (hot rows on
            the sampling GPU, the others read in place from pinned host
            memory), keyed by attribute name for a :class:`Data` and by
            ``(node type, attribute)`` for a :class:`HeteroData` (as a
            ``FeatureStore`` names them); each cache must hold that
            attribute's rows. Its ``hit_rate`` reports how many rows it
            served. (default: ``None``)
        graph_in_host_memory (bool): keep the graph (CSC) in pinned host
            memory and sample it on :obj:`device`, a GPU that reads it in
            place (graphs larger than the GPU; pin the features too, or give
            a :obj:`feature_cache`). Directional sampling (uniform or
            weighted) of a :class:`Data` for now. (default: ``False``)
        device (torch.device, optional): where to sample (default: where
            ``data.edge_index`` lives).
        batch_size (int): seeds per mini-batch. (default: ``1``)
        shuffle (bool): reshuffle seeds every epoch. (default: ``False``)
        drop_last (bool): drop the last incomplete batch.
        **kwargs: further :class:`torch.utils.data.DataLoader` arguments
            (``num_workers``, ``pin_memory``, ``persistent_workers``, ...).
    """
    def __init__(
        self,
        data: Union[Data, HeteroData],
        num_neighbors: Union[List[int], dict],
        input_nodes: InputNodes = None,
        input_time: OptTensor = None,
        replace: bool = False,
        subgraph_type: Union[SubgraphType, str] = 'directional',
        disjoint: bool = False,
        temporal_strategy: str = 'uniform',
        time_attr: Optional[str] = None,
        weight_attr: Optional[str] = None,
        transform: Optional[Callable] = None,
        transform_sampler_output: Optional[Callable] = None,
        is_sorted: bool = False,
        filter_per_worker: Optional[bool] = None,
        neighbor_sampler: Optional[FusedNeighborSampler] = None,
        directed: bool = True,
        seed: Optional[int] = None,
        generator: Optional[torch.Generator] = None,
        fused: bool = True,
        prefetch: Union[bool, str, None] = None,
        feature_cache: Optional[Dict[Union[str, Tuple[str, str]],
                                     GPUFeatureCache]] = None,
        graph_in_host_memory: bool = False,
        device=None,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        **kwargs,
    ):
        if input_time is not None and time_attr is None:
            raise ValueError("Received conflicting 'input_time' and "
                             "'time_attr' arguments: 'input_time' is set "
                             "while 'time_attr' is not set.")
        for key in ('sampler', 'batch_sampler', 'collate_fn', 'dataset'):
            if kwargs.get(key) is not None:
                raise ValueError(f"FusedNeighborLoader does not take "
                                 f"'{key}': it draws its own batches")
            kwargs.pop(key, None)
        generator = resolve_generator(seed, generator)

        if neighbor_sampler is None:
            neighbor_sampler = FusedNeighborSampler(
                data,
                num_neighbors=num_neighbors,
                subgraph_type=subgraph_type,
                replace=replace,
                disjoint=disjoint,
                temporal_strategy=temporal_strategy,
                time_attr=time_attr,
                weight_attr=weight_attr,
                is_sorted=is_sorted,
                share_memory=kwargs.get('num_workers', 0) > 0,
                directed=directed,
                generator=generator,
                fused=fused,
                device=device,
                graph_in_host_memory=graph_in_host_memory,
            )
        if filter_per_worker is None:
            filter_per_worker = infer_filter_per_worker(data)

        # NodeLoader's state, set here because the DataLoader underneath
        # iterates over whole seeded batches rather than single indices.
        self.data = data
        self.node_sampler = neighbor_sampler
        self.input_nodes = input_nodes
        self.input_time = input_time
        self.transform = transform
        self.transform_sampler_output = transform_sampler_output
        self.filter_per_worker = filter_per_worker
        self.custom_cls = None
        self.input_id = None
        self._data_plan, self._hetero_plans = DataPlan(), HeteroPlans()
        self.feature_cache = check_feature_cache(
            feature_cache, data, neighbor_sampler.device,
            transform_sampler_output, kwargs.get('num_workers', 0))

        graph = neighbor_sampler.graph_data  # (store data: its structure)
        input_type, num_input_nodes = None, graph.num_nodes
        if isinstance(graph, HeteroData):
            input_type = _input_type(graph, input_nodes)
            num_input_nodes = graph[input_type].num_nodes
        _check_input_nodes(input_nodes[1] if isinstance(input_nodes, tuple)
                           else input_nodes, num_input_nodes)
        input_type, nodes, input_id = get_input_nodes(data, input_nodes)
        if nodes.numel() > 0 and (int(nodes.min()) < 0
                                  or int(nodes.max()) >= num_input_nodes):
            raise ValueError(f"'input_nodes' holds ids outside "
                             f"[0, {num_input_nodes})")
        # PyG's NodeSamplerInput keeps its tensors on the CPU; for GPU
        # sampling the seeds are also kept on the device (_node_input).
        if input_time is not None:
            input_time = torch.as_tensor(input_time)
            if input_time.numel() != nodes.numel():
                raise ValueError(f"'input_time' must hold one time per input "
                                 f"node ({nodes.numel()}), got "
                                 f"{input_time.numel()}")
            input_time = input_time.cpu()
        self.input_data = NodeSamplerInput(input_id=input_id, node=nodes,
                                           time=input_time,
                                           input_type=input_type)
        on_gpu = neighbor_sampler.device.type == 'cuda'
        self._seed_nodes = nodes.to(neighbor_sampler.device) if on_gpu else None
        self._seed_times = (input_time.to(neighbor_sampler.device)
                            if on_gpu and input_time is not None else None)

        batch_sampler = SeededBatchSampler(nodes.numel(), batch_size, shuffle,
                                           drop_last, generator)
        torch.utils.data.DataLoader.__init__(
            self, BatchDataset(len(batch_sampler)), batch_size=None,
            sampler=batch_sampler, collate_fn=self.collate_fn, **kwargs)
        # DataLoader fixes batch_size to None for this mode; expose the real
        # one as NeighborLoader does (it only informs, nothing reads it).
        object.__setattr__(self, 'batch_size', batch_size)
        object.__setattr__(self, 'drop_last', drop_last)
        if not (prefetch is None or isinstance(prefetch, bool)
                or prefetch == 'thread'):
            raise ValueError(f"'prefetch' must be True, False, None or "
                             f"'thread', got {prefetch!r}")
        if prefetch is None:
            prefetch = (on_gpu and self.num_workers == 0
                        and neighbor_sampler.fused)
            if prefetch and self._native_thread():
                prefetch = 'thread'
        elif prefetch and self.num_workers > 0:
            raise ValueError(f"'prefetch={prefetch!r}' prepares batches in "
                             f"the training process: it needs num_workers=0")
        elif prefetch == 'thread' and not (on_gpu or self._native_thread()):
            raise ValueError("prefetch='thread' on CPU data needs the native "
                             "thread, which assembles plain batches only: a "
                             "Data, no transform_sampler_output, "
                             "subgraph_type='directional'")
        elif prefetch is True and not on_gpu:
            raise ValueError("'prefetch=True' overlaps GPU sampling with "
                             "training: it needs the graph on a CUDA device "
                             "(prefetch='thread' samples CPU data on a "
                             "background thread)")
        elif prefetch is True and not neighbor_sampler.fused:
            warnings.warn("'prefetch=True' with fused=False: the per-hop "
                          "sampler waits for the GPU at every hop, so the "
                          "next batch cannot be prepared ahead; sampling "
                          "stays on the critical path (prefetch='thread' "
                          "moves those waits to a background thread)",
                          stacklevel=2)
        self.prefetch = prefetch if prefetch == 'thread' else bool(prefetch)

    def collate_fn(self, batch) -> Union[Data, object]:
        r"""Samples the subgraph of one mini-batch. :obj:`batch` is a
        ``(positions, rng key)`` pair from :class:`SeededBatchSampler`, or
        plain input positions (then a key is drawn from the sampler's
        generator)."""
        rng_seed = None
        if isinstance(batch, tuple) and len(batch) == 2 and isinstance(
                batch[1], int):
            batch, rng_seed = batch
        if not isinstance(batch, Tensor):
            batch = torch.tensor(batch, dtype=torch.long)
        out = self.node_sampler.sample_from_nodes(self.input_data[batch],
                                                  rng_seed=rng_seed)
        if self.filter_per_worker:
            out = self.filter_fn(out)
        return out

    def _device_seeds(self, order: Tensor) -> Optional[Tensor]:
        # The epoch's seeds on the sampling GPU, in `order` (None on the
        # CPU): the nodes, or with input times [n, 2], each seed's node and
        # time.
        if self._seed_nodes is None:
            return None
        seeds, times = self._epoch_inputs(order)
        return seeds if times is None else torch.stack([seeds, times], 1)

    def _epoch_inputs(self, order: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        # The epoch's seed nodes and input times (None without input_time)
        # in `order`, on the sampling device: on a GPU from the copies kept
        # there, with one non-blocking copy of the order per epoch.
        nodes, times = self.input_data.node, self.input_data.time
        if self._seed_nodes is not None:
            order = order.pin_memory().to(self._seed_nodes.device,
                                          non_blocking=True)
            nodes, times = self._seed_nodes, self._seed_times
        return (nodes.index_select(0, order),
                None if times is None else times.index_select(0, order))

    def _input_id(self, positions: Tensor) -> Tensor:
        # A batch's input_id: positions into the input nodes (as
        # NeighborLoader gives it), on the CPU.
        ids = self.input_data.input_id
        return positions if ids is None else ids.index_select(0, positions)

    def _node_input(self, positions: Tensor,
                    seeds: Optional[Tensor] = None) -> NodeSamplerInput:
        # The sampler input of one batch: PyG's own selection, or with the
        # batch's seeds already on the GPU a NodeSamplerInput that keeps them
        # there (its constructor moves every tensor to the CPU: a host sync
        # per batch, and a copy back for the sampler). input_id stays on the
        # CPU, as in NeighborLoader.
        data = self.input_data
        if seeds is None:
            return data[positions]
        inputs = object.__new__(NodeSamplerInput)
        inputs.input_id = self._input_id(positions)
        inputs.node, inputs.time = ((seeds[:, 0], seeds[:, 1]) if seeds.dim() == 2
                                    else (seeds, None))
        inputs.input_type = data.input_type
        return inputs

    def _get_iterator(self):
        if self.num_workers > 0:
            return super()._get_iterator()
        if self.prefetch == 'thread':
            if self._native_thread():
                return _NativeIterator(self)
            return _background_iterator(self)
        return _InProcessIterator(self, lookahead=self.prefetch)

    def filter_fn(self, out):
        r"""Joins the sampled subgraph with the node and edge attributes,
        returning what :class:`~torch_geometric.loader.NodeLoader` returns.

        Batches of a :class:`Data` or :class:`HeteroData` without a
        sampler-output transform take a fast path
        (:mod:`~pyg_fusesample.loader.batch_assembly`): which attributes are
        node- or edge-level is decided once per set of keys, the rows of
        the device attributes are gathered by one ``gather_rows_list`` call
        per node (edge) type, and each storage is filled in one update --
        PyG's generic filter spends most of a GPU batch's host time on
        per-attribute checks and ``__setattr__``. Anything else goes through
        PyG's own ``filter_fn``."""
        if self.transform_sampler_output is not None or (
                out.orig_row is not None):
            return super().filter_fn(out)
        if isinstance(out, HeteroSamplerOutput) and type(self.data) is HeteroData:
            batch = assemble_hetero(
                self.data, self._hetero_plans.get(self.data,
                                                  self.node_sampler.device,
                                                  self.feature_cache),
                out, self.input_data.input_type, self.feature_cache)
            if self.node_sampler.subgraph_type == SubgraphType.directional:
                register_hetero_batch(batch)  # (see _assemble)
            return batch if self.transform is None else self.transform(batch)
        if not self._plain_batches() or not isinstance(out, SamplerOutput):
            return super().filter_fn(out)
        plan = self._filter_plan()
        rows = gather_on_device(plan, out.node, out.edge)
        input_id, seed_time = out.metadata[0], out.metadata[1]
        return self._assemble(plan, out.node, out.edge,
                              torch.stack([out.row, out.col], dim=0),
                              out.batch, out.num_sampled_nodes,
                              out.num_sampled_edges, input_id, seed_time, rows)

    def _native_thread(self) -> bool:
        # prefetch='thread' runs on the native thread (_NativeIterator) for
        # plain directional batches (uniform, weighted or temporal), else on
        # a Python thread.
        # The native thread samples on the graph's device: not a graph in
        # host memory sampled by a GPU (that prefetches by lookahead).
        return (self._plain_batches() and self.node_sampler.subgraph_type
                == SubgraphType.directional
                and not self.node_sampler.graph_in_host_memory)

    def _plain_batches(self) -> bool:
        # Batches of a plain Data with no sampler-output transform: the case
        # filter_fn's fast path and the native prefetch thread assemble.
        return (self.transform_sampler_output is None
                and type(self.data) is Data)

    def _assemble(self, plan: StorePlan, node: Tensor, edge: Tensor,
                  edge_index: Tensor, batch: OptTensor, num_sampled_nodes,
                  num_sampled_edges, input_id: Tensor, seed_time: OptTensor,
                  rows: dict) -> Data:
        # The mini-batch of one homogeneous sample; `rows` holds the
        # attributes already gathered by node (edge) id.
        mapping = sampled_mapping(plan, node, edge, edge_index, batch,
                                  num_sampled_nodes, num_sampled_edges, rows,
                                  self.feature_cache.get(None))
        mapping['input_id'] = input_id
        if seed_time is not None:
            mapping['seed_time'] = seed_time
        mapping['batch_size'] = input_id.size(0)
        if num_sampled_edges is not None and (
                self.node_sampler.subgraph_type == SubgraphType.directional):
            # Edges grouped by hop, targets in node order: the mini-batch
            # layers aggregate it as it is (sparse/target_layout.py).
            register_batch(edge_index, num_sampled_nodes, num_sampled_edges)
        out = Data()
        fill(out._store._mapping, mapping)
        return out if self.transform is None else self.transform(out)

    def _filter_plan(self) -> StorePlan:
        # Every attribute classified as torch_geometric.loader.utils.filter_data
        # does it; rebuilt when the data's keys or tensors change.
        return self._data_plan.get(self.data, self.node_sampler.device,
                                   self.feature_cache.get(None))
