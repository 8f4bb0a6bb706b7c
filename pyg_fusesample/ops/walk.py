"""Random walks: :func:`random_walk` over ``torch.ops.fusesample.random_walk``.

The op's contract is in ``kernels/walk/random_walk.cpp``; one walk's code
(``kernels/walk/walk_step.h``) is shared by the CPU and CUDA kernels.
"""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)
from ..sparse.walk_graph import WalkGraph
from .rng_keys import draw_rng_seeds

GraphLike = Union[Tensor, Tuple[Tensor, Tensor], WalkGraph]


def as_walk_graph(graph: GraphLike, num_nodes: Optional[int] = None,
                  edge_weight: Optional[Tensor] = None) -> WalkGraph:
    r""":obj:`graph` as a :class:`~pyg_fusesample.sparse.WalkGraph`: an
    ``edge_index``, a ``(rowptr, col)`` CSR or a :class:`WalkGraph` (kept as
    it is)."""
    if isinstance(graph, WalkGraph):
        if edge_weight is not None:
            raise ValueError("random_walk: a WalkGraph carries its weights; "
                             "pass 'edge_weight' to WalkGraph.from_edge_index")
        return graph
    if isinstance(graph, Tensor):
        return WalkGraph.from_edge_index(graph, num_nodes, edge_weight)
    if isinstance(graph, (tuple, list)) and len(graph) == 2:
        return WalkGraph.from_csr(graph[0], graph[1], edge_weight)
    raise TypeError(f"random_walk: 'graph' must be an edge_index, a (rowptr, "
                    f"col) pair or a WalkGraph, got {type(graph).__name__}")


def random_walk(graph: GraphLike, start: Tensor, walk_length: int,
                p: float = 1.0, q: float = 1.0, restart_prob: float = 0.0,
                edge_weight: Optional[Tensor] = None,
                num_nodes: Optional[int] = None,
                return_edge_indices: bool = False,
                rng_seed: Optional[int] = None,
                generator: Optional[torch.Generator] = None,
                check_start: bool = True
                ) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    r"""Samples a random walk of :obj:`walk_length` steps from every node in
    :obj:`start`, on the device the graph is on.

    A step from :math:`v` follows an out-edge :math:`v \to x`, drawn
    uniformly (DeepWalk), proportionally to :obj:`edge_weight`, or, when
    :obj:`p` or :obj:`q` differs from 1, by node2vec's second-order rule:
    coming from :math:`t`, edge :math:`v \to x` has weight
    :math:`w_{vx} \cdot \alpha_{pq}(t, x)` with

    .. math::
        \alpha_{pq}(t, x) = \begin{cases} 1/p & x = t \\
        1 & t \to x \text{ is an edge} \\ 1/q & \text{otherwise,}\end{cases}

    drawn by rejection (O(1) expected reads and one binary search per
    step). With :obj:`restart_prob` :math:`> 0` every step first jumps back
    to the walk's start with that probability (random walk with restart, as
    in personalised PageRank). A walk at a node without out-edges stays
    there (torch_cluster's convention).

    A 2-D :obj:`start` (``[S, R]``) asks for multi-root walks (NextDoor's
    MultiRW, i.e. frontier sampling): walk :math:`i` keeps :math:`R` current
    nodes, initially ``start[i]``, and each step moves one of them, chosen
    with probability proportional to its out-degree (its total out-weight
    when weighted), along a first-order out-edge. These are first-order
    only (no :obj:`p`, :obj:`q` or restarts).

    Args:
        graph: ``edge_index`` (``[2, E]``, walks go from ``edge_index[0]``
            to ``edge_index[1]``), a ``(rowptr, col)`` CSR, or a
            :class:`~pyg_fusesample.sparse.WalkGraph` (build it once with
            :meth:`WalkGraph.from_edge_index` to walk a graph repeatedly).
        start (Tensor): ``[S]`` int64 start nodes (or ``[S, R]`` roots of
            multi-root walks), on the graph's device.
        walk_length (int): steps per walk (>= 1).
        p (float): return parameter (> 0). (default: :obj:`1.0`)
        q (float): in-out parameter (> 0). (default: :obj:`1.0`)
        restart_prob (float): restart probability per step, in [0, 1).
        edge_weight (Tensor, optional): ``[E]`` non-negative edge weights.
        num_nodes (int, optional): number of nodes of an ``edge_index``.
        return_edge_indices (bool): also return the traversed edges.
        rng_seed (int, optional): key of the counter-based RNG; equal inputs
            and key give bitwise equal walks on the CPU and on a GPU.
            (default: drawn from :obj:`generator` or PyTorch's RNG)
        generator (torch.Generator, optional): source of :obj:`rng_seed`.
        check_start (bool): raise if :obj:`start` holds ids outside the
            graph (on a GPU this costs one host synchronisation; unchecked,
            such walks come back as rows of -1). (default: :obj:`True`)

    Returns:
        ``node`` (``[S, walk_length + 1]`` int64, ``node[:, 0] = start``;
        multi-root: ``[S, R + walk_length]``, the roots then the node each
        step reached, -1 where every current node was a sink)
        and, with :obj:`return_edge_indices`, ``edge``
        (``[S, walk_length]`` int64 edge ids -- positions in
        :obj:`edge_index`, or CSR slots -- and -1 where a walk stayed at a
        sink or restarted).
    """
    g = as_walk_graph(graph, num_nodes, edge_weight)
    if not isinstance(start, Tensor) or start.dim() not in (1, 2):
        raise ValueError("random_walk: 'start' must be a tensor of node ids, "
                         "[S] (one start per walk) or [S, R] (multi-root)")
    if start.dtype != torch.long:
        start = start.long()
    if check_start and start.numel():
        lo, hi = torch.aminmax(start)
        if int(lo) < 0 or int(hi) >= g.num_nodes:
            raise ValueError(f"random_walk: 'start' holds ids outside "
                             f"[0, {g.num_nodes})")
    if rng_seed is None:
        rng_seed = draw_rng_seeds(1, generator)[0]
    node, edge = torch.ops.fusesample.random_walk(
        g.rowptr, g.col, g.edge_id, g.weight_cumsum, start, int(walk_length),
        float(p), float(q), float(restart_prob), int(rng_seed),
        bool(return_edge_indices))
    return (node, edge) if return_edge_indices else node


@torch.library.register_fake('fusesample::random_walk')
def _(rowptr, col, edge_id, weight_cumsum, start, walk_length, p, q,
      restart_prob, rng_seed, return_edge):
    num_walks = start.size(0)
    roots = start.size(1) if start.dim() == 2 else 1
    return (start.new_empty(num_walks, roots + walk_length),
            start.new_empty(num_walks if return_edge else 0, walk_length))
