r"""``FusedDistNeighborLoader``: mini-batches of a partitioned graph, one
process per part, as :class:`~pyg_fusesample.FusedNeighborLoader` gives them
on the whole graph."""
import warnings
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as dist
from torch import Tensor
from torch_geometric.data import Data

from ..loader.background import GPU_THREADS, start_threads
from ..loader.distributed import node_index, rank_seeds
from ..loader.seeded_batches import SeededBatchSampler, resolve_generator
from ..loader.side_stream import SideStreamIterator
from ..sparse.target_layout import register_batch
from .dist_sampler import DistNeighborSampler
from .hetero_batch import feature_names_of, hetero_batch, hetero_batches
from .partition_files import Partition


class FusedDistNeighborLoader:
    r"""Mini-batches of the graph partitioned over a ``torch.distributed``
    group, sampled across the ranks' parts
    (:class:`~pyg_fusesample.distributed.DistNeighborSampler`), with node
    features and labels gathered from their owners.

    Rank ``r``'s batches are those :class:`~pyg_fusesample.
    FusedNeighborLoader` gives on the whole graph for rank ``r``'s share of
    the seeds (:func:`~pyg_fusesample.loader.rank_seeds`:
    ``DistributedSampler``'s split, not shuffled there), with the same
    ``batch_size``, ``shuffle``, ``drop_last`` and ``seed``: the same
    nodes, edges, edge ids, features, labels and per-hop counts, whatever
    the partitioning. Every rank has as many batches (the shares are padded
    as ``DistributedSampler`` pads them), and iterating is collective: all
    ranks iterate together.

    .. code-block:: python

        dist.init_process_group('gloo')   # CPU parts
        part = read_partition(root, dist.get_rank())
        # (GPUs: torch.cuda.set_device(local_rank);
        #  dist.init_process_group('nccl');
        #  part = read_partition(root, rank, device=f'cuda:{local_rank}'))
        loader = FusedDistNeighborLoader(part, [15, 10], input_nodes=train,
                                         batch_size=1024, shuffle=True,
                                         seed=epoch_seed)
        for batch in loader:  # Data: x, y, edge_index, n_id, e_id, ...
            ...

    Args:
        part (Partition): this rank's part
            (:func:`~pyg_fusesample.distributed.read_partition`).
        num_neighbors (List[int]): fan-out per hop (``-1``: all in-edges).
        input_nodes (Tensor, optional): the seeds of all ranks, global ids
            or a boolean mask over the graph's nodes (default: every node),
            sharded here (:obj:`shard_inputs`); for a heterogeneous
            partition ``(node_type, ids or mask)`` or a node type, as
            ``FusedNeighborLoader`` takes them (fan-outs then a list for
            every edge type or a dict edge type -> list; batches are
            ``HeteroData``, uniform sampling only).
        batch_size (int): seeds per batch.
        shuffle (bool): shuffle this rank's seeds every epoch.
        drop_last (bool): drop this rank's last, smaller batch.
        replace (bool): draw with replacement.
        seed (int, optional): seeds the shuffling and the batches' RNG keys
            (else :obj:`generator`, else PyTorch's global RNG; every rank
            draws its own keys from its own generator).
        generator (torch.Generator, optional): as for ``FusedNeighborLoader``.
        shard_inputs (bool): take this rank's share of :obj:`input_nodes`
            (default); ``False``: they are this rank's seeds already (their
            batches must then be as many on every rank).
        edge_weight (bool): draw in-edges by the partition's ``edge_attr``
            (one weight per edge), as ``FusedNeighborLoader``'s
            ``weight_attr`` does on the whole graph.
        disjoint (bool): each seed its own subtree (``batch`` in the
            batches), as ``FusedNeighborLoader(disjoint=True)``.
        edge_time (Tensor, optional): this part's in-edge times, in the
            order of ``part.csc[None]``: temporal sampling (disjoint, each
            seed's subtree bounded by its time), as ``FusedNeighborLoader``
            with an edge-level ``time_attr``.
        input_time (Tensor, optional): with :obj:`edge_time`, one time per
            entry of :obj:`input_nodes` (ids given, not a mask), sharded
            with them; with node-level times (:obj:`time_attr`) the seeds'
            own times by default.
        temporal_strategy (str): ``'uniform'`` or ``'last'``.
        cache_rows (int): rows of hot remote nodes each rank keeps and
            gathers from (see :class:`~pyg_fusesample.distributed.
            DistNeighborSampler`; the same on every rank). Default: ``0``.
        group: the process group (default: the world).
        time_attr (str, optional): temporal sampling by the partition's
            own times, as ``FusedNeighborLoader(time_attr=...)`` samples the
            whole graph: ``'edge_time'``, the edge-level times PyG's
            ``Partitioner`` writes (``part.csc[t].edge_time``), or
            ``'time'``, the node-level ones (``part.node_time``, every
            node's: an in-edge's time is its source's), else the edge-level
            ones where the partition has no node-level times
            (:func:`~pyg_fusesample.distributed.dist_sampler.
            partition_times`). Instead of :obj:`edge_time`; homogeneous or
            heterogeneous.
        prefetch (bool or str, optional): make batches ahead of the
            training step, over process groups of the loader's own (made
            here: the world's ranks, the default group's backend and
            timeout; shared by later loaders); the batches are the same in
            every mode. Only with the world as the group (:obj:`group`
            unset).
            ``True``: the next batch is made as the current one is handed
            out, in the caller's thread, on a CUDA stream of its own on a
            GPU (its host reads wait for its sampling, not for the training
            step enqueued before it), exchanging over one group of its own.
            Every rank issues its collectives, the loader's and the
            training's (DDP's all-reduce), in its program's order, the same
            on every rank, as NCCL asks of several communicators on one GPU
            ("Using multiple NCCL communicators concurrently"); the two may
            be in flight together, which NCCL says works while their kernels
            fit on the GPU (its stricter advice, one communicator at a time,
            would serialise them).
            ``'thread'``: batches made on background threads (on a GPU two,
            each every other batch on a CUDA stream of its own; on the CPU
            one), each exchanging over a group of its own, so the host work
            of sampling overlaps the training step's too (at world size 1
            on an H200: a 6.61 ms training step, 10.36 without it, one
            run). Refused across GPUs (NCCL at world size > 1:
            :func:`prefetch_refusal`): the threads would issue NCCL
            collectives in parallel with the training thread's, which NCCL
            documents as unsafe (a DDP step did not complete on two H200s).
            An epoch left before its end: every rank leaves it at the same
            batch (iteration is collective), and its threads make the
            batches their queues have room for before they stop (at most
            two more each), the same on every rank; close the epoch's
            iterator (``it.close()``) before destroying the process group.
            (default: ``True`` on a GPU without a :obj:`group`, else
            ``False``: the batches made when asked for, in the caller's
            thread, on its stream, over :obj:`group`; on a GPU with a
            :obj:`group`, with a warning)
        batches_per_call (int, optional): batches sampled together, in one
            call of the sampler (:meth:`DistNeighborSampler._sample_batches`:
            one set of all-to-alls, launches and host reads for all of them,
            and one feature gather), then handed out one by one: the same
            batches. Why: on GPUs the partitioned loader's time is the
            host's fixed work per call (~180 launches and 13 all-to-alls a
            batch of 3 hops on an H200), which ``B`` batches then share, at
            the price of their memory (``B`` batches' sampling and features
            at once) and of a burst of sampling every ``B`` steps. On two
            H200s (papers100M-like, GraphSAGE, DDP) the partitioned run's
            throughput was 0.58x the replicated run's at ``1`` and 0.70x at
            ``4`` on one host; on another, 0.76x at ``4`` and 0.85x at
            ``8`` (docs/multi_gpu.md). Homogeneous or heterogeneous
            partitions, without ``prefetch='thread'``. (default: ``8`` on a
            GPU unless :obj:`prefetch` is ``'thread'``, else ``1``)

    Batches hold ``x``, ``y`` (where the partition stores them),
    ``edge_index``, ``n_id``, ``e_id``, ``input_id`` (positions in this
    rank's seeds), ``batch_size``, ``num_sampled_nodes`` and
    ``num_sampled_edges``; ``edge_index`` is registered for the mini-batch
    layers (:mod:`pyg_fusesample.nn`), as the fused loaders register theirs.

    Devices: the loader samples where :obj:`part` is, and its batches'
    tensors are there (``input_id`` stays on the CPU, as
    ``FusedNeighborLoader``'s): on the CPU under a ``gloo`` group, or on
    this rank's GPU under an ``nccl`` group, the part moved there by
    ``read_partition(root, rank, device=torch.device('cuda', local_rank))``
    (or :meth:`Partition.to`; ``pin_features=True`` keeps the node features
    in pinned host memory). A batch of ``L`` hops takes ``3 L + 2 + F``
    all-to-alls (one more for each hop with a fan-out of ``-1``; ``F``:
    the features gathered, ``x`` and ``y``) and ``2 L + 1`` host reads of
    their sizes; the sampler
    (``loader.sampler``) counts them and the bytes sent and received
    (:class:`~pyg_fusesample.distributed.DistNeighborSampler`, which also
    says what is not done yet).
    """
    def __init__(self, part: Partition, num_neighbors: Sequence[int],
                 input_nodes: Optional[Tensor] = None, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False,
                 replace: bool = False, seed: Optional[int] = None,
                 generator: Optional[torch.Generator] = None,
                 shard_inputs: bool = True, edge_weight: bool = False,
                 disjoint: bool = False, edge_time: Optional[Tensor] = None,
                 input_time: Optional[Tensor] = None,
                 temporal_strategy: str = 'uniform', cache_rows: int = 0,
                 group=None, time_attr: Optional[str] = None,
                 prefetch: Optional[Union[bool, str]] = None,
                 batches_per_call: Optional[int] = None):
        if time_attr is None and (edge_time is None) != (input_time is None):
            raise ValueError("'edge_time' and 'input_time' come together "
                             "(temporal sampling)")
        # (temporal sampling is disjoint, as FusedNeighborLoader's)
        disjoint = disjoint or edge_time is not None or time_attr is not None
        self.sampler = DistNeighborSampler(
            part, num_neighbors, replace=replace, edge_weight=edge_weight,
            disjoint=disjoint, edge_time=edge_time,
            temporal_strategy=temporal_strategy, cache_rows=cache_rows,
            group=group, time_attr=time_attr)
        node_time = self.sampler.node_time
        if time_attr is not None and node_time is None and \
                input_time is None:
            raise ValueError("edge-level temporal sampling needs the seeds' "
                             "times ('input_time')")
        self.seed_type, self._seed_offset = None, 0
        if self.sampler.typed is not None:
            input_nodes, num_nodes = self._typed_inputs(input_nodes)
        else:
            num_nodes = part.node_map[None].numel()
        input_nodes = node_index(input_nodes, num_nodes,
                                 type(self).__name__).cpu()
        if input_nodes.numel() and (int(input_nodes.min()) < 0 or
                                    int(input_nodes.max()) >= num_nodes):
            raise ValueError(f"'input_nodes' holds ids outside [0, "
                             f"{num_nodes})")
        if input_time is None and node_time is not None:
            # (node-level time: the seeds' own times, as the whole graph's
            # loader gives them)
            if isinstance(node_time, dict):
                if self.seed_type not in node_time:
                    raise ValueError(f"the seeds' node type "
                                     f"{self.seed_type!r} has no times: "
                                     f"pass them as 'input_time'")
                node_time = node_time[self.seed_type]
            input_time = node_time.cpu()[input_nodes]
        if input_time is not None:
            input_time = input_time.cpu().to(torch.long).reshape(-1)
            if input_time.numel() != input_nodes.numel():
                raise ValueError(f"'input_time' must have one time per "
                                 f"input node ({input_nodes.numel()}), got "
                                 f"{input_time.numel()}")
        if shard_inputs:
            # (positions sharded, so that the times follow their seeds)
            mine = rank_seeds(torch.arange(input_nodes.numel()),
                              self.sampler.rank, self.sampler.world_size,
                              shuffle=False, drop_last=drop_last)
            input_nodes = input_nodes[mine]
            input_time = None if input_time is None else input_time[mine]
        self.input_nodes, self.input_time = input_nodes, input_time
        self.batches = SeededBatchSampler(
            input_nodes.numel(), batch_size, shuffle, drop_last,
            resolve_generator(seed, generator))
        if self.seed_type is not None:
            self._feature_names = feature_names_of(self.sampler)
        else:
            feats = part.node_feats[None]
            self._feature_names = [n for n in ('x', 'y') if n in feats]
        self.prefetch = prefetch = _prefetch_mode(
            prefetch, self.sampler.device, group, type(self).__name__)
        batches_per_call = _batches_per_call(
            batches_per_call, self.sampler.device, prefetch,
            type(self).__name__)
        self.batches_per_call = batches_per_call
        # (the samplers of the lanes, each exchanging over a process group
        # of its own: one in the caller's thread, or one a background thread)
        self._lanes: List[DistNeighborSampler] = []
        self._lane_key: Optional[Tuple] = None
        device = self.sampler.device
        if prefetch == 'thread':
            refusal = prefetch_refusal(device, self.sampler.world_size)
            if refusal is not None:
                raise ValueError(f"{type(self).__name__}: {refusal}")
        if prefetch:
            lanes = GPU_THREADS if (prefetch == 'thread'
                                    and device.type == 'cuda') else 1
            self._lane_key, groups = _lane_groups(device, lanes)
            self._lanes = [self.sampler.lane(g) for g in groups]

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Data]:
        # (the epoch's order and RNG keys drawn here, in the caller's
        # thread: the batches are the same with or without the threads)
        items = list(self.batches.slices(*self.batches.plan()))
        # The last epoch on these groups (of any loader) ends first: its
        # threads stop after the same batch on every rank, then this
        # epoch takes the groups (whichever way it makes its batches).
        if self._lanes:
            for thread in _LANE_THREADS.pop(self._lane_key, []):
                thread.stop.set()
                thread.join()
        B = self.batches_per_call
        if B > 1:  # (groups of B batches, each group one call: flattened)
            groups = [items[i:i + B] for i in range(0, len(items), B)]
            if not self._lanes:
                made = (self._batches(self.sampler, g) for g in groups)
            else:
                lane = self._lanes[0]
                made = SideStreamIterator(
                    iter(groups), lambda g: self._batches(lane, g),
                    self.sampler.device, key=('lane', self._lane_key))
            return (batch for group in made for batch in group)
        if not self._lanes:
            return (self._batch(self.sampler, positions, key)
                    for positions, key, _ in items)
        if self.prefetch is True:
            # (one ahead, in this thread: every rank issues its collectives,
            # the lane's and the training's, in its program's order)
            lane = self._lanes[0]
            return SideStreamIterator(
                iter(items), lambda item: self._batch(lane, *item[:2]),
                self.sampler.device, key=('lane', self._lane_key))
        W = len(self._lanes)
        parts = [_batches_of(self._batch, lane, items[i::W])
                 for i, lane in enumerate(self._lanes)]
        it = start_threads(parts, len(items), self.sampler.device,
                           f'{type(self).__name__}-prefetch',
                           collective=True)
        _LANE_THREADS[self._lane_key] = list(it.threads)
        return it

    def _typed_inputs(self, input_nodes):
        # (node type, ids or mask) -> (ids or mask, the type's node count);
        # the seeds go to the sampler in its one id space.
        typed = self.sampler.typed
        if isinstance(input_nodes, str):
            input_nodes = (input_nodes, None)
        if not (isinstance(input_nodes, (tuple, list))
                and len(input_nodes) == 2
                and isinstance(input_nodes[0], str)):
            raise ValueError(f"{type(self).__name__}: a heterogeneous "
                             f"partition takes 'input_nodes' as (node_type, "
                             f"ids or mask) or a node type, got "
                             f"{type(input_nodes).__name__}")
        self.seed_type, nodes = input_nodes
        i = typed.type_of(self.seed_type)
        self._seed_offset = typed.node_offset[i]
        return nodes, typed.node_offset[i + 1] - typed.node_offset[i]

    def _batch(self, sampler: DistNeighborSampler, positions: Tensor,
               key: int) -> Data:
        # (sampler: the loader's, or a background thread's lane of it)
        seeds = self.input_nodes[positions]
        out = sampler._sample(
            seeds + self._seed_offset, key,
            None if self.input_time is None else self.input_time[positions])
        if self.seed_type is not None:
            return hetero_batch(sampler, out, self.seed_type, positions,
                                self._feature_names)
        return self._data(out, sampler._gather_all(out.node,
                                                   self._feature_names),
                          positions, seeds.numel())

    def _batches(self, sampler: DistNeighborSampler, group) -> List[Data]:
        # (a group of batches, sampled in one call and their features
        # gathered in one: DistNeighborSampler._sample_batches)
        positions = [item[0] for item in group]
        seeds = [self.input_nodes[p] for p in positions]
        outs, node, node_of = sampler._sample_batches(
            [x + self._seed_offset for x in seeds],
            [item[1] for item in group],
            None if self.input_time is None else
            [self.input_time[p] for p in positions])
        if self.seed_type is not None:
            return hetero_batches(sampler, outs, self.seed_type, positions,
                                  self._feature_names)
        # (the call's rows, batch after batch: each batch's are a view)
        feats = sampler._gather_all(node, self._feature_names)
        return [self._data(out, {n: f[node_of[b]] for n, f in feats.items()},
                           positions[b], seeds[b].numel())
                for b, out in enumerate(outs)]

    def _data(self, out, feats, positions: Tensor, batch_size: int) -> Data:
        data = Data(edge_index=torch.stack([out.row, out.col]),
                    num_nodes=out.node.numel())
        for name in self._feature_names:
            data[name] = feats[name]
        data.n_id, data.e_id = out.node, out.edge
        data.input_id, data.batch_size = positions, batch_size
        data.num_sampled_nodes = out.num_sampled_nodes
        data.num_sampled_edges = out.num_sampled_edges
        if out.batch is not None:
            data.batch = out.batch
        register_batch(data.edge_index, out.num_sampled_nodes,
                       out.num_sampled_edges)
        return data

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(rank={self.sampler.rank}, '
                f'world_size={self.sampler.world_size}, '
                f'num_neighbors={self.sampler.num_neighbors}, '
                f'batch_size={self.batches.batch_size})')


