"""FusedLinkNeighborLoader: a drop-in for PyG's LinkNeighborLoader."""
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import LinkLoader
from torch_geometric.sampler import HeteroSamplerOutput, NegativeSampling
from torch_geometric.sampler.base import SubgraphType
from torch_geometric.typing import InputEdges, OptTensor

from ..sampler import FusedNeighborSampler, GPUFeatureCache
from ..sparse.edge_index_checks import check_ids_in_range
from ..sparse.target_layout import register_batch, register_hetero_batch
from .batch_assembly import (DataPlan, HeteroPlans, fill, gather_on_device,
                             sampled_hetero, sampled_mapping)
from .feature_caches import check_feature_cache
from .seeded_batches import (BatchDataset, SeededBatchSampler,
                             resolve_generator)
from .side_stream import SideStreamIterator


class _SeededBatches(torch.utils.data.DataLoader):
    # Sits between LinkLoader and DataLoader in the MRO: LinkLoader hands it
    # range(num_seed_edges); it iterates whole (positions, rng key) batches
    # of SeededBatchSampler instead, as FusedNeighborLoader does.
    def __init__(self, dataset, collate_fn, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False,
                 generator: Optional[torch.Generator] = None, **kwargs):
        for key in ('sampler', 'batch_sampler'):
            if kwargs.pop(key, None) is not None:
                raise ValueError(f"FusedLinkNeighborLoader does not take "
                                 f"'{key}': it draws its own batches")
        batches = SeededBatchSampler(len(dataset), batch_size, shuffle,
                                     drop_last, generator)
        super().__init__(BatchDataset(len(batches)), batch_size=None,
                         sampler=batches, collate_fn=collate_fn, **kwargs)
        object.__setattr__(self, 'batch_size', batch_size)
        object.__setattr__(self, 'drop_last', drop_last)


