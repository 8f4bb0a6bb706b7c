"""One epoch of batches from a native prefetcher (``fusesample.
LayerBatchPrefetcher``, ``fusesample.ShadowBatchPrefetcher``; the machinery
is ``kernels/loader/native_prefetcher.h``): native threads that never take
the GIL run the loader's batch op, each on a CUDA stream of its own that
starts after the caller's stream's work at the epoch's start, and hand the
batches over in the epoch's order; the caller's thread only builds each
batch object from the op's tensors."""
from typing import Callable, List

import torch
from torch import Tensor


class NativeEpoch:
    r"""Iterates one epoch: ``make(tensors)`` of every batch's tensors from
    :obj:`prefetcher`'s ``next()``; :meth:`close` stops its threads."""
    depth = 2  # batches ready per thread
    # Threads by device. On a GPU (H100, products-like, LADIES batches made
    # alone) 1 / 2 / 3 / 4 threads made a batch every 2.58 / 1.87 / 1.69 /
    # 1.50 ms (two Python threads: 2.41), but a training step next to them
    # took no less with 3 or 4 than with 2 (their launches and size reads
    # slow the training thread's): 2. On the CPU one, which the training
    # step shares the cores with.
    threads = {'cuda': 2, 'cpu': 1}

    def __init__(self, prefetcher, num_batches: int,
                 make: Callable[[List[Tensor]], object]):
        self.prefetcher, self.num_batches, self.make = (prefetcher,
                                                        num_batches, make)

    @classmethod
    def thread_count(cls, device: torch.device) -> int:
        return cls.threads.get(device.type, 1)

    @staticmethod
    def draw_base_seed(loader: torch.utils.data.DataLoader):
        r"""DataLoader's base seed, drawn as plain iteration draws it (an
        iterator of the loader, made and discarded), before the epoch's own
        draws: the batches are then plain iteration's."""
        torch.utils.data.DataLoader.__iter__(loader)

    @staticmethod
    def to_device(t: Tensor, device: torch.device) -> Tensor:
        r""":obj:`t` (a host tensor) on :obj:`device` without waiting for
        the caller's stream (pinned, non-blocking on a GPU)."""
        if device.type == 'cuda':
            return t.pin_memory().to(device, non_blocking=True)
        return t.to(device)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self.num_batches

    def __next__(self):
        tensors = self.prefetcher.next()
        if not tensors:
            raise StopIteration
        return self.make(tensors)

    def close(self):
        r"""Stops the threads (an epoch left before its end)."""
        self.prefetcher.close()