def prefetch_refusal(device: torch.device,
                     world_size: int) -> Optional[str]:
    r"""Why ``prefetch='thread'`` is refused on :obj:`device` at
    :obj:`world_size` ranks, or ``None``: across GPUs (NCCL, more than one
    rank). Its threads would issue NCCL collectives on their communicators
    while the training thread issues its own (DDP's all-reduce) on another,
    all on one GPU, in an order that differs between the ranks. NCCL's
    documentation rules this out: operations on independent communicators
    of one device must not be issued in parallel from several threads, and
    since NCCL kernels wait for their peers and any CUDA call may
    synchronise the device, a rank can wait on a collective whose peer waits
    on another ("Thread Safety", "Using multiple NCCL communicators
    concurrently"). Observed: a DDP training step with it did not complete
    on two H200s (2026-11-29). At world size 1 no collective waits for a
    peer; on the CPU gloo's collectives do not hold the device.
    ``prefetch=True`` (one ahead in the caller's thread) issues every
    collective in program order and is not refused."""
    if device.type != 'cuda' or world_size < 2:
        return None
    return (f"prefetch='thread' across GPUs ({world_size} NCCL ranks) would "
            f"issue the loader threads' NCCL collectives in parallel with "
            f"the training's on other communicators of the same GPU, which "
            f"NCCL documents as unsafe (it can deadlock: a DDP step with it "
            f"did not complete on two H200s); use prefetch=True, the "
            f"default on a GPU (the next batch made in this thread on a "
            f"side stream), or False (docs/multi_gpu.md)")


