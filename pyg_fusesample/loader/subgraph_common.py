"""What the subgraph drop-ins (:class:`~pyg_fusesample.FusedShaDowKHopSampler`,
:class:`~pyg_fusesample.FusedGraphSAINTRandomWalkSampler`) share: their
argument checks and the ids a batch slices its attributes by (their
``edge_index`` check is :mod:`pyg_fusesample.sparse.edge_index_checks`,
shared with the walks)."""
import warnings
from typing import Callable, Union

import torch
from torch import Tensor


def check_int(name: str, value, minimum: int):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"'{name}' must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"'{name}' must be >= {minimum}, got {value}")


def check_device_kwargs(kwargs: dict, device: torch.device, cls: str):
    # DataLoader arguments that do not fit a graph on a GPU.
    if device.type != 'cuda':
        return
    if kwargs.get('num_workers', 0) > 0:
        raise ValueError(f"{cls} samples a CUDA graph in the main process: "
                         f"use num_workers=0 (the GPU builds a batch faster "
                         f"than a worker process could)")
    if kwargs.pop('pin_memory', False):
        warnings.warn(f"{cls}: 'pin_memory' is ignored: the batches are "
                      f"built on {device} already", stacklevel=3)


def warn_other_devices(data, device: torch.device, cls: str):
    others = sorted({str(v.device) for _, v in data
                     if isinstance(v, Tensor) and v.device != device})
    if others:
        warnings.warn(f"{cls}: the graph is on {device} but some attributes "
                      f"are on {', '.join(others)}; every batch copies its "
                      f"node (edge) ids there to slice them (slow path: move "
                      f"the whole 'data' to one device)", stacklevel=3)


class BatchIndex:
    # A batch's node, edge and root ids, copied to another device at most
    # once per batch when attributes live elsewhere. An id tensor may be
    # given as a function that makes it, called on first use: a batch whose
    # attributes all live on its device never needs it.
    def __init__(self, node: Tensor, edge: Tensor,
                 root: Union[Tensor, Callable[[], Tensor]]):
        self.ids = {'node': node, 'edge': edge, 'root': root}
        self.moved = {}

    def take(self, value: Tensor, kind: str) -> Tensor:
        index = self.ids[kind]
        if callable(index):
            index = self.ids[kind] = index()
        if value.device != index.device:
            key = (kind, value.device)
            if key not in self.moved:
                self.moved[key] = index.to(value.device)
            index = self.moved[key]
        return value.index_select(0, index)
