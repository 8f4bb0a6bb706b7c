"""FusedNode2Vec: PyG's ``Node2Vec`` with its walks on
:func:`pyg_fusesample.ops.random_walk` (CPU or GPU, no pyg-lib)."""
import math
import numbers
from typing import List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch.nn import Embedding
from torch.utils.data import DataLoader, get_worker_info
from torch_geometric.index import index2ptr
from torch_geometric.nn import Node2Vec
from torch_geometric.utils import sort_edge_index

from ..ops.rng_keys import draw_rng_seeds
from ..ops.skipgram import skipgram_loss
from ..ops.walk import random_walk
from ..sparse.edge_index_checks import check_edge_index
from ..sparse.walk_graph import WalkGraph


class FusedNode2Vec(Node2Vec):
    r"""The Node2Vec model from the
    `"node2vec: Scalable Feature Learning for Networks"
    <https://arxiv.org/abs/1607.00653>`_ paper where random walks of
    length :obj:`walk_length` are sampled in a given graph, and node
    embeddings are learned via negative sampling optimization -- a drop-in
    for :class:`torch_geometric.nn.Node2Vec` whose walks come from
    :func:`pyg_fusesample.ops.random_walk`.

    A walk at :math:`v` that came from :math:`t` takes the edge
    :math:`v \to x` with probability proportional to

    .. math::
        \alpha_{pq}(t, x) = \begin{cases} 1/p & \text{if } x = t \\
        1 & \text{if } t \to x \text{ is an edge} \\
        1/q & \text{otherwise,}\end{cases}

    (its first step is uniform). Every window of :obj:`context_size`
    consecutive nodes of a walk is a positive example; the loss is

    .. math::
        \mathcal{L} = -\log \sigma(\mathbf{z}_u^{\top} \mathbf{z}_v)
        - \log\left(1 - \sigma(\mathbf{z}_u^{\top} \mathbf{z}_n)\right)

    averaged over the pairs :math:`(u, v)` of the positive windows and
    :math:`(u, n)` of as many random (negative) windows per positive one as
    :obj:`num_negative_samples` says.

    What differs from PyG's ``Node2Vec``:

    * nothing in behaviour: the same arguments, attributes (``rowptr``,
      ``col``, ``walk_length`` stored as :obj:`walk_length` - 1, ...),
      methods, state dict and loss, and the same walk distribution
      (a walk stays in place at a node without out-edges, as in
      torch_cluster);
    * no pyg-lib or torch_cluster is needed: walks run on
      ``torch.ops.fusesample.random_walk`` (C++ on the CPU, a CUDA kernel on
      a GPU);
    * walks run on the device the model is on: after
      ``model.to('cuda')``, :meth:`pos_sample` and :meth:`sample` walk on the
      GPU and return tensors there (PyG walks on the CPU whatever the
      model's device). In a :class:`~torch.utils.data.DataLoader` worker
      process (``model.loader(num_workers > 0)``), where CUDA cannot be used,
      the walks run on the CPU copy of the graph instead; use
      ``num_workers=0`` to walk on the GPU;
    * :meth:`loss` is PyG's loss computed by
      :func:`pyg_fusesample.ops.skipgram_loss` on the embeddings of the
      windows' distinct nodes: the same value and gradient up to float
      rounding, without PyG's copy of an embedding row per pair, and a
      gradient (sparse with :obj:`sparse`) of one row per distinct node,
      which ``SparseAdam`` no longer has to sort and sum (it costs one host
      synchronisation, for the number of distinct nodes);
    * :obj:`generator` / :obj:`seed` make the walks and negative samples
      repeatable (with ``num_workers=0``: every loader worker gets a copy of
      the generator in the same state);
    * invalid arguments raise :class:`ValueError` (PyG asserts
      :obj:`walk_length` >= :obj:`context_size` and checks nothing else);
    * TorchScript (``torch.jit.script``) is not supported.

    .. note::

        For an example of using FusedNode2Vec, see `examples/node2vec.py`
        and `docs/walks.md`.

    Args:
        edge_index (torch.Tensor): The edge indices (walks go from
            ``edge_index[0]`` to ``edge_index[1]``).
        embedding_dim (int): The size of each embedding vector.
        walk_length (int): The walk length (nodes per walk, the start
            included).
        context_size (int): The actual context size which is considered for
            positive samples. This parameter increases the effective sampling
            rate by reusing samples across different source nodes.
        walks_per_node (int, optional): The number of walks to sample for each
            node. (default: :obj:`1`)
        p (float, optional): Likelihood of immediately revisiting a node in the
            walk. (default: :obj:`1`)
        q (float, optional): Control parameter to interpolate between
            breadth-first strategy and depth-first strategy (default: :obj:`1`)
        num_negative_samples (int, optional): The number of negative samples to
            use for each positive sample. (default: :obj:`1`)
        num_nodes (int, optional): The number of nodes. (default: :obj:`None`)
        sparse (bool, optional): If set to :obj:`True`, gradients w.r.t. to the
            weight matrix will be sparse. (default: :obj:`False`)
        generator (torch.Generator, optional): keyword-only; the source of
            the walks' RNG keys and of the negative samples (default: PyTorch's
            global RNG, so ``torch.manual_seed`` also makes runs repeatable).
        seed (int, optional): keyword-only; shorthand for
            ``generator=torch.Generator().manual_seed(seed)``. Two models built
            with the same :obj:`seed` draw the same samples.
    """
    def __init__(
        self,
        edge_index: Tensor,
        embedding_dim: int,
        walk_length: int,
        context_size: int,
        walks_per_node: int = 1,
        p: float = 1.0,
        q: float = 1.0,
        num_negative_samples: int = 1,
        num_nodes: Optional[int] = None,
        sparse: bool = False,
        *,
        generator: Optional[torch.Generator] = None,
        seed: Optional[int] = None,
    ):
        # PyG's __init__ raises ImportError without pyg-lib: not called.
        torch.nn.Module.__init__(self)
        _check_args(walk_length, context_size, walks_per_node, p, q,
                    num_negative_samples)
        if generator is not None and seed is not None:
            raise ValueError("FusedNode2Vec: pass 'generator' or 'seed', not "
                             "both")
        if seed is not None:
            generator = torch.Generator().manual_seed(int(seed))
        self.generator = generator

        self.random_walk_fn = self._random_walk

        # Ids >= num_nodes would make index2ptr (torch's COO -> CSR
        # conversion, which checks nothing) write past rowptr: refused here,
        # once per graph.
        self.num_nodes = check_edge_index(edge_index, num_nodes,
                                          'FusedNode2Vec',
                                          infer_num_nodes=True)

        # PyG's CSR, as PyG builds it: rows sorted, and within a row the
        # neighbours ascending (sort_edge_index sorts by row * N + col), as
        # the op's node2vec step needs. It stays on the CPU, as in PyG.
        row, col = sort_edge_index(edge_index, num_nodes=self.num_nodes).cpu()
        self.rowptr, self.col = index2ptr(row, self.num_nodes), col

        # The WalkGraph of the same CSR, built once: its tensors are
        # (non-persistent) buffers, so they follow model.to(device) and stay
        # out of the state dict (which is PyG's: embedding.weight only). No
        # edge ids (the walks' edges are not used).
        walk_col = self.col
        if self.num_nodes < 2**31:
            walk_col = walk_col.to(torch.int32)  # as WalkGraph stores it
        self.register_buffer('walk_rowptr', self.rowptr, persistent=False)
        self.register_buffer('walk_col', walk_col.contiguous(),
                             persistent=False)

        self.EPS = 1e-15

        self.embedding_dim = embedding_dim
        self.walk_length = walk_length - 1
        self.context_size = context_size
        self.walks_per_node = walks_per_node
        self.p = p
        self.q = q
        self.num_negative_samples = num_negative_samples

        self.embedding = Embedding(self.num_nodes, embedding_dim,
                                   sparse=sparse)

        self.reset_parameters()

    # -- the graph the walks read ------------------------------------------
    @property
    def walk_graph(self) -> WalkGraph:
        r"""The :class:`~pyg_fusesample.sparse.WalkGraph` the walks read, on
        the model's device (a view of the buffers :obj:`walk_rowptr` and
        :obj:`walk_col`)."""
        return WalkGraph(self.walk_rowptr, self.walk_col, None, None,
                         self.num_nodes)

    def _sampling_graph(self) -> WalkGraph:
        # A DataLoader worker cannot use CUDA (it is a forked process): it
        # walks on PyG's CPU CSR, which holds the same graph.
        graph = self.walk_graph
        if graph.device.type != 'cpu' and get_worker_info() is not None:
            return WalkGraph(self.rowptr, self.col, None, None,
                             self.num_nodes)
        return graph

    @property
    def sample_device(self) -> torch.device:
        r"""Where :meth:`sample` and :meth:`pos_sample` return their walks."""
        return self._sampling_graph().device

    def _random_walk(self, rowptr: Tensor, col: Tensor, start: Tensor,
                     walk_length: int, p: float = 1.0, q: float = 1.0,
                     *, check_start: bool = True) -> Tensor:
        r"""``random_walk_fn``, with the signature of PyG's
        (``torch.ops.pyg.random_walk(rowptr, col, seed, walk_length, p, q)``):
        :obj:`walk_length` steps from each node of :obj:`start`, as
        ``[S, walk_length + 1]`` node ids. Called with the model's own
        :obj:`rowptr` and :obj:`col`, it walks the model's
        :class:`WalkGraph`, on the model's device (:obj:`start` is moved
        there); any other CSR is walked where it is."""
        if rowptr is self.rowptr and col is self.col:
            graph = self._sampling_graph()
            start = start.to(graph.device)
        else:
            graph = (rowptr, col)
        if walk_length == 0:  # walk_length=1 in the constructor
            return start.view(-1, 1).to(torch.long)
        return random_walk(graph, start, walk_length, p, q,
                           rng_seed=draw_rng_seeds(1, self.generator)[0],
                           check_start=check_start)

    # -- sampling ----------------------------------------------------------
    def loader(self, **kwargs) -> DataLoader:
        return DataLoader(range(self.num_nodes), collate_fn=self._sample_ids,
                          **kwargs)

    def _sample_ids(self, batch: List[int]) -> Tuple[Tensor, Tensor]:
        # The loader's batches are ids of range(num_nodes): no range check.
        return self._sample(torch.tensor(batch, dtype=torch.long),
                            check_start=False)

    def sample(self, batch: Union[List[int], Tensor]) -> Tuple[Tensor, Tensor]:
        if not isinstance(batch, Tensor):
            batch = torch.tensor(batch)
        return self._sample(batch, check_start=True)

    def _sample(self, batch: Tensor, check_start: bool
                ) -> Tuple[Tensor, Tensor]:
        # Both halves on the device the walks run on.
        batch = batch.to(self.sample_device)
        return (self._pos_sample(batch, check_start=check_start),
                self.neg_sample(batch))

    def pos_sample(self, batch: Tensor) -> Tensor:
        return self._pos_sample(batch, check_start=True)

    def _pos_sample(self, batch: Tensor, check_start: bool) -> Tensor:
        batch = batch.to(self.sample_device).repeat(self.walks_per_node)
        fn = self.random_walk_fn
        # (A random_walk_fn set by the user gets PyG's arguments only.)
        own = getattr(fn, '__func__', None) is FusedNode2Vec._random_walk
        kwargs = dict(check_start=check_start) if own else {}
        rw = fn(self.rowptr, self.col, batch, self.walk_length, self.p,
                self.q, **kwargs)
        if not isinstance(rw, Tensor):
            rw = rw[0]
        return self._windows(rw)

    def neg_sample(self, batch: Tensor) -> Tensor:
        if self.generator is None:
            return super().neg_sample(batch)
        # PyG's, with the random nodes drawn from the generator (on its
        # device) and moved to the batch's.
        batch = batch.repeat(self.walks_per_node * self.num_negative_samples)
        rw = torch.randint(self.num_nodes, (batch.size(0), self.walk_length),
                           dtype=batch.dtype, generator=self.generator,
                           device=self.generator.device).to(batch.device)
        return self._windows(torch.cat([batch.view(-1, 1), rw], dim=-1))

    def loss(self, pos_rw: Tensor, neg_rw: Tensor) -> Tensor:
        r"""Computes the loss given positive and negative random walks
        (PyG's, on :func:`~pyg_fusesample.ops.skipgram_loss`)."""
        ids = torch.cat([pos_rw.reshape(-1), neg_rw.reshape(-1)])
        nodes, inverse = torch.unique(ids, return_inverse=True)
        split = pos_rw.numel()
        # (Ids from the inverse of a unique: in range by construction.)
        return skipgram_loss(self.embedding(nodes),
                             inverse[:split].view(pos_rw.shape),
                             inverse[split:].view(neg_rw.shape), self.EPS,
                             check_index=False)

    def _windows(self, rw: Tensor) -> Tensor:
        # Every window of context_size consecutive nodes, as PyG cuts them.
        walks = []
        num_walks_per_rw = 1 + self.walk_length + 1 - self.context_size
        for j in range(num_walks_per_rw):
            walks.append(rw[:, j:j + self.context_size])
        return torch.cat(walks, dim=0)


def _check_args(walk_length, context_size, walks_per_node, p, q,
                num_negative_samples) -> None:
    name = 'FusedNode2Vec'
    for arg, value in (('walk_length', walk_length),
                       ('context_size', context_size),
                       ('walks_per_node', walks_per_node),
                       ('num_negative_samples', num_negative_samples)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or value < 1:
            raise ValueError(f"{name}: '{arg}' must be an integer >= 1, got "
                             f"{value!r}")
    if walk_length < context_size:
        raise ValueError(f"{name}: 'walk_length' ({walk_length}) must be >= "
                         f"'context_size' ({context_size}): every positive "
                         f"example is a window of context_size nodes of a "
                         f"walk of walk_length nodes")
    for arg, value in (('p', p), ('q', q)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name}: '{arg}' must be a finite number > 0, "
                             f"got {value!r}")
