"""The mini-batch layers under ``torch.compile(fullgraph=True)``.

A compiled graph cannot look a tensor up in the layout memo (Python state
keyed by tensor identity), so the layers reach it through an op:
``fusesample::batch_layout`` runs the memo (and the loader registry behind
it) eagerly where the graph runs, and returns the layout's arrays. An op's
outputs must be its own, so they are copies: ``3 E + T`` integers a call,
against the rows of features the layer reads.

The aggregation under compile is ``fusesample::layout_aggregate``
(:mod:`pyg_fusesample.ops.segment`).
"""
from typing import Tuple

import torch
from torch import Tensor

from ..sparse.target_layout import TargetLayout, target_layout

@torch.library.custom_op('fusesample::batch_layout', mutates_args=())
def batch_layout(edge_index: Tensor, num_src: int, num_dst: int,
                 owner: str) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""``(ptr, src, dst, perm)`` of :func:`target_layout` (``perm`` the
    identity where the edges needed no sort)."""
    layout = target_layout(edge_index, num_src, num_dst, owner)
    perm = layout.perm if layout.perm is not None else torch.arange(
        layout.num_slots, device=edge_index.device)
    return (layout.ptr.clone(), layout.src.clone(), layout.dst.clone(),
            perm.clone())


@batch_layout.register_fake
def _(edge_index, num_src, num_dst, owner):
    E = edge_index.shape[1]
    return (edge_index.new_empty((num_dst + 1, ), dtype=torch.long),
            edge_index.new_empty((E, )), edge_index.new_empty((E, )),
            edge_index.new_empty((E, ), dtype=torch.long))


def traced_layout(edge_index: Tensor, num_src: int, num_dst: int,
                  owner: str) -> TargetLayout:
    ptr, src, dst, perm = batch_layout(edge_index, num_src, num_dst, owner)
    return TargetLayout(ptr, src, dst, num_src, perm)