class FusedLinkNeighborLoader(LinkLoader, _SeededBatches):
    r"""A link-prediction loader that samples the neighbourhoods of seed
    edges with the fused kernels; a drop-in replacement for
    :class:`torch_geometric.loader.LinkNeighborLoader` on
    :class:`~torch_geometric.data.Data` and
    :class:`~torch_geometric.data.HeteroData`.

    It takes :class:`~torch_geometric.loader.LinkNeighborLoader`'s arguments
    and yields its mini-batches: the sampled subgraph of both endpoints of
    every seed edge (and of the negatives), with ``edge_label_index``
    relabelled to the batch's nodes, ``edge_label`` and ``input_id``
    (``'binary'`` negatives), or ``src_index``, ``dst_pos_index`` and
    ``dst_neg_index`` (``'triplet'``). Every hop and edge type is sampled in
    one call of the fused op on the graph's device; negatives are drawn
    there too (:class:`~pyg_fusesample.sampler.negative_sampling.
    KeyedNegativeSampling`), from the batch's RNG key.

    .. code-block:: python

        from pyg_fusesample import FusedLinkNeighborLoader as LinkNeighborLoader

        loader = LinkNeighborLoader(data, num_neighbors=[15, 10],
                                    edge_label_index=train_edges,
                                    neg_sampling='binary', batch_size=1024,
                                    shuffle=True, seed=0)

    Args:
        data (Data or HeteroData): the graph.
        num_neighbors (List[int] or Dict[EdgeType, List[int]]): neighbours
            sampled per hop (and edge type); ``-1`` for all.
        edge_label_index (Tensor or EdgeType or Tuple[EdgeType, Tensor]):
            the seed edges (for a :class:`HeteroData`, with their edge type).
        edge_label (Tensor, optional): labels of the seed edges.
        edge_label_time (Tensor, optional): the seed edges' times (temporal
            sampling with :obj:`time_attr`, as in PyG).
        temporal_strategy, time_attr, weight_attr: as in
            :class:`~pyg_fusesample.FusedNeighborLoader`.
        replace, subgraph_type, disjoint, is_sorted, transform,
        transform_sampler_output, filter_per_worker: as in
            :class:`~torch_geometric.loader.LinkNeighborLoader`.
        neg_sampling (NegativeSampling or str, optional): ``'binary'`` or
            ``'triplet'`` negatives (see PyG).
        neg_sampling_ratio (int or float, optional): negatives per positive
            (binary), the older spelling of ``neg_sampling``.
        neighbor_sampler (FusedNeighborSampler, optional): reuse a sampler.
        seed (int, optional): makes shuffling, negatives and neighbour draws
            bitwise repeatable.
        generator (torch.Generator, optional): the same, from a generator.
        fused (bool): on a GPU, one kernel launch per batch (default).
        prefetch (bool, optional): on a GPU with ``num_workers=0``, build
            each batch one ahead on a CUDA stream of its own, so that its
            host reads (PyG's ``unique`` of the seeds, the sampled sizes)
            wait only for sampling, never for a training step (default:
            ``True`` for graphs on a GPU and ``num_workers=0``). The batches
            are the same either way.
        feature_cache (Dict[str, GPUFeatureCache] or Dict[Tuple[str, str],
            GPUFeatureCache], optional): node attributes gathered through a
            :class:`~pyg_fusesample.sampler.GPUFeatureCache`, as in
            :class:`~pyg_fusesample.FusedNeighborLoader` (``num_workers=0``,
            no ``transform_sampler_output``).
        **kwargs: :class:`torch.utils.data.DataLoader` arguments
            (``batch_size``, ``shuffle``, ``num_workers``, ...).
    """
    def __init__(
        self,
        data: Union[Data, HeteroData],
        num_neighbors: Union[List[int], Dict],
        edge_label_index: InputEdges = None,
        edge_label: OptTensor = None,
        edge_label_time: OptTensor = None,
        replace: bool = False,
        subgraph_type: Union[SubgraphType, str] = 'directional',
        disjoint: bool = False,
        temporal_strategy: str = 'uniform',
        neg_sampling: Optional[NegativeSampling] = None,
        neg_sampling_ratio: Optional[Union[int, float]] = None,
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
        prefetch: Optional[bool] = None,
        feature_cache: Optional[Dict[Union[str, Tuple[str, str]],
                                     GPUFeatureCache]] = None,
        **kwargs,
    ):
        if (edge_label_time is not None) != (time_attr is not None):
            raise ValueError(  # PyG's message
                f"Received conflicting 'edge_label_time' and 'time_attr' "
                f"arguments: 'edge_label_time' is "
                f"{'set' if edge_label_time is not None else 'not set'} "
                f"while 'time_attr' is "
                f"{'set' if time_attr is not None else 'not set'}. "
                f"Both arguments must be provided for temporal sampling.")
        generator = resolve_generator(seed, generator)
        kwargs['generator'] = generator  # shuffling and per-batch keys
        if neighbor_sampler is None:
            neighbor_sampler = FusedNeighborSampler(
                data,
                num_neighbors=num_neighbors,
                replace=replace,
                subgraph_type=subgraph_type,
                disjoint=disjoint,
                temporal_strategy=temporal_strategy,
                time_attr=time_attr,
                weight_attr=weight_attr,
                is_sorted=is_sorted,
                share_memory=kwargs.get('num_workers', 0) > 0,
                directed=directed,
                generator=generator,
                fused=fused,
            )
        super().__init__(
            data=data,
            link_sampler=neighbor_sampler,
            edge_label_index=edge_label_index,
            edge_label=edge_label,
            edge_label_time=edge_label_time,
            neg_sampling=neg_sampling,
            neg_sampling_ratio=neg_sampling_ratio,
            transform=transform,
            transform_sampler_output=transform_sampler_output,
            filter_per_worker=filter_per_worker,
            **kwargs,
        )

        _check_seed_edges(data, self.input_data)

        self.feature_cache = check_feature_cache(
            feature_cache, data, self.link_sampler.device,
            transform_sampler_output, self.num_workers)
        self._data_plan, self._hetero_plans = DataPlan(), HeteroPlans()

        on_gpu = self.link_sampler.device.type == 'cuda'
        if prefetch is None:
            prefetch = on_gpu and self.num_workers == 0
        elif prefetch and not (on_gpu and self.num_workers == 0):
            raise ValueError("'prefetch=True' builds batches ahead on a CUDA "
                             "stream: it needs the graph on a GPU and "
                             "num_workers=0")
        self.prefetch = prefetch

    def _get_iterator(self) -> Iterator:
        if not self.prefetch:
            return super()._get_iterator()

        def make(item):
            out = self.collate_fn(item)
            return out if self.filter_per_worker else self.filter_fn(out)

        return SideStreamIterator(iter(self.sampler), make,
                                  self.link_sampler.device)

    def filter_fn(self, out):
        r"""Joins the sampled subgraph with the node and edge attributes,
        returning what :class:`~torch_geometric.loader.LinkLoader` returns.

        Batches of a :class:`Data` or :class:`HeteroData` without a
        sampler-output transform are filled as
        :class:`~pyg_fusesample.FusedNeighborLoader` fills its own
        (:mod:`~pyg_fusesample.loader.batch_assembly`: attributes classified
        once per set of keys, device rows gathered in one call, the
        :obj:`feature_cache` attributes through their caches), then given
        LinkLoader's metadata; anything else goes through PyG's
        ``filter_fn``."""
        if self.transform_sampler_output is not None or type(
                self.data) not in (Data, HeteroData) or getattr(
                out, 'orig_row', None) is not None:
            return super().filter_fn(out)
        if isinstance(out, HeteroSamplerOutput):
            batch = sampled_hetero(
                self.data, self._hetero_plans.get(
                    self.data, self.link_sampler.device, self.feature_cache),
                out, self.feature_cache)
            self._hetero_link_metadata(batch, out.metadata)
            if self._directional():
                register_hetero_batch(batch)  # (FusedNeighborLoader's)
        else:
            plan = self._data_plan.get(self.data, self.link_sampler.device,
                                       self.feature_cache.get(None))
            edge_index = torch.stack([out.row, out.col])
            mapping = sampled_mapping(
                plan, out.node, out.edge, edge_index,
                out.batch, out.num_sampled_nodes, out.num_sampled_edges,
                gather_on_device(plan, out.node, out.edge),
                self.feature_cache.get(None))
            if self._directional() and out.num_sampled_edges is not None:
                register_batch(edge_index, out.num_sampled_nodes,
                               out.num_sampled_edges)
            mapping.update(self._link_metadata(out.metadata))
            batch = Data()
            fill(batch._store._mapping, mapping)
        return batch if self.transform is None else self.transform(batch)

    def _directional(self) -> bool:
        # Directional batches come with their edges grouped by target
        # (sparse/target_layout.py: the mini-batch layers read them as is).
        return self.link_sampler.subgraph_type == SubgraphType.directional

    def _link_metadata(self, metadata) -> dict:
        # LinkLoader's attributes of a homogeneous batch (None: removed).
        if self.neg_sampling is None or self.neg_sampling.is_binary():
            return dict(input_id=metadata[0], edge_label_index=metadata[1],
                        edge_label=metadata[2], edge_label_time=metadata[3])
        return dict(input_id=metadata[0], src_index=metadata[1],
                    dst_pos_index=metadata[2], dst_neg_index=metadata[3],
                    seed_time=metadata[4], edge_label_index=None,
                    edge_label_time=None)

    def _hetero_link_metadata(self, batch: HeteroData, metadata):
        # LinkLoader's attributes of a heterogeneous batch, on the seed edge
        # type (binary) or its end node types (triplet).
        input_type = self.input_data.input_type
        fill(batch[input_type]._mapping, {'input_id': metadata[0]})
        if self.neg_sampling is None or self.neg_sampling.is_binary():
            fill(batch[input_type]._mapping, dict(
                edge_label_index=metadata[1], edge_label=metadata[2],
                edge_label_time=metadata[3]))
            return
        # (in LinkLoader's order: the keys' order shows in the batch)
        fill(batch[input_type[0]]._mapping, {'src_index': metadata[1]})
        fill(batch[input_type[-1]]._mapping, dict(dst_pos_index=metadata[2],
                                                  dst_neg_index=metadata[3]))
        fill(batch[input_type[0]]._mapping, {'seed_time': metadata[4]})
        fill(batch[input_type[-1]]._mapping, {'seed_time': metadata[4]})
        if input_type in batch.edge_types:
            fill(batch[input_type]._mapping,
                 dict(edge_label_index=None, edge_label_time=None))

    def collate_fn(self, index) -> object:
        r"""Samples the subgraph of one mini-batch of seed edges:
        :obj:`index` is a ``(positions, rng key)`` pair from
        :class:`~pyg_fusesample.loader.SeededBatchSampler`, or plain
        positions (a key is then drawn from the sampler's generator)."""
        rng_seed = None
        if isinstance(index, tuple) and len(index) == 2 and isinstance(
                index[1], int):
            index, rng_seed = index
        if not isinstance(index, Tensor):
            index = torch.tensor(index, dtype=torch.long)
        out = self.link_sampler.sample_from_edges(
            self.input_data[index], neg_sampling=self.neg_sampling,
            rng_seed=rng_seed)
        if self.filter_per_worker:
            out = self.filter_fn(out)
        return out


def _check_seed_edges(data, inputs):
    # Once, at construction (the seed edges never change): ids out of range
    # would otherwise surface from the sampler as bad 'seed' ids, per batch.
    if isinstance(data, Data):
        sizes = (data.num_nodes, data.num_nodes)
    elif isinstance(data, HeteroData) and inputs.input_type is not None:
        src, _, dst = inputs.input_type
        sizes = (data[src].num_nodes, data[dst].num_nodes)
    else:
        return
    for ids, size in zip((inputs.row, inputs.col), sizes):
        if size is not None:
            check_ids_in_range(ids, int(size), 'edge_label_index',
                               'FusedLinkNeighborLoader')
