"""Mini-batches whose RNG keys are drawn in the main process.

Both fused loaders iterate over whole batches of input positions, each with
its RNG key, instead of over single indices: the keys then come from the
loader's generator in the main process, so a seeded run gives the same
batches whatever ``num_workers`` is (workers receive the key with the batch
instead of owning a copy of a generator).
"""
from typing import Iterator, List, Optional, Tuple

import torch
from torch import Tensor

from ..sampler.fused_neighbor_sampler import draw_rng_seeds


def resolve_generator(seed: Optional[int],
                      generator: Optional[torch.Generator]
                      ) -> Optional[torch.Generator]:
    r"""The loaders' source of shuffling and RNG keys: a generator seeded
    with :obj:`seed`, :obj:`generator`, or ``None`` (PyTorch's global RNG)."""
    if seed is not None and generator is not None:
        raise ValueError("pass either 'seed' or 'generator', not both")
    if seed is not None:
        return torch.Generator().manual_seed(int(seed))
    return generator


class SeededBatchSampler(torch.utils.data.Sampler):
    r"""Yields ``(input positions, rng key)`` per mini-batch.

    The RNG key of every batch is drawn here, in the main process, so that
    sampling is bitwise repeatable under a seed whatever ``num_workers`` is
    (workers receive the key with the batch instead of owning a generator).
    """
    def __init__(self, num_inputs: int, batch_size: int, shuffle: bool,
                 drop_last: bool, generator: Optional[torch.Generator]):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"'batch_size' must be a positive int, got "
                             f"{batch_size!r}")
        self.num_inputs = num_inputs
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_inputs // self.batch_size
        return -(-self.num_inputs // self.batch_size)

    def plan(self) -> Tuple[Tensor, List[int]]:
        r"""One epoch: the order of the inputs and one key per batch, drawn
        from the generator exactly as iterating draws them."""
        g = self.generator
        if self.shuffle:
            order = torch.randperm(self.num_inputs, generator=g)
        else:
            order = torch.arange(self.num_inputs)
        return order, draw_rng_seeds(len(self), g)

    def slices(self, order: Tensor, keys: List[int],
               seeds: Optional[Tensor] = None
               ) -> Iterator[Tuple[Tensor, int, Optional[Tensor]]]:
        r"""``(positions, key, seeds)`` per batch of a :meth:`plan`:
        ``seeds`` (the epoch's seed nodes in ``order``, e.g. on a GPU) is
        cut into the same windows as ``order`` (``None`` stays ``None``)."""
        size = self.batch_size
        for i, key in enumerate(keys):
            window = slice(i * size, (i + 1) * size)
            yield (order[window], key,
                   None if seeds is None else seeds[window])

    def __iter__(self) -> Iterator[Tuple[Tensor, int]]:
        for positions, key, _ in self.slices(*self.plan()):
            yield positions, key


class BatchDataset(torch.utils.data.Dataset):
    # With batch_size=None the DataLoader hands each item of the sampler to
    # collate_fn unchanged: one item is one whole (positions, key) batch.
    def __init__(self, num_batches: int):
        self.num_batches = num_batches

    def __len__(self) -> int:
        return self.num_batches

    def __getitem__(self, item):
        return item
