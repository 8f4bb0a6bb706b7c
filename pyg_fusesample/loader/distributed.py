"""Seed shards and per-rank seeds for data-parallel training (DDP).

PyG's multi-GPU examples (``examples/multi_gpu/``) run one process per GPU,
give each process (rank) its own slice of the training seeds and wrap the
model in :class:`~torch.nn.parallel.DistributedDataParallel`. Two helpers
make that slice and the batches drawn from it well defined:

* :func:`rank_seeds` cuts the seeds into ``world_size`` shards of equal
  size, as :class:`torch.utils.data.DistributedSampler` does, so that every
  rank runs the same number of steps (DDP's all-reduce needs every rank at
  every step);
* :func:`rank_seed` derives the seed of one rank's loader (and of its
  dropout) from the run's seed.

A rank's loader is then a plain :class:`FusedNeighborLoader`: the shard is
its ``input_nodes`` and the rank's seed its ``seed``::

    shard = rank_seeds(data.train_mask, rank, world_size, seed=seed)
    loader = FusedNeighborLoader(data, num_neighbors=[15, 10, 5],
                                 input_nodes=shard, batch_size=1024,
                                 shuffle=True, seed=rank_seed(seed, rank))

Determinism: the shards depend only on ``(input_nodes, world_size, seed,
drop_last)``; a rank's stream of batches only on its shard and
``rank_seed(seed, rank)``. So a run is bitwise repeatable under one seed,
whatever the other ranks do and however fast they are, and the batches of
rank ``r`` can be rebuilt in a single process (the test of
``examples/multi_gpu_sage.py`` does that). The shard is drawn once; each
rank's loader reshuffles its own shard every epoch (seeds do not move
between ranks, as in PyG's examples).
"""
from typing import Optional

import torch
from torch import Tensor

__all__ = ['rank_seeds', 'rank_seed']


def node_index(input_nodes, num_nodes: Optional[int],
               owner: str = 'rank_seeds') -> Tensor:
    r"""Seed nodes given as indices, a boolean mask over the nodes or
    ``None`` (all :obj:`num_nodes` nodes), as int64 indices; malformed ones
    raise ``ValueError`` prefixed with :obj:`owner`."""
    if input_nodes is None:
        if num_nodes is None:
            raise ValueError(f"{owner}: 'input_nodes' is None (all "
                             f"nodes), so 'num_nodes' must be given")
        return torch.arange(int(num_nodes))
    if not isinstance(input_nodes, Tensor):
        input_nodes = torch.as_tensor(input_nodes)
    if input_nodes.dim() != 1:
        raise ValueError(f"{owner}: 'input_nodes' must be 1-dimensional "
                         f"(indices or a boolean mask), got shape "
                         f"{list(input_nodes.shape)}")
    if input_nodes.dtype == torch.bool:
        if num_nodes is not None and input_nodes.numel() != num_nodes:
            raise ValueError(f"{owner}: 'input_nodes' is a boolean mask "
                             f"of length {input_nodes.numel()}, but "
                             f"'num_nodes' is {num_nodes}")
        return input_nodes.nonzero().view(-1)
    if input_nodes.dtype.is_floating_point or input_nodes.is_complex():
        raise ValueError(f"{owner}: 'input_nodes' must hold integer node "
                         f"indices or be a boolean mask, got "
                         f"{input_nodes.dtype}")
    return input_nodes.long()


