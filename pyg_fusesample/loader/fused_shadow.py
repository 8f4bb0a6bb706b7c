"""FusedShaDowKHopSampler: a drop-in for PyG's ShaDowKHopSampler.

PyG's sampler calls torch_sparse's ``ego_k_hop_sample_adj`` (CPU only): for
every root it samples a ``depth``-hop neighbourhood along *in-edges* (the rows
of ``adj_t``), keeps the sampled nodes as a set sorted by global id, and takes
every edge of the graph between two nodes of that set. Here the same happens
for a whole batch on the device the graph lives on:

1. ``fusesample::neighbor_sample`` with ``disjoint=True`` samples every root's
   own subtree (fan-out ``num_neighbors`` per hop, ``depth`` hops) in one call,
   over an in-edge CSC whose lists are sorted by source;
2. the pairs (root, node) are sorted by ``root * N + node``: every root's
   node set, ascending by global id, as PyG orders it;
3. :func:`grouped_induced_edges` takes the induced subgraph of every root's
   set at once -- vectorised torch ops, no loop over roots: a node's in-edge
   list is scanned (each source looked up in the sorted pairs) when it is
   shorter than the node's set, and otherwise every member of the set is
   binary-searched in it, so a hub in a small set costs the set's size, not
   the hub's degree. With large sets the ``induced_subgraph`` op first cuts
   every distinct node's list down to the batch's nodes, once.

All three run in one op, ``fusesample::shadow_subgraph`` (C++ over the
device's kernels), which also gathers the attributes' rows; iterating on a
GPU runs it on native threads that never take the GIL
(``fusesample.ShadowBatchPrefetcher``).
"""
import copy
from typing import List, Optional, Tuple

import torch
from torch import Tensor
from torch.utils.data import (BatchSampler, RandomSampler, Sampler,
                              SequentialSampler)
from torch_geometric.data import Batch, Data

from .. import _extension  # noqa: F401  (registers the ops)
from ..ops.rng_keys import draw_rng_seeds
from ..sampler.graph_store import CSCGraph
from ..sparse.edge_index_checks import check_edge_index
from ..sparse.walk_graph import WalkGraph
from .background import check_prefetch, prefetching
from .batch_assembly import fill
from .native_epoch import NativeEpoch
from .seeded_batches import resolve_generator
from .subgraph_common import (BatchIndex, check_device_kwargs, check_int,
                              warn_other_devices)

_ops = torch.ops.fusesample

# (Member, hub) pairs one pass of grouped_induced_edges materialises (each
# costs about 50 bytes of temporaries); larger passes are cut into chunks.
# (The scanned lists need no chunks: in_set_entries keeps only the hits.)
SCAN_BUDGET = 1 << 22
# A list longer than HUB_FACTOR times its node's set is binary-searched for
# the set's members instead of scanned: a search step costs about as much as
# a scanned entry's lookup, and a search takes log2(deg) steps.
HUB_FACTOR = 4
# From this many nodes per root on, FusedShaDowKHopSampler restricts the lists
# to the batch's nodes with the induced_subgraph op before the grouped pass.
UNION_MIN_SET = 64

# The class PyG's ``Batch(...)`` makes for batched ``Data`` (``DataBatch``).
# ``Batch(...)`` (and so ``DataBatch(...)``) goes through a metaclass that
# builds a resolver class and reads ``Data.__init__``'s signature on every
# call, about half of what the training thread spent assembling a prefetched
# batch (0.33 ms on an H100's host); ``type.__call__`` makes the same empty
# object without it.
_DATA_BATCH = type(Batch())


def _new_batch() -> Batch:
    return type.__call__(_DATA_BATCH)


