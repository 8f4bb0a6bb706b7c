"""FusedGraphSAINTRandomWalkSampler: a drop-in for PyG's
GraphSAINTRandomWalkSampler.

A mini-batch is the subgraph induced by the nodes of :obj:`batch_size` random
walks of :obj:`walk_length` steps from uniformly drawn start nodes. PyG draws
the walks with torch_sparse (CPU only) and cuts the subgraph with
``SparseTensor.saint_subgraph``; here both run on the device the graph lives
on: ``fusesample::random_walk`` over the graph's out-edge CSR
(:class:`~pyg_fusesample.sparse.WalkGraph`, rows sorted by target), then
``fusesample::induced_subgraph`` on the unique walk nodes over the same CSR
(read as the in-edge CSC of the reversed graph), which yields the edges
grouped by source with targets ascending -- the order ``saint_subgraph``
gives -- with no extra sort and no second copy of the graph.

The normalisation statistics (``sample_coverage > 0``) are estimated as PyG
estimates them, with the walks of many samples drawn in one call and their
node sets deduplicated by one sort of ``sample * N + node``; each sample's
edges come from the same ``induced_subgraph`` op as the batches'.
"""
import os.path as osp
from typing import Optional, Tuple

import torch
from torch import Tensor
from torch.utils.data import Sampler
from torch_geometric.data import Data

from ..files import replaced_atomically
from ..ops import induced_subgraph, random_walk
from ..ops.rng_keys import draw_rng_seeds
from ..sparse.edge_index_checks import check_edge_index
from ..sparse.walk_graph import WalkGraph
from .background import check_prefetch, prefetched, prefetching
from .seeded_batches import resolve_generator
from .subgraph_common import (BatchIndex, check_device_kwargs, check_int,
                              warn_other_devices)

# Walk nodes per chunk of the normalisation pass.
NORM_CHUNK_NODES = 1 << 20


class _StepKeys(Sampler):
    # One (start key, walk key) pair per step, all drawn in the main process
    # when an epoch starts: a seeded run gives the same batches whatever
    # num_workers is, and the same on the CPU and a GPU.
    def __init__(self, num_steps: int, generator: Optional[torch.Generator]):
        self.num_steps = num_steps
        self.generator = generator

    def __len__(self) -> int:
        return self.num_steps

    def __iter__(self):
        keys = draw_rng_seeds(2 * self.num_steps, self.generator)
        return iter(zip(keys[0::2], keys[1::2]))