def rank_seeds(input_nodes, rank: int, world_size: int, *,
               shuffle: bool = True, seed: int = 0, drop_last: bool = False,
               num_nodes: Optional[int] = None) -> Tensor:
    r"""The training seeds of rank :obj:`rank` out of :obj:`world_size`:
    :class:`torch.utils.data.DistributedSampler`'s split of
    :obj:`input_nodes`, as node indices.

    All ranks must call it with the same :obj:`input_nodes`, :obj:`seed`,
    :obj:`shuffle` and :obj:`drop_last`: the shards are then disjoint
    (up to the padding below), cover the seeds, and have equal sizes, so
    every rank's loader yields the same number of batches of the same sizes
    and DDP's gradient all-reduce meets every rank at every step.

    * The seeds are permuted by a generator seeded with :obj:`seed` (the
      same on every rank: this is the run's seed, not
      :func:`rank_seed`), unless :obj:`shuffle` is ``False``. The
      permutation spreads seeds that a data set stores in some order (OGB
      splits are ordered by time or sales rank) over the ranks.
    * The remainder of ``len(seeds) / world_size``:
      ``drop_last=False`` (the default, as ``DistributedSampler``) pads the
      list with its own first ``world_size - remainder`` entries (taken
      after the permutation), so at most ``world_size - 1`` seeds are
      trained on twice per epoch; ``drop_last=True`` drops the last
      ``remainder`` entries, so at most ``world_size - 1`` seeds are never
      trained on (PyG's examples, which ``split`` the index, drop them).
    * Rank ``r`` takes every ``world_size``-th entry from position ``r``,
      as ``DistributedSampler`` does.

    The result is ``input_nodes[list(DistributedSampler(range(n),
    world_size, rank, shuffle=shuffle, seed=seed, drop_last=drop_last))]``
    at epoch 0 (the seeds ``n`` listed as indices).

    Args:
        input_nodes (Tensor or None): seed node indices, or a boolean mask
            over the nodes, or ``None`` for all :obj:`num_nodes` nodes.
        rank (int): this process's rank, in ``[0, world_size)``.
        world_size (int): the number of processes.
        shuffle (bool): permute the seeds before splitting.
            (default: ``True``)
        seed (int): the permutation's seed, the same on every rank.
            (default: ``0``)
        drop_last (bool): drop the remainder instead of padding.
            (default: ``False``)
        num_nodes (int, optional): the graph's node count (needed for
            ``input_nodes=None``; checked against a mask's length).

    Returns:
        A 1-D int64 tensor of ``ceil(n / world_size)`` (padding) or
        ``floor(n / world_size)`` (``drop_last``) node indices, on
        :obj:`input_nodes`'s device.

    Raises:
        ValueError: a bad :obj:`rank` / :obj:`world_size`, a malformed
        :obj:`input_nodes`, or no seeds at all (with ``drop_last``: fewer
        seeds than ranks, which would leave every shard empty).
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) \
            or world_size < 1:
        raise ValueError(f"rank_seeds: 'world_size' must be a positive int, "
                         f"got {world_size!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) \
            or not 0 <= rank < world_size:
        raise ValueError(f"rank_seeds: 'rank' must be an int in "
                         f"[0, {world_size}), got {rank!r}")
    index = node_index(input_nodes, num_nodes)
    n = index.numel()
    if n == 0:
        raise ValueError("rank_seeds: 'input_nodes' holds no seeds")
    if drop_last and n < world_size:
        raise ValueError(f"rank_seeds: drop_last=True with {n} seeds and "
                         f"{world_size} ranks leaves every shard empty")
    if shuffle:
        g = torch.Generator().manual_seed(int(seed))
        index = index[torch.randperm(n, generator=g).to(index.device)]
    if drop_last:
        index = index[:n - n % world_size]
    elif n % world_size:
        pad = world_size - n % world_size
        # With fewer seeds than ranks the padding wraps around more than once.
        index = torch.cat([index, index.repeat(-(-pad // n))[:pad]])
    return index[rank::world_size].clone()


def rank_seed(seed: int, rank: int) -> int:
    r"""The seed of rank :obj:`rank`'s batch stream: ``seed + rank``.

    Pass it as the rank's ``FusedNeighborLoader(..., seed=...)`` (shuffling
    of its shard and every sampling key) and to ``torch.manual_seed`` after
    the model is built (dropout), so that every rank draws its own, repeatable
    stream. Rank 0 gets :obj:`seed` itself, so a world size 1 run with seed
    ``s`` samples what a single-process loader with ``seed=s`` over the same
    shard samples. Runs whose seeds differ by less than the world size share
    some ranks' streams (rank 1 of seed 0 is rank 0 of seed 1); space
    independent runs' seeds by at least the world size.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"rank_seed: 'seed' must be a non-negative int, "
                         f"got {seed!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"rank_seed: 'rank' must be a non-negative int, "
                         f"got {rank!r}")
    return seed + rank
