"""``fusesample::keyed_draws``: one hop's draws for given targets under given
RNG keys (contract: ``kernels/sampler/keyed_draws.cpp``), what a rank samples
for the frontier nodes it owns on behalf of another."""
from typing import NamedTuple, Optional

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


class KeyedDraws(NamedTuple):
    count: Tensor  # [m] draws per target
    row: Tensor    # [sum(count)] global source ids, target after target
    edge: Tensor   # [sum(count)] global edge ids


def keyed_draws(colptr: Tensor, row: Tensor, edge_id: Optional[Tensor],
                target: Tensor, key: Tensor, num_neighbors: int,
                replace: bool, rng_seed: int, hop: int,
                weight_cumsum: Optional[Tensor] = None,
                edge_time: Optional[Tensor] = None,
                seed_time: Optional[Tensor] = None,
                temporal_strategy: str = 'uniform',
                rng_seeds: Optional[Tensor] = None) -> KeyedDraws:
    r"""The draws :func:`~pyg_fusesample.ops.neighbor_sample` makes at hop
    :obj:`hop` for the node at position ``key[i]`` of a batch sampled with
    :obj:`rng_seed`, for every target ``i`` (its in-edges: local CSC row
    ``target[i]``), without deduplication: the counts, sources and edge ids
    in draw order. Uniform or weighted sampling, with or without the
    temporal rule, homogeneous graphs, CPU or CUDA tensors (the same
    draws on both). On CUDA the op reads the number of draws back to the
    host once (with its error flags; the outputs' size depends on it), so
    it synchronises the stream and cannot be captured into a CUDA graph.

    Args:
        colptr (Tensor): ``[n + 1]`` int64 over the targets held here.
        row (Tensor): ``[E]`` int32 or int64 global source ids.
        edge_id (Tensor, optional): ``[E]`` int64 global edge ids (``None``:
            the slot).
        target (Tensor): ``[m]`` int64 local CSC rows.
        key (Tensor): ``[m]`` int64 positions in the requesting batch.
        num_neighbors (int): the hop's fan-out (``-1``: every in-edge).
        replace (bool): draw with replacement.
        rng_seed (int): the batch's RNG seed.
        hop (int): the hop's index.
        weight_cumsum (Tensor, optional): ``[E]`` float64 per-segment prefix
            sums of positive weights (a CSC without zero-weight in-edges, as
            :func:`~pyg_fusesample.sampler.rule_graph.weighted_csc` makes):
            draws by weight.
        edge_time (Tensor, optional): ``[E]`` int64 times of the in-edges,
            sorted within each target's in-edges (the temporal rule's CSC,
            :func:`~pyg_fusesample.sampler.rule_graph.temporal_csc`).
        seed_time (Tensor, optional): ``[m]`` int64, with
            :obj:`edge_time`: target ``i`` draws only from in-edges no
            later than ``seed_time[i]``, the time of its root seed in the
            requester's (disjoint) batch.
        temporal_strategy (str): ``'uniform'`` or ``'last'`` (the latest
            ``k`` admitted in-edges), as the loaders take it.
        rng_seeds (Tensor, optional): ``[m]`` int64, target ``i``'s RNG
            seed in place of :obj:`rng_seed` (requests of several batches
            in one call, each under its own batch's seed).
    """
    if temporal_strategy not in ('uniform', 'last'):
        raise ValueError(f"keyed_draws: 'temporal_strategy' must be "
                         f"'uniform' or 'last', got {temporal_strategy!r}")
    return KeyedDraws(*_ops.keyed_draws(colptr, row, edge_id, target, key,
                                        int(num_neighbors), bool(replace),
                                        int(rng_seed), int(hop),
                                        weight_cumsum, edge_time, seed_time,
                                        temporal_strategy == 'last',
                                        rng_seeds))


@torch.library.register_fake('fusesample::keyed_draws')
def _keyed_draws_fake(colptr, row, edge_id, target, key, num_neighbors,
                      replace, rng_seed, hop, weight_cumsum=None,
                      edge_time=None, seed_time=None, temporal_last=False,
                      rng_seeds=None):
    m = torch.library.get_ctx().new_dynamic_size()
    return (target.new_empty(target.shape), target.new_empty(m),
            target.new_empty(m))
