"""GPUFeatureCache: the hottest feature rows on the GPU, the rest read
zero-copy from pinned host memory.

A graph whose features do not fit the GPU (ogbn-papers100M's 111M x 128
float32 rows are 57 GB) keeps them in pinned host memory, where the CUDA
gather reads the rows a batch needs directly over the host link. Sampled
batches read hubs far more often than leaves (a node is drawn about in
proportion to its out-degree), so a few GB of the most-read rows on the GPU
serve most of a batch's rows at HBM speed: :class:`GPUFeatureCache` keeps
those rows, chosen by a hotness score per node (out-degree, or access
counts measured on real batches), and gathers a batch through
``fusesample::gather_rows_cached`` -- one kernel, cached rows from the GPU,
the others from the host.
"""
from typing import Optional

import torch
from torch import Tensor

from ..environment import concrete_device
from ..ops import gather_rows, gather_rows_cached


class GPUFeatureCache:
    r"""A cache of the hottest rows of :obj:`src` on :obj:`device`.

    Args:
        src (Tensor): ``[N, ...]`` feature rows, in pinned host memory
            (``x.pin_memory()``: the GPU reads the uncached rows in place) or
            on :obj:`device`.
        cache_bytes (int): the cache's size in bytes; it holds
            ``cache_bytes // row_bytes`` rows (at most :math:`N`).
        device (torch.device): where the cache lives and batches are
            gathered to.
        hotness (Tensor, optional): ``[N]`` score per row; the rows with the
            largest scores are cached (ties: the smaller id). Without it the
            cache starts empty (fill it with :meth:`set_hotness`, or
            :meth:`record` batches and :meth:`refresh`).

    Reads of the hit counters (:attr:`hit_rate`) synchronise with the GPU;
    gathering does not.
    """
    def __init__(self, src: Tensor, cache_bytes: int, device,
                 hotness: Optional[Tensor] = None):
        device = torch.device(device)
        if src.dim() < 1:
            raise ValueError("GPUFeatureCache: 'src' must have a row "
                             "dimension")
        if device.type == 'cuda' and src.device.type == 'cpu' \
                and not src.is_pinned():
            raise ValueError("GPUFeatureCache: a host 'src' must be in "
                             "pinned memory (src.pin_memory()) for the GPU "
                             "to read it in place")
        if not isinstance(cache_bytes, int) or cache_bytes < 0:
            raise ValueError(f"GPUFeatureCache: 'cache_bytes' must be an int "
                             f">= 0, got {cache_bytes!r}")
        self.src = src
        self.device = concrete_device(device)  # a loader compares it
        self.num_rows = src.size(0)
        self.row_bytes = src[0].numel() * src.element_size() if \
            self.num_rows else 0
        self.capacity = min(self.num_rows, cache_bytes // self.row_bytes) \
            if self.row_bytes else 0
        self.counts: Optional[Tensor] = None
        self._hits = torch.zeros(1, dtype=torch.long, device=device)
        self._rows = 0
        self.set_hotness(hotness)

    @classmethod
    def from_degree(cls, src: Tensor, edge_index: Tensor, cache_bytes: int,
                    device) -> 'GPUFeatureCache':
        r"""A cache of the rows of the nodes with the most out-edges
        (``edge_index[0]``): neighbour sampling reads a node's row when the
        node is drawn as an in-neighbour of a target, so a node is read
        about in proportion to its out-degree (its in-degree, for the
        undirected graphs most data sets are)."""
        degree = torch.bincount(edge_index[0].cpu(), minlength=src.size(0))
        return cls(src, cache_bytes, device, degree)

    def set_hotness(self, hotness: Optional[Tensor]):
        r"""Caches the :attr:`capacity` rows with the largest
        :obj:`hotness` (``None``: none)."""
        slot = torch.full((self.num_rows, ), -1, dtype=torch.int32)
        if hotness is None or self.capacity == 0:
            hot = torch.empty(0, dtype=torch.long)
        else:
            hotness = hotness.detach().cpu()
            if hotness.shape != (self.num_rows, ):
                raise ValueError(f"GPUFeatureCache: 'hotness' needs one score "
                                 f"per row ({self.num_rows}), got shape "
                                 f"{list(hotness.shape)}")
            # Stable descending sort: ties go to the smaller id.
            order = torch.sort(hotness, descending=True, stable=True).indices
            hot = order[:self.capacity]
        slot[hot] = torch.arange(hot.numel(), dtype=torch.int32)
        self.cached = hot.to(self.device)
        self.cache_slot = slot.to(self.device)
        self.cache = gather_rows(self.src, self.cached) if hot.numel() \
            else self.src.new_empty((0, *self.src.shape[1:]),
                                    device=self.device)

    def gather(self, index: Tensor) -> Tensor:
        r"""``src[index]`` on :attr:`device` (:obj:`index` on
        :attr:`device`, in ``[0, N)``: e.g. sampler output)."""
        self._rows += index.numel()
        return gather_rows_cached(self.src, self.cache, self.cache_slot, index,
                                  self._hits)

    def record(self, index: Tensor):
        r"""Counts the rows :obj:`index` reads, for :meth:`refresh`."""
        counts = torch.bincount(index, minlength=self.num_rows)
        self.counts = counts if self.counts is None else self.counts + counts

    def refresh(self):
        r"""Caches the rows most read since the last refresh (by
        :meth:`record`) and starts counting again."""
        if self.counts is not None:
            self.set_hotness(self.counts)
            self.counts = None

    @property
    def hit_rate(self) -> float:
        r"""The fraction of rows gathered since :meth:`reset_stats` that
        the cache served (reads the device counter: a synchronisation)."""
        return int(self._hits) / self._rows if self._rows else 0.0

    def reset_stats(self):
        self._hits.zero_()
        self._rows = 0

    @property
    def nbytes(self) -> int:
        return self.cache.numel() * self.cache.element_size()

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.cache.size(0)}/'
                f'{self.num_rows} rows, {self.nbytes / 2**20:.1f} MiB on '
                f'{self.device})')