class FusedGraphSAINTRandomWalkSampler(torch.utils.data.DataLoader):
    r"""The GraphSAINT random walk sampler from the `"GraphSAINT: Graph
    Sampling Based Inductive Learning Method"
    <https://arxiv.org/abs/1907.04931>`_ paper, a drop-in for
    :class:`torch_geometric.loader.GraphSAINTRandomWalkSampler` that samples
    on the device the graph lives on (CPU or GPU) with the ``fusesample``
    ops, without torch_sparse or torch_cluster.

    Every mini-batch starts :obj:`batch_size` random walks of
    :obj:`walk_length` steps (along ``edge_index[0] -> edge_index[1]``) at
    uniformly drawn nodes and yields the subgraph that the walks' nodes
    induce, as PyG yields it: a data object of ``data``'s class with
    ``num_nodes``, local ``edge_index`` (sorted by source, then target), every
    node attribute sliced by the (sorted, unique) sampled nodes, every edge
    attribute by the induced edges, other attributes as they are, and, when
    :obj:`sample_coverage` :math:`> 0`, the normalisation coefficients
    ``node_norm`` and ``edge_norm``.

    A walk at a node without out-edges stays there (torch_cluster's
    convention). Each step's start nodes and walks are a pure function of a
    pair of RNG keys drawn from :obj:`generator` (or PyTorch's global RNG, so
    ``torch.manual_seed`` makes runs repeatable) in the main process when an
    epoch starts: batches are equal on the CPU and the GPU and whatever
    ``num_workers`` is.

    Args:
        data (torch_geometric.data.Data): The graph data object
            (``edge_index`` on the CPU or a GPU; sampling runs there).
        batch_size (int): The number of random walks (start nodes) per
            mini-batch.
        walk_length (int): The length of each random walk (a walk visits
            :obj:`walk_length` :math:`+ 1` nodes).
        num_steps (int, optional): The number of iterations per epoch.
            (default: :obj:`1`)
        sample_coverage (int): How many samples per node should be used to
            compute normalization statistics. (default: :obj:`0`)
        save_dir (str, optional): If set, will save normalization statistics
            to the :obj:`save_dir` directory for faster re-use.
            (default: :obj:`None`)
        log (bool, optional): If set to :obj:`False`, will not log any
            pre-processing progress. (default: :obj:`True`)
        **kwargs (optional): Additional arguments of
            :class:`torch.utils.data.DataLoader`, such as :obj:`num_workers`
            or :obj:`generator` (the source of the sampling keys),
            :obj:`seed` (an int: a fresh generator seeded with it) and
            :obj:`prefetch` (a bool: assemble the batches on a background
            thread, up to two ahead, the same batches; needs
            ``num_workers=0``; default :obj:`None`: on when the graph is on
            a GPU and ``num_workers=0``).
    """
    def __init__(self, data: Data, batch_size: int, walk_length: int,
                 num_steps: int = 1, sample_coverage: int = 0,
                 save_dir: Optional[str] = None, log: bool = True, **kwargs):
        # Remove for PyTorch Lightning (as PyG does); the steps are random
        # samples, so there is nothing to shuffle.
        kwargs.pop('dataset', None)
        kwargs.pop('collate_fn', None)
        kwargs.pop('shuffle', None)
        for key in ('sampler', 'batch_sampler'):
            if kwargs.pop(key, None) is not None:
                raise ValueError(f"{type(self).__name__} does not take "
                                 f"'{key}': every step is a fresh sample")
        generator = resolve_generator(kwargs.pop('seed', None),
                                      kwargs.pop('generator', None))
        self.prefetch = check_prefetch(kwargs.pop('prefetch', None),
                                       kwargs.get('num_workers', 0),
                                       type(self).__name__)
        check_int('batch_size', batch_size, 1)
        check_int('walk_length', walk_length, 0)
        check_int('num_steps', num_steps, 1)
        check_int('sample_coverage', sample_coverage, 0)
        if not isinstance(data, Data):
            raise TypeError(f"{type(self).__name__} samples a 'Data' object, "
                            f"got {type(data).__name__}")
        edge_index = data.edge_index if 'edge_index' in data else None
        if not isinstance(edge_index, Tensor):
            raise ValueError("'data' needs an 'edge_index' tensor")
        for key in ('node_norm', 'edge_norm'):
            if key in data:
                raise ValueError(f"'data' already has a '{key}' attribute, "
                                 f"which the sampler would overwrite")

        self.num_steps = num_steps
        self._batch_size = batch_size
        self.walk_length = walk_length
        self.sample_coverage = sample_coverage
        self.save_dir = save_dir
        self.log = log
        self.generator = generator

        self.N = N = data.num_nodes
        self.E = data.num_edges
        if N is None or N <= 0:
            raise ValueError("the graph has no nodes to start walks from")
        check_edge_index(edge_index, N, type(self).__name__)
        self.graph = WalkGraph.from_edge_index(edge_index, N)
        self.data = data
        device = self.graph.device
        check_device_kwargs(kwargs, device, type(self).__name__)
        warn_other_devices(data, device, type(self).__name__)

        super().__init__(self, batch_size=1,
                         sampler=_StepKeys(num_steps, generator),
                         collate_fn=self._collate, generator=generator,
                         **kwargs)

        if self.sample_coverage > 0:
            path = osp.join(save_dir or '', self._filename)
            if save_dir is not None and osp.exists(path):
                node_norm, edge_norm = self._load_norm(path)
                self.node_norm = node_norm.to(device)
                self.edge_norm = edge_norm.to(device)
            else:
                self.node_norm, self.edge_norm = self._compute_norm()
                if save_dir is not None:
                    self._save_norm(path)

    def _load_norm(self, path: str) -> Tuple[Tensor, Tensor]:
        # The (node_norm, edge_norm) pair a sampler saved, refused unless it
        # fits this graph: the file name holds walk_length and
        # sample_coverage only, so a save_dir shared by two graphs would
        # hand one the other's norms.
        owner = f"{type(self).__name__}: the norm file '{path}'"
        fix = ('delete it to recompute the norms, or pass another '
               "'save_dir' for this graph")
        try:
            norms = torch.load(path, map_location='cpu', weights_only=True)
        except Exception as e:  # RuntimeError, UnpicklingError, EOFError
            raise ValueError(f"{owner} cannot be read ({type(e).__name__}: "
                             f"{e}); it is truncated or not a norm file: "
                             f"{fix}") from e
        if not (isinstance(norms, (tuple, list)) and len(norms) == 2
                and all(isinstance(t, Tensor) for t in norms)):
            raise ValueError(f"{owner} holds a {type(norms).__name__}, not "
                             f"the (node_norm, edge_norm) pair of tensors "
                             f"this sampler saves: {fix}")
        for name, t, size in (('node_norm', norms[0], self.N),
                              ('edge_norm', norms[1], self.E)):
            if not t.is_floating_point() or tuple(t.shape) != (size, ):
                raise ValueError(f"{owner} holds '{name}' of shape "
                                 f"{tuple(t.shape)} ({t.dtype}); this graph "
                                 f"needs a float tensor of shape [{size}]: "
                                 f"{fix}")
            if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
                raise ValueError(f"{owner} holds negative, NaN or infinite "
                                 f"values in '{name}': {fix}")
        return norms[0], norms[1]

    def _save_norm(self, path: str):
        # Atomically: a run killed while writing leaves no half a file.
        with replaced_atomically(path) as tmp:
            torch.save((self.node_norm.cpu(), self.edge_norm.cpu()), tmp)

    @property
    def _filename(self):
        return (f'{self.__class__.__name__.lower()}_{self.walk_length}_'
                f'{self.sample_coverage}.pt')

    @property
    def device(self) -> torch.device:
        r"""Where the graph lives and sampling runs."""
        return self.graph.device

    def __len__(self):
        return self.num_steps

    def __iter__(self):
        if not prefetching(self.prefetch, self.device):
            return super().__iter__()
        return prefetched(self, lambda: list(self.sampler),
                          lambda k: self._collate([self[k]]), self.device)

    def _walk_nodes(self, num_walks: int, keys: Tuple[int, int]) -> Tensor:
        # [num_walks, walk_length + 1] walks from uniform start nodes. The
        # starts come from a CPU generator seeded with the first key (equal
        # on every device), the walks from the op's RNG under the second.
        start_key, walk_key = keys
        start = torch.randint(0, self.N, (num_walks, ),
                              generator=torch.Generator().manual_seed(
                                  int(start_key)))
        start = start.to(self.device)
        if self.walk_length == 0:
            return start.view(-1, 1)
        return random_walk(self.graph, start, self.walk_length,
                           rng_seed=int(walk_key), check_start=False)

    def __getitem__(self, keys: Tuple[int, int]):
        node_idx = self._walk_nodes(self._batch_size, keys).view(-1).unique()
        g = self.graph
        # The out-edge CSR read as the CSC of the reversed graph: the op's
        # "sources" are our targets and its "targets" our sources.
        dst, src, edge_idx = induced_subgraph(g.rowptr, g.col, g.edge_id,
                                              node_idx)
        return node_idx, torch.stack([src, dst], dim=0), edge_idx

    def _collate(self, data_list):
        assert len(data_list) == 1
        node_idx, edge_index, edge_idx = data_list[0]

        data = self.data.__class__()
        data.num_nodes = node_idx.size(0)
        data.edge_index = edge_index

        index = BatchIndex(node_idx, edge_idx, node_idx)
        for key, item in self.data:
            if key in ['edge_index', 'num_nodes']:
                continue
            if isinstance(item, Tensor) and item.dim() > 0 \
                    and item.size(0) == self.N:
                data[key] = index.take(item, 'node')
            elif isinstance(item, Tensor) and item.dim() > 0 \
                    and item.size(0) == self.E:
                data[key] = index.take(item, 'edge')
            else:
                data[key] = item

        if self.sample_coverage > 0:
            data.node_norm = self.node_norm[node_idx]
            data.edge_norm = self.edge_norm[edge_idx]

        return data

    def _compute_norm(self) -> Tuple[Tensor, Tensor]:
        # PyG's estimator: rounds of num_steps samples until the samples hold
        # N * sample_coverage nodes in all; C_v counts the samples holding
        # node v, C_e those holding edge e, and
        #   node_norm[v] = num_samples / C_v / N   (C_v = 0 counts as 0.1),
        #   edge_norm[e] = C_{source(e)} / C_e     (clamped to [0, 1e4];
        #                                           0 / 0 gives 0.1).
        # Many samples are taken per call here (see the module docstring).
        N, E, device, g = self.N, self.E, self.device, self.graph
        node_count = torch.zeros(N, dtype=torch.long, device=device)
        edge_count = torch.zeros(E, dtype=torch.long, device=device)
        walk_nodes = self._batch_size * (self.walk_length + 1)
        per_chunk = max(1, NORM_CHUNK_NODES // walk_nodes)

        pbar = None
        if self.log:  # pragma: no cover
            from tqdm import tqdm
            pbar = tqdm(total=N * self.sample_coverage)
            pbar.set_description('Compute GraphSAINT normalization')

        num_samples = total_sampled_nodes = 0
        while total_sampled_nodes < N * self.sample_coverage:
            done = 0
            while done < self.num_steps:
                count = min(per_chunk, self.num_steps - done)
                done += count
                walks = self._walk_nodes(count * self._batch_size,
                                         draw_rng_seeds(2, self.generator))
                sample = torch.arange(count, device=device).repeat_interleave(
                    walk_nodes)
                # Every sample's unique nodes, ascending, sample after sample.
                key = torch.unique(sample * N + walks.view(-1))
                node = key - torch.div(key, N, rounding_mode='floor') * N
                node_count.index_add_(0, node, torch.ones_like(node))
                bounds = torch.searchsorted(
                    key, torch.arange(count + 1, device=device) * N).tolist()
                edges = [induced_subgraph(g.rowptr, g.col, g.edge_id,
                                          node[lo:hi])[2]
                         for lo, hi in zip(bounds[:-1], bounds[1:])]
                edge = torch.cat(edges)
                edge_count.index_add_(0, edge, torch.ones_like(edge))
                total_sampled_nodes += key.numel()
                if pbar is not None:  # pragma: no cover
                    pbar.update(key.numel())
            num_samples += self.num_steps

        if pbar is not None:  # pragma: no cover
            pbar.close()

        node_count = node_count.float()
        edge_count = edge_count.float()
        row = self.data.edge_index[0].to(device=device, dtype=torch.long)
        t = node_count[row]
        edge_norm = (t / edge_count).clamp_(0, 1e4)
        edge_norm[torch.isnan(edge_norm)] = 0.1

        node_count[node_count == 0] = 0.1
        # On CUDA torch divides by a Python scalar as a product with its
        # reciprocal (on the CPU it divides): a 0-dim tensor on the device
        # keeps the division, so CPU and CUDA give the same bits.
        node_norm = num_samples / node_count / torch.tensor(
            float(N), device=device)
        return node_norm, edge_norm

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(batch_size={self._batch_size}, '
                f'walk_length={self.walk_length}, '
                f'num_steps={self.num_steps}, '
                f'sample_coverage={self.sample_coverage}, '
                f'device={self.device})')