def grouped_induced_edges(ptr: Tensor, nbr: Tensor, edge_id: Optional[Tensor],
                          node: Tensor, group: Tensor, key: Tensor,
                          num_nodes: int, parallel_edges: bool = True,
                          ordered: bool = True, budget: int = SCAN_BUDGET
                          ) -> Tuple[Tensor, Tensor, Tensor]:
    r"""The induced subgraphs of many node sets at once.

    Position :math:`i` holds node ``node[i]`` of set ``group[i]``; ``key =
    group * num_nodes + node`` must be sorted ascending and unique (so every
    set is sorted by node id and the sets follow each other). ``ptr`` /
    ``nbr`` are adjacency lists, each sorted ascending (a
    :class:`~pyg_fusesample.sparse.WalkGraph`'s CSR, or that of the reversed
    graph). For every position the entries of its node's list that lie in the
    same set are found, by whichever is cheaper for that position:

    * a scan of the list, each entry looked up in ``key`` (lists up to
      :data:`HUB_FACTOR` times the set's size), or
    * a binary search for every member of the set in the list (longer
      lists: hubs),

    so the work per position is about :math:`\min(\deg, c\,|set|)`
    (:data:`HUB_FACTOR`). One op, ``fusesample::grouped_induced_edges``
    (ATen and ``segment_search`` on the device of the inputs).

    Returns ``(nbr_pos, pos, edge)``, sorted by ``pos``, then list order: the
    position of the neighbour, the position of the node whose list holds the
    entry, and ``edge_id`` of the entry (its slot when ``None``). With in-edge
    lists ``nbr_pos`` is an edge's source and ``pos`` its target; with
    out-edge lists the other way round.

    Args:
        parallel_edges (bool): whether a list may hold a value twice
            (parallel edges; all of them come out). ``False`` saves the hub
            searches' second pass. (default: :obj:`True`)
        ordered (bool): ``False`` skips the final sort (the order is then
            the scanned positions', then the searched ones').
        budget (int): entries or pairs per pass; larger work runs in chunks.
    """
    return tuple(_ops.grouped_induced_edges(
        ptr, nbr, edge_id, node, group, key, int(num_nodes),
        bool(parallel_edges), bool(ordered), HUB_FACTOR, int(budget)))



class _KeyedIndices(list):
    # One batch of dataset positions and its RNG key (a list, so that
    # DataLoader's fetcher and worker pickling treat it as the batch it is).
    key: int = 0


class _KeyedBatchSampler(Sampler):
    # Wraps a batch sampler: all the epoch's RNG keys are drawn in the main
    # process when an epoch starts, so a seeded run gives the same batches
    # whatever num_workers is.
    def __init__(self, batch_sampler, generator: Optional[torch.Generator]):
        self.batch_sampler = batch_sampler
        self.generator = generator

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self):
        keys = iter(draw_rng_seeds(len(self.batch_sampler), self.generator))
        for indices in self.batch_sampler:
            batch = _KeyedIndices(indices)
            batch.key = next(keys, None)
            if batch.key is None:  # a sampler longer than its len()
                batch.key = draw_rng_seeds(1, self.generator)[0]
            yield batch


class _Roots(torch.utils.data.Dataset):
    # The roots, fetched a batch at a time (__getitems__) as one tensor.
    def __init__(self, node_idx: Tensor):
        self.node_idx = node_idx

    def __len__(self) -> int:
        return self.node_idx.numel()

    def __getitem__(self, index):
        return int(self.node_idx[index])

    def __getitems__(self, indices):
        roots = self.node_idx.index_select(
            0, torch.as_tensor(list(indices), dtype=torch.long))
        return roots, getattr(indices, 'key', None)


