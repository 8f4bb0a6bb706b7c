"""``fusesample::split_by_type``: a typed sample as per-type lists.

The op's contract is in ``kernels/split/split_by_type.cpp``; :func:`split_by_type`
adds the stable sorts it expects, so that one call turns a sample in global
ids into every type's ids, local edge endpoints and edge ids.
"""
from typing import NamedTuple

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample


class TypeSplit(NamedTuple):
    r"""A sample grouped by type (types in offset order, each in the sample's
    order): ``node`` local ids; ``node_order`` the sample positions they came
    from; ``edge_index`` the blocks ``[rows of type t | cols of type t]``,
    block t starting at twice the type's first edge position; ``edge`` local
    edge ids."""
    node: Tensor
    node_order: Tensor
    edge_index: Tensor
    edge: Tensor


def _types(ids: Tensor, offset: Tensor):
    # Each global id's type (offset[t] <= id < offset[t + 1]) as a byte key
    # where the types fit (a radix sort then takes one pass, not eight), and a
    # stable order grouping the ids by type, with the sorted keys.
    types = torch.searchsorted(offset, ids, right=True) - 1
    key = types.to(torch.uint8 if offset.numel() <= 257 else torch.int32)
    return torch.sort(key, stable=True)


def split_by_type(node: Tensor, node_offset: Tensor, row: Tensor, col: Tensor,
                  edge: Tensor, edge_offset: Tensor) -> TypeSplit:
    r"""Splits a typed sample by node and edge type on its device, without a
    host synchronisation.

    Args:
        node (torch.Tensor): global node ids of the sample, :obj:`[N]`.
        node_offset (torch.Tensor): node type :math:`t` owns the global ids
            :math:`[o_t, o_{t+1})`, :obj:`[NT + 1]`.
        row (torch.Tensor), col (torch.Tensor): sampled edges' endpoints as
            positions in :obj:`node`, :obj:`[E]`.
        edge (torch.Tensor): global edge ids, :obj:`[E]`.
        edge_offset (torch.Tensor): the same for edge types, :obj:`[T + 1]`.

    Returns:
        :class:`TypeSplit`; with :math:`n_t` edges of type :math:`t` starting
        at sorted position :math:`s_t`,
        ``edge_index[2 s_t : 2 (s_t + n_t)].view(2, n_t)`` is that type's
        ``edge_index`` in its node types' local positions.
    """
    nkey, norder = _types(node, node_offset)
    ekey, eorder = _types(edge, edge_offset)
    node_local, edge_index, edge_local = _ops.split_by_type(
        node, norder, nkey, node_offset, row, col, edge, eorder, ekey,
        edge_offset)
    return TypeSplit(node_local, norder, edge_index, edge_local)


@torch.library.register_fake('fusesample::split_by_type')
def _split_by_type_fake(node, node_order, node_type, node_offset, row, col,
                        edge, edge_order, edge_type, edge_offset):
    return (node.new_empty(node.numel()), node.new_empty(2 * edge.numel()),
            node.new_empty(edge.numel()))
