"""LayerWiseLoader: mini-batches sampled layer by layer (LADIES, FastGCN)."""
import itertools
from typing import Callable, List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..ops import layer_batch
from ..sampler.graph_store import CSCGraph, build_csc
from ..sparse.edge_index_checks import check_edge_index
from ..sampler.rule_graph import segment_of_slots
from .background import check_prefetch, prefetching
from .batch_assembly import fill
from .native_epoch import NativeEpoch
from .fused_neighbor_loader import _check_input_nodes
from .seeded_batches import (BatchDataset, SeededBatchSampler,
                             resolve_generator)

_METHODS = ('ladies', 'fastgcn')
_NORMALIZATIONS = ('row', 'sym', None)

Block = Tuple[Tensor, Tensor, Tuple[int, int]]


class LayerWiseLoader(torch.utils.data.DataLoader):
    r"""A data loader that samples a fixed number of nodes per layer for a
    whole mini-batch, as in `"Layer-Dependent Importance Sampling for
    Training Deep and Large Graph Convolutional Networks"
    <https://arxiv.org/abs/1911.07323>`_ (LADIES, default) and `"FastGCN:
    Fast Learning with Graph Convolutional Networks via Importance Sampling"
    <https://arxiv.org/abs/1801.10247>`_ (FastGCN).

    With the propagation matrix :math:`\hat{A}` (:obj:`normalization` of
    :math:`A + I` when :obj:`add_self_loops`), layer :math:`l` of a batch
    has targets :math:`T_l` (:math:`T_0` the batch) and draws
    :obj:`num_samples[l]` nodes :math:`S_l` by importance: LADIES among the
    in-neighbours of :math:`T_l` without replacement, with probability
    :math:`\propto \sum_{v \in T_l} \hat{A}_{vu}^2`; FastGCN among all nodes
    with replacement, :math:`\propto \sum_v \hat{A}_{vu}^2`. Layer
    :math:`l`'s bipartite graph holds the in-edges of :math:`T_l` from
    :math:`T_{l+1} = T_l \cup S_l` (LADIES) or from :math:`S_l` (FastGCN),
    weighted by :math:`\hat{A}_{vu} / (s_l\, p_u)` (row-normalised per target
    when :obj:`normalize_weights`, as both papers' code does).

    Sampling runs where :obj:`data` lives (the C++ kernel on the CPU, the
    CUDA kernels on a GPU; see :func:`pyg_fusesample.ops.layer_sample`).

    Each batch is a :class:`~torch_geometric.data.Data` with every node
    attribute sliced by ``n_id`` (the batch first, then each layer's new
    nodes), ``edge_index`` (local; row = source, col = target) and
    ``edge_weight`` of all layers, innermost first, ``e_id`` (-1 for added
    self-loops), ``input_id``, ``batch_size``, ``num_sampled_nodes``,
    ``num_sampled_edges`` and ``adjs``: per layer, outermost first,
    ``(edge_index, edge_weight, (num_sources, num_targets))`` -- the layout of
    PyG's layer-by-layer models:

    .. code-block:: python

        for batch in loader:
            x = batch.x
            for conv, (edge_index, edge_weight, size) in zip(convs, batch.adjs):
                x = conv((x, x[:size[1]]), edge_index, edge_weight)
            loss = F.cross_entropy(x, batch.y[:batch.batch_size])

    Args:
        data (torch_geometric.data.Data): the graph.
        num_samples (List[int]): nodes drawn per layer, from the batch
            outwards; -1 takes every candidate (an exact layer).
        method (str): ``'ladies'`` or ``'fastgcn'``. (default: ``'ladies'``)
        input_nodes (Tensor, optional): the seed nodes (ids or a boolean
            mask; default: all nodes).
        normalization (str, optional): :math:`\hat{A}`: ``'row'``
            (:math:`D^{-1} A`, LADIES' code), ``'sym'``
            (:math:`D^{-1/2} A D^{-1/2}`, GCN) or ``None`` (ones).
        add_self_loops (bool): add :math:`I` to :math:`A` first.
        normalize_weights (bool): make each target's weights sum to one.
        batch_size, shuffle, drop_last: as :class:`torch.utils.data.DataLoader`.
        seed (int, optional) / generator (torch.Generator, optional): make
            the shuffling and the draws repeatable.
        transform (callable, optional): applied to every batch.
        prefetch (bool): assemble the batches on native background threads
            that never take the GIL (``fusesample.LayerBatchPrefetcher``;
            two on a GPU, each on a CUDA stream of its own, one on the
            CPU), up to two ahead each: a batch's host work (the sampling
            op's launches and size reads, the attribute gathers) then
            overlaps the training step instead of preceding it. The batches
            are the same; needs ``num_workers=0``. (default: :obj:`None`: on
            when the graph is on a GPU and ``num_workers=0``)
        **kwargs: further :class:`torch.utils.data.DataLoader` arguments.
    """
    def __init__(self, data: Data, num_samples: List[int],
                 method: str = 'ladies',
                 input_nodes: Optional[Tensor] = None,
                 normalization: Optional[str] = 'row',
                 add_self_loops: bool = True,
                 normalize_weights: bool = True,
                 batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, seed: Optional[int] = None,
                 generator: Optional[torch.Generator] = None,
                 transform: Optional[Callable] = None,
                 prefetch: Optional[bool] = None, **kwargs):
        if method not in _METHODS:
            raise ValueError(f"'method' must be one of {_METHODS}, got "
                             f"{method!r}")
        if normalization not in _NORMALIZATIONS:
            raise ValueError(f"'normalization' must be one of "
                             f"{_NORMALIZATIONS}, got {normalization!r}")
        num_samples = list(num_samples)
        if not num_samples or any(not isinstance(s, int) or s < -1
                                  for s in num_samples):
            raise ValueError(f"'num_samples' must be a non-empty list of "
                             f"counts >= 0 (or -1), got {num_samples!r}")
        for key in ('sampler', 'batch_sampler', 'collate_fn'):
            if kwargs.pop(key, None) is not None:
                raise ValueError(f"LayerWiseLoader does not take '{key}'")
        self.prefetch = check_prefetch(prefetch, kwargs.get('num_workers', 0),
                                       type(self).__name__)
        self.data = data
        self.num_samples = num_samples
        self.method = method
        self.normalize_weights = normalize_weights
        self.transform = transform
        self.num_edges = data.num_edges
        self.graph, self.edge_value = _propagation_graph(
            data, normalization, add_self_loops)
        self.node_cumsum = (_fastgcn_importance(self.graph, self.edge_value)
                            if method == 'fastgcn' else None)
        if self.node_cumsum is not None and any(s != 0 for s in num_samples) \
                and not (self.node_cumsum.numel() and
                         float(self.node_cumsum[-1]) > 0):
            raise ValueError("method='fastgcn' draws nodes by their "
                             "importance, and every node's is 0 here (a "
                             "graph without edges; add_self_loops=True "
                             "gives each node its own)")
        self.input_nodes = _seed_nodes(input_nodes, data.num_nodes,
                                       self.graph.device)
        batches = SeededBatchSampler(self.input_nodes.numel(), batch_size,
                                     shuffle, drop_last,
                                     resolve_generator(seed, generator))
        super().__init__(BatchDataset(len(batches)), batch_size=None,
                         sampler=batches, collate_fn=self._collate, **kwargs)
        object.__setattr__(self, 'batch_size', batch_size)

    def __iter__(self):
        if not prefetching(self.prefetch, self.graph.device):
            return super().__iter__()
        return _NativeIterator(self)

    def _collate(self, item: Tuple[Tensor, int]) -> Data:
        positions, rng_seed = item
        positions = positions.to(self.graph.device)
        rows = _NodeRows(self.data, self.graph.device)
        out = layer_batch(
            self.graph.colptr, self.graph.row, self.graph.edge_id,
            self.input_nodes.index_select(0, positions), self.num_samples,
            rng_seed, self.edge_value, self.node_cumsum, self.num_edges,
            self.normalize_weights, _weight_dtype(self.data), rows.gathered)
        return self._batch(out[:6], out.node_attrs, rows, positions)

    def _batch(self, out: List[Tensor], gathered: List[Tensor],
               rows: '_NodeRows', positions: Tensor) -> Data:
        # The Data of a batch from fusesample::layer_batch's outputs.
        # The storage is filled in one update (batch_assembly.fill): PyG's
        # attribute setting costs 15-20 us a key on a GPU host, and on the
        # host-bound training step a prefetched batch's assembly counts in
        # full.
        node, edge_index, edge_weight, e_id, nsn, nse = out
        edges, sizes = nse.tolist(), nsn.tolist()
        values = dict(rows.attributes(gathered, node))
        values.update(
            edge_index=edge_index, edge_weight=edge_weight, e_id=e_id,
            n_id=node, input_id=positions, batch_size=int(positions.numel()),
            num_sampled_nodes=sizes, num_sampled_edges=edges,
            adjs=_blocks(edge_index, edge_weight, edges,
                         list(itertools.accumulate(sizes))),
            num_nodes=node.numel())
        batch = Data()
        fill(batch._store._mapping, values)
        return batch if self.transform is None else self.transform(batch)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(method={self.method!r}, '
                f'num_samples={self.num_samples})')