class _Attributes:
    # How a batch takes each attribute of `data`, in data's order: PyG's
    # rule (``y`` by the roots, node attributes by the nodes, edge
    # attributes by the edges, the rest as it is); the rows of those on the
    # graph's device are gathered by the op (on the prefetch threads), the
    # others here (BatchIndex: their ids copied to their device once).
    SKIP = ('edge_index', 'adj_t', 'num_nodes', 'batch', 'ptr')

    def __init__(self, data: Data, device: torch.device):
        num_nodes, num_edges = data.num_nodes, data.num_edges
        self.items = []  # (key, value, kind or None)
        for key, value in data:
            if key in self.SKIP:
                continue
            kind = None
            if isinstance(value, Tensor) and value.dim() > 0:
                if key == 'y' and value.size(0) == num_nodes:
                    kind = 'root'
                elif value.size(0) == num_nodes:
                    kind = 'node'
                elif value.size(0) == num_edges:
                    kind = 'edge'
            self.items.append((key, value, kind))
        self.device = device
        here = [(v, k) for _, v, k in self.items
                if k is not None and v.device == device]
        self.node, self.root, self.edge = (
            [v for v, k in here if k == kind]
            for kind in ('node', 'root', 'edge'))

    def attributes(self, rows: List[Tensor], index: BatchIndex):
        # rows: the op's gathers, node then root then edge attributes.
        by_kind = {'node': iter(rows[:len(self.node)]),
                   'root': iter(rows[len(self.node):len(self.node)
                                     + len(self.root)]),
                   'edge': iter(rows[len(self.node) + len(self.root):])}
        for key, value, kind in self.items:
            if kind is None:
                yield key, value
            elif value.device == self.device:
                yield key, next(by_kind[kind])
            else:
                yield key, index.take(value, kind)


class _NativeIterator(NativeEpoch):
    # One epoch from fusesample.ShadowBatchPrefetcher (kernels/loader/
    # shadow_batch_prefetcher.cpp), which runs fusesample::shadow_subgraph
    # per batch. Two Python threads had kept the step at 1.38-1.50x its
    # pre-sampled time on products-like (H100): the Python of a batch's
    # collate took turns with the training step on the GIL.
    def __init__(self, loader: 'FusedShaDowKHopSampler'):
        self.draw_base_seed(loader)
        items = list(loader.batch_sampler)
        device = loader.device
        positions = torch.as_tensor([i for item in items for i in item],
                                    dtype=torch.long)
        roots = self.to_device(loader.node_idx.index_select(0, positions),
                               device)
        offsets = [0]
        for item in items:
            offsets.append(offsets[-1] + len(item))
        plan = _Attributes(loader.data, device)
        g = loader.graph
        prefetcher = torch.classes.fusesample.ShadowBatchPrefetcher(
            g.colptr, g.row, g.edge_id, roots, offsets,
            [item.key for item in items], loader.depth, loader.num_neighbors,
            loader.replace, loader._parallel_edges, loader.is_sparse_tensor,
            UNION_MIN_SET, HUB_FACTOR, SCAN_BUDGET, plan.node, plan.root,
            plan.edge, self.depth, self.thread_count(device))
        super().__init__(prefetcher, len(items), lambda tensors: loader._batch(
            tensors[:7], tensors[7:], plan))


def _has_parallel_edges(graph: CSCGraph) -> bool:
    # Whether a (sorted) list holds a value twice.
    row, ptr = graph.row, graph.colptr
    if row.numel() < 2:
        return False
    same = row[1:] == row[:-1]
    starts = ptr[1:-1]
    starts = starts[(starts > 0) & (starts < row.numel())]
    same[starts - 1] = False  # slot e + 1 begins another list
    return bool(same.any())