def _prefetch_mode(prefetch, device: torch.device, group,
                   owner: str):
    # The 'prefetch' argument checked; None decided by the device.
    if prefetch is not None and prefetch not in (False, True, 'thread'):
        raise ValueError(f"{owner}: 'prefetch' is None, False, True or "
                         f"'thread', got {prefetch!r}")
    if prefetch and group is not None:
        raise ValueError(f"{owner}: 'prefetch={prefetch!r}' makes process "
                         f"groups of the world's ranks; with a 'group' of "
                         f"your own, leave 'prefetch' unset")
    if prefetch is None:
        if device.type == 'cuda' and group is not None:
            # (the lanes' groups hold the world's ranks: new_group is a
            # collective of the world, which a sub-group's ranks alone
            # cannot make)
            warnings.warn(f"{owner}: with a 'group' of your own the batches "
                          f"are made when asked for, on the training "
                          f"stream, after the step enqueued before them "
                          f"(prefetch=True, the default on a GPU, needs the "
                          f"world as the group)", stacklevel=3)
        return device.type == 'cuda' and group is None
    return prefetch


def _batches_per_call(batches_per_call: Optional[int],
                      device: torch.device, prefetch, owner: str) -> int:
    # The 'batches_per_call' argument checked; None decided by the device
    # and the prefetch mode (8 on a GPU, where the host's fixed work per call
    # is the partitioned loader's time; the threads take one batch a call).
    if batches_per_call is None:
        return 8 if device.type == 'cuda' and prefetch != 'thread' else 1
    if isinstance(batches_per_call, bool) or \
            not isinstance(batches_per_call, int) or batches_per_call < 1:
        raise ValueError(f"{owner}: 'batches_per_call' must be a positive "
                         f"int, got {batches_per_call!r}")
    if batches_per_call > 1 and prefetch == 'thread':
        raise ValueError(f"{owner}: 'batches_per_call' > 1 is taken without "
                         f"prefetch='thread' (this version)")
    return batches_per_call