class _NodeRows:
    # The node attributes of `data` that a batch slices by its node ids, in
    # data's order: those on the graph's device are gathered by the op (on
    # the prefetcher's thread), the others here.
    def __init__(self, data: Data, device: torch.device):
        self.items = [(key, value) for key, value in data.items()
                      if key != 'edge_index' and isinstance(value, Tensor)
                      and data.is_node_attr(key)]
        self.gathered = [v for _, v in self.items if v.device == device]
        self.device = device

    def attributes(self, gathered: List[Tensor], node: Tensor):
        rows = iter(gathered)
        for key, value in self.items:
            yield key, (next(rows) if value.device == self.device
                        else value.index_select(0, node.to(value.device)))


class _NativeIterator(NativeEpoch):
    # One epoch from fusesample.LayerBatchPrefetcher (kernels/loader/
    # layer_batch_prefetcher.cpp), which runs fusesample::layer_batch per
    # batch. Python threads (loader/background.py) had kept a LADIES or
    # FastGCN step at 1.43-1.91x the step on pre-sampled batches (H200),
    # taking turns with it on the GIL.
    def __init__(self, loader: LayerWiseLoader):
        self.draw_base_seed(loader)
        order, keys = loader.sampler.plan()
        device = loader.graph.device
        order = self.to_device(order, device)
        rows = _NodeRows(loader.data, device)
        prefetcher = torch.classes.fusesample.LayerBatchPrefetcher(
            loader.graph.colptr, loader.graph.row, loader.graph.edge_id,
            loader.edge_value, loader.node_cumsum,
            loader.input_nodes.index_select(0, order), loader.batch_size,
            keys, loader.num_samples, loader.num_edges,
            loader.normalize_weights, _weight_dtype(loader.data),
            rows.gathered, self.depth, self.thread_count(device))
        windows = loader.sampler.slices(order, keys)
        super().__init__(prefetcher, len(keys), lambda tensors: loader._batch(
            tensors[:6], tensors[6:], rows, next(windows)[0]))