class FusedShaDowKHopSampler(torch.utils.data.DataLoader):
    r"""The ShaDow :math:`k`-hop sampler from the `"Decoupling the Depth and
    Scope of Graph Neural Networks" <https://arxiv.org/abs/2201.07858>`_
    paper, a drop-in for :class:`torch_geometric.loader.ShaDowKHopSampler`
    that samples on the device the graph lives on (CPU or GPU) with the
    ``fusesample`` ops, without torch_sparse.

    For every root node of a mini-batch it samples a :obj:`depth`-hop
    neighbourhood along in-edges (:obj:`num_neighbors` per node and hop) and
    returns the subgraph that this node set induces, with every root's
    subgraph a separate graph of a :class:`~torch_geometric.data.Batch`:

    * ``batch``, ``ptr``: the graph of every node (nodes of a graph are
      sorted by global id, as PyG sorts them);
    * ``root_n_id``: the position of every root in the batch;
    * ``edge_index`` (local ids, sorted by source then target), or ``adj_t``
      when the graph was given as ``data.adj_t``;
    * every node attribute sliced by the sampled nodes, ``y`` by the roots
      only, every edge attribute by the induced edges; other attributes as
      they are.

    All roots of a batch are sampled in one ``fusesample::neighbor_sample``
    call (``disjoint=True``) and their induced subgraphs are found together
    (:func:`grouped_induced_edges`). The batches are a pure function of the
    roots and one RNG key per batch, drawn from :obj:`generator` (or
    PyTorch's global RNG, so ``torch.manual_seed`` makes runs repeatable)
    in the main process when an epoch starts: equal on the CPU and the GPU,
    and whatever ``num_workers`` is.

    Args:
        data (torch_geometric.data.Data): The graph: ``edge_index`` (on the
            CPU or a GPU; sampling runs there) or a torch_sparse
            ``adj_t``.
        depth (int): The depth/number of hops of the localized subgraph.
        num_neighbors (int): The number of neighbors to sample for each node
            in each hop; ``-1`` takes all of them.
        node_idx (LongTensor or BoolTensor, optional): The nodes that should
            be considered for creating mini-batches. If set to :obj:`None`,
            all nodes will be considered.
        replace (bool, optional): If set to :obj:`True`, will sample
            neighbors with replacement. (default: :obj:`False`)
        **kwargs (optional): Additional arguments of
            :class:`torch.utils.data.DataLoader`, such as :obj:`batch_size`,
            :obj:`shuffle`, :obj:`num_workers` or :obj:`generator` (also the
            source of the sampling keys), :obj:`seed` (an int: a fresh
            generator seeded with it) and :obj:`prefetch` (a bool: assemble
            the batches on native background threads that never take the
            GIL -- two on a GPU, each on a CUDA stream of its own, one on
            the CPU -- up to two ahead each, the same batches; needs
            ``num_workers=0``; default :obj:`None`: on when the graph is on
            a GPU and ``num_workers=0``).

    Differences from PyG's sampler (see ``docs/subgraph_samplers.md``): a
    node reached twice within one root's sample is expanded once (PyG
    expands every copy, which only matters when sampling is random), with
    :obj:`replace` every node draws :obj:`num_neighbors` times (PyG takes all
    neighbours of a node with fewer), and :obj:`num_neighbors` ``= -1``
    means all neighbours (PyG's C++ then samples none).
    """
    def __init__(self, data: Data, depth: int, num_neighbors: int,
                 node_idx: Optional[Tensor] = None, replace: bool = False,
                 **kwargs):
        check_int('depth', depth, 0)
        check_int('num_neighbors', num_neighbors, -1)
        if not isinstance(data, Data):
            raise TypeError(f"FusedShaDowKHopSampler samples a 'Data' "
                            f"object, got {type(data).__name__}")
        kwargs.pop('dataset', None)  # as PyG's loaders (PyTorch Lightning)
        kwargs.pop('collate_fn', None)
        generator = resolve_generator(kwargs.pop('seed', None),
                                      kwargs.pop('generator', None))
        self.prefetch = check_prefetch(kwargs.pop('prefetch', None),
                                       kwargs.get('num_workers', 0),
                                       type(self).__name__)

        self.data = copy.copy(data)
        self.depth = depth
        self.num_neighbors = num_neighbors
        self.replace = replace
        self.generator = generator

        edge_index = data.edge_index if 'edge_index' in data else None
        self.is_sparse_tensor = edge_index is None
        if edge_index is not None:
            num_nodes = data.num_nodes
            check_edge_index(edge_index, num_nodes, type(self).__name__)
            # The in-edge CSC with every target's sources sorted (the
            # induced-subgraph pass binary-searches hubs' lists); edge ids
            # are positions in edge_index. Sampling reads the same CSC.
            csr = WalkGraph.from_edge_index(edge_index.flip(0), num_nodes)
            self.graph = CSCGraph(csr.rowptr, csr.col, csr.edge_id,
                                  int(num_nodes))
            self._adj_type = self._adj_value = None
        else:
            adj_t = data.adj_t if 'adj_t' in data else None
            if adj_t is None or not hasattr(adj_t, 'csr'):
                raise ValueError("'data' needs an 'edge_index' (or a "
                                 "torch_sparse SparseTensor 'adj_t')")
            rowptr, col, value = adj_t.csr()
            num_nodes = adj_t.sparse_size(0)
            if adj_t.sparse_size(1) != num_nodes:
                raise ValueError(f"'adj_t' must be square, got sizes "
                                 f"{tuple(adj_t.sizes())}")
            # adj_t's rows are targets: its CSR is the in-edge CSC (sorted,
            # as a SparseTensor is), and CSR slots are the edge ids (PyG's
            # e_id for adj_t graphs).
            self.graph = CSCGraph(rowptr.long(), col, None, int(num_nodes))
            self._adj_type, self._adj_value = type(adj_t), value
        self.N = self.graph.num_nodes
        device = self.graph.device
        self._parallel_edges = _has_parallel_edges(self.graph)

        if node_idx is None:
            node_idx = torch.arange(self.N)
        if not isinstance(node_idx, Tensor) or node_idx.dim() != 1:
            raise ValueError("'node_idx' must be a 1-D tensor of node "
                             "indices or a boolean mask")
        if node_idx.dtype == torch.bool:
            if node_idx.numel() != self.N:
                raise ValueError(f"'node_idx' is a mask of length "
                                 f"{node_idx.numel()}, but the graph has "
                                 f"{self.N} nodes")
            node_idx = node_idx.nonzero(as_tuple=False).view(-1)
        elif node_idx.dtype.is_floating_point or node_idx.is_complex():
            raise ValueError(f"'node_idx' must hold integer node indices or "
                             f"be a boolean mask, got {node_idx.dtype}")
        node_idx = node_idx.long().cpu()
        if node_idx.numel() and (int(node_idx.min()) < 0
                                 or int(node_idx.max()) >= self.N):
            raise ValueError(f"'node_idx' holds ids outside [0, {self.N})")
        self.node_idx = node_idx

        check_device_kwargs(kwargs, device, type(self).__name__)
        warn_other_devices(data, device, type(self).__name__)

        batch_size = kwargs.pop('batch_size', 1)
        shuffle = kwargs.pop('shuffle', None)
        sampler = kwargs.pop('sampler', None)
        batch_sampler = kwargs.pop('batch_sampler', None)
        drop_last = kwargs.pop('drop_last', False)
        dataset = _Roots(node_idx)
        if batch_sampler is None:
            if isinstance(batch_size, bool) or not isinstance(
                    batch_size, int) or batch_size <= 0:
                raise ValueError(f"'batch_size' must be a positive int, got "
                                 f"{batch_size!r}")
            if sampler is not None and shuffle:
                raise ValueError("'sampler' option is mutually exclusive "
                                 "with 'shuffle'")
            if sampler is None:
                sampler = (RandomSampler(dataset, generator=generator)
                           if shuffle else SequentialSampler(dataset))
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("'batch_sampler' option is mutually exclusive "
                             "with 'batch_size', 'shuffle', 'sampler', and "
                             "'drop_last'")
        else:
            batch_size = None
        super().__init__(dataset,
                         batch_sampler=_KeyedBatchSampler(batch_sampler,
                                                          generator),
                         collate_fn=self._collate, generator=generator,
                         **kwargs)
        # DataLoader reports batch_size=None with a batch_sampler; expose the
        # real one as PyG's loader does.
        object.__setattr__(self, 'batch_size', batch_size)
        object.__setattr__(self, 'drop_last', drop_last)

    @property
    def device(self) -> torch.device:
        r"""Where the graph lives and sampling runs."""
        return self.graph.device

    def __iter__(self):
        if not prefetching(self.prefetch, self.device):
            return super().__iter__()
        return _NativeIterator(self)

    def _collate(self, item) -> Batch:
        if isinstance(item, tuple) and len(item) == 2:
            roots, key = item
        else:  # a plain list of node ids (a custom fetcher)
            roots, key = torch.as_tensor(item, dtype=torch.long), None
        if key is None:
            key = draw_rng_seeds(1, self.generator if torch.utils.data
                                 .get_worker_info() is None else None)[0]
        return self.sample(roots, rng_seed=key)

    def sample(self, roots: Tensor, rng_seed: Optional[int] = None) -> Batch:
        r"""The mini-batch of :obj:`roots` (what iterating yields), sampled
        with RNG key :obj:`rng_seed` (default: drawn from the generator)."""
        if rng_seed is None:
            rng_seed = draw_rng_seeds(1, self.generator)[0]
        N, device = self.N, self.device
        roots = torch.as_tensor(roots).to(device=device, dtype=torch.long)
        if roots.dim() != 1:
            raise ValueError("the roots must be a 1-D tensor")
        B = roots.numel()
        if (self.depth == 0 and B > 0) and (int(roots.min()) < 0
                                             or int(roots.max()) >= N):
            raise ValueError(f"root ids outside [0, {N})")
        plan = _Attributes(self.data, device)
        out = self._subgraph(roots, int(rng_seed), plan)
        return self._batch(out[:7], list(out[7]) + list(out[8]) + list(out[9]),
                           plan)

    def _subgraph(self, roots: Tensor, rng_seed: int, plan: '_Attributes'):
        g = self.graph
        return _ops.shadow_subgraph(
            g.colptr, g.row, g.edge_id, roots, self.depth, self.num_neighbors,
            self.replace, rng_seed, self._parallel_edges,
            self.is_sparse_tensor, UNION_MIN_SET, HUB_FACTOR, SCAN_BUDGET,
            plan.node, plan.root, plan.edge)

    def _batch(self, out: List[Tensor], rows: List[Tensor],
               plan: '_Attributes') -> Batch:
        # A Batch from fusesample::shadow_subgraph's seven tensors and its
        # attribute rows (node, root, edge lists flattened).
        # The storage is filled in one update (batch_assembly.fill): PyG's
        # attribute setting costs 15-20 us a key on a GPU host, which the
        # training thread pays for every prefetched batch.
        n_id, group, ptr, root_n_id, src, dst, e_id = out
        n = n_id.numel()
        values = {'batch': group, 'ptr': ptr, 'root_n_id': root_n_id}
        if self.is_sparse_tensor:
            value = self._adj_value
            values['adj_t'] = self._adj_type(
                row=dst, col=src,
                value=None if value is None else value[e_id],
                sparse_sizes=(n, n), is_sorted=True, trust_data=True)
        else:
            values['edge_index'] = torch.stack([src, dst], dim=0)
        index = BatchIndex(n_id, e_id,
                           lambda: n_id.index_select(0, root_n_id))
        values.update(plan.attributes(rows, index))
        batch = _new_batch()
        fill(batch._store._mapping, values)
        return batch

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(depth={self.depth}, '
                f'num_neighbors={self.num_neighbors}, '
                f'replace={self.replace}, num_roots={self.node_idx.numel()}, '
                f'batch_size={self.batch_size}, device={self.device})')
