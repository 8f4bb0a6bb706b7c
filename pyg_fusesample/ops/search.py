"""``fusesample::segment_search``: binary searches, each in its own sorted
run of one array (contract: ``kernels/search/segment_search.cpp``)."""
import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


def segment_search(sorted: Tensor, first: Tensor, length: Tensor,
                   value: Tensor, upper: bool = False) -> Tensor:
    r"""For every query :math:`i`, the first position :math:`p` in
    ``sorted[first[i] : first[i] + length[i]]`` (a run sorted ascending)
    with ``sorted[p] >= value[i]`` (``upper``: ``>``), or the run's end:
    :func:`torch.searchsorted` per run, in one launch.

    Args:
        sorted (Tensor): ``[S]`` int32 or int64, its runs sorted.
        first (Tensor), length (Tensor): ``[Q]`` int64, each query's run.
        value (Tensor): ``[Q]`` of :obj:`sorted`'s dtype.
        upper (bool): search for the first value ``>`` rather than ``>=``
            (the two bounds differ by the copies of the value).

    Returns:
        ``[Q]`` int64 positions in :obj:`sorted`.
    """
    return _ops.segment_search(sorted, first, length, value, bool(upper))


@torch.library.register_fake('fusesample::segment_search')
def _segment_search_fake(sorted, first, length, value, upper):
    return value.new_empty(value.shape, dtype=torch.long)
