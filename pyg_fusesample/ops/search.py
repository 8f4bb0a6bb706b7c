"""``fusesample::segment_search``: binary searches, each in its own sorted
run of one array (contract: ``kernels/search/segment_search.cpp``); and
``fusesample::in_set_entries``: the entries of many node sets' adjacency lists
that lie in their own set (contract: ``kernels/sampler/in_set_entries.cpp``)."""
from typing import Tuple

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


def in_set_entries(ptr: Tensor, nbr: Tensor, node: Tensor, group: Tensor,
                   key: Tensor, set_ptr: Tensor, skip: Tensor,
                   num_nodes: int) -> Tuple[Tensor, Tensor, Tensor]:
    r"""For every position :math:`i` (node ``node[i]`` of set ``group[i]``)
    not in :obj:`skip`, the entries ``nbr[s]`` of its list
    (``s`` in ``[ptr[node[i]], ptr[node[i] + 1])``) whose key
    ``group[i] * num_nodes + nbr[s]`` is in :obj:`key`, as
    ``(nbr_pos, pos, slot)``: that key's position, :math:`i` and :math:`s`,
    ordered by :math:`i` then :math:`s`. The scanned half of ShaDow's grouped
    induced subgraphs.

    Args:
        ptr (Tensor): ``[N + 1]`` int64 list offsets.
        nbr (Tensor): ``[E]`` int32 or int64 list entries.
        node, group (Tensor): ``[n]`` int64, each position's node and set.
        key (Tensor): ``[K]`` int64, the sets' members as ``group *
            num_nodes + node``, sorted and unique (any ``K``: the members
            need not be the positions).
        set_ptr (Tensor): ``[G + 1]`` int64, set :math:`g`'s keys at
            ``[set_ptr[g], set_ptr[g + 1])``.
        skip (Tensor): ``[n]`` bool, positions not scanned.
        num_nodes (int): the key's multiplier.
    """
    return tuple(_ops.in_set_entries(ptr, nbr, node, group, key, set_ptr,
                                     skip, int(num_nodes)))


@torch.library.register_fake('fusesample::in_set_entries')
def _in_set_entries_fake(ptr, nbr, node, group, key, set_ptr, skip,
                         num_nodes):
    m = torch.library.get_ctx().new_dynamic_size()
    return tuple(node.new_empty(m, dtype=torch.long) for _ in range(3))