def _weight_dtype(data: Data) -> torch.dtype:
    # The edge weights' dtype: the features', else the default.
    x = data.get('x')
    return x.dtype if isinstance(x, Tensor) and x.is_floating_point() \
        else torch.get_default_dtype()


def _propagation_graph(data: Data, normalization: Optional[str],
                       add_self_loops: bool) -> Tuple[CSCGraph, Optional[Tensor]]:
    # The CSC of A (+ I) and A-hat's value per CSC slot, in float64. Added
    # self-loops get edge ids num_edges + v.
    edge_index = data.edge_index
    n = data.num_nodes
    # (before the self-loops are appended, so the message is about the
    # caller's edge_index: its shape, dtype and ids)
    check_edge_index(edge_index, n, 'LayerWiseLoader')
    if add_self_loops:
        loops = torch.arange(n, device=edge_index.device).expand(2, n)
        edge_index = torch.cat([edge_index.long(), loops], dim=1)
    graph = build_csc(edge_index, n)
    if normalization is None:
        return graph, None
    in_degree = (graph.colptr[1:] - graph.colptr[:-1]).to(torch.float64)
    target = segment_of_slots(graph.colptr)
    inv = torch.where(in_degree > 0, 1.0 / in_degree,
                      torch.zeros_like(in_degree))
    if normalization == 'row':
        value = inv[target]
    else:
        inv_sqrt = inv.sqrt()
        value = inv_sqrt[graph.row.long()] * inv_sqrt[target]
    return graph, value.contiguous()


def _fastgcn_importance(graph: CSCGraph, value: Optional[Tensor]) -> Tensor:
    # q_u = sum over u's out-edges of A-hat^2, as prefix sums over node ids,
    # summed on the CPU so that every device reads the same bits.
    sq = (value.cpu() ** 2 if value is not None
          else torch.ones(graph.num_edges, dtype=torch.float64))
    q = torch.zeros(graph.num_nodes, dtype=torch.float64)
    q.index_add_(0, graph.row.cpu().long(), sq)
    return torch.cumsum(q, 0).to(graph.device)


def _seed_nodes(input_nodes: Optional[Tensor], num_nodes: int,
                device: torch.device) -> Tensor:
    if input_nodes is None:
        return torch.arange(num_nodes, device=device)
    if not isinstance(input_nodes, Tensor):
        input_nodes = torch.as_tensor(input_nodes)
    _check_input_nodes(input_nodes, num_nodes)  # FusedNeighborLoader's checks
    if input_nodes.dtype == torch.bool:
        input_nodes = input_nodes.nonzero().view(-1)
    input_nodes = input_nodes.long()
    if input_nodes.numel() and (int(input_nodes.min()) < 0
                                or int(input_nodes.max()) >= num_nodes):
        raise ValueError(f"'input_nodes' holds ids outside [0, {num_nodes})")
    return input_nodes.to(device)


def _blocks(edge_index: Tensor, edge_weight: Tensor, edges: List[int],
            nodes: List[int]) -> List[Block]:
    # Layer l: sources node[:n_{l+1}], targets node[:n_l]; outermost first.
    blocks = []
    for l, (ei, w) in enumerate(zip(edge_index.split(edges, dim=1),
                                    edge_weight.split(edges))):
        blocks.append((ei, w, (int(nodes[l + 1]), int(nodes[l]))))
    return blocks[::-1]