def _batches_of(make, sampler: DistNeighborSampler, items) -> Iterator:
    # (a background thread's batches, made with its lane)
    for positions, key, _ in items:
        yield make(sampler, positions, key)


# The process groups of the loaders' background threads, by (backend, the
# world's ranks): made by the first prefetching loader (collectively, as
# constructing a loader is) and shared by every later one, so that a
# training loop making a loader every epoch does not make communicators
# every epoch. One epoch at a time uses them: _LANE_THREADS holds the
# threads of the last one started.
_LANE_GROUPS: Dict[Tuple, List] = {}
_LANE_THREADS: Dict[Tuple, List] = {}


def _lane_groups(device: torch.device, count: int) -> Tuple:
    # (the key, `count` process groups of the world's ranks with the
    # default group's backend and timeout: a peer that dies ends a background
    # thread's exchange as it ends the loader's). Made by every rank, as
    # every rank makes the loader: new_group's own names (a counter; the
    # names of use_local_synchronization groups hash their ranks, so two
    # groups of the same ranks would share their store keys).
    ranks = tuple(range(dist.get_world_size()))
    backend = str(dist.get_backend())
    key = (backend, ranks)
    # (groups of a process group destroyed since are not reused)
    groups = _LANE_GROUPS[key] = [g for g in _LANE_GROUPS.get(key, [])
                                  if _registered(g)]
    while len(groups) < count:
        groups.append(dist.new_group(timeout=_timeout_of(device)))
    return key, groups[:count]


def _registered(group) -> bool:
    try:
        dist.get_process_group_ranks(group)
        return True
    except (KeyError, ValueError, RuntimeError):
        return False


def _timeout_of(device: torch.device):
    # The default group's timeout (init_process_group(timeout=...)); None
    # (torch's default) where this torch does not say it.
    pg = dist.distributed_c10d._get_default_group()
    try:
        return pg._get_backend(device).options._timeout
    except (AttributeError, RuntimeError):
        return None
