"""``fusesample::segment_cumsum``: per-segment prefix sums of float64 values,
each segment summed from zero (contract: ``kernels/graph/segment_cumsum.cpp``)."""
import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


def segment_cumsum(ptr: Tensor, values: Tensor) -> Tensor:
    r"""``out[i] = values[ptr[s]] + ... + values[i]`` for the segment ``s``
    holding ``i``, added left to right from zero: a segment's sums depend on
    its own values only (CPU tensors; ``ptr`` int64 ``[S + 1]``, ``values``
    float64 ``[ptr[-1]]``)."""
    return _ops.segment_cumsum(ptr, values)


@torch.library.register_fake('fusesample::segment_cumsum')
def _segment_cumsum_fake(ptr, values):
    return torch.empty_like(values)
