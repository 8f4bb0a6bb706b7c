"""``to_fused(model)``: a PyG model's convs swapped for the mini-batch
layers in place, weights kept."""
import types
import warnings
from typing import Dict, Type

import torch
from torch_geometric.nn import GATConv as PyGGATConv
from torch_geometric.nn import GCNConv as PyGGCNConv
from torch_geometric.nn import RGCNConv as PyGRGCNConv
from torch_geometric.nn import SAGEConv as PyGSAGEConv
from torch_geometric.nn.conv import MessagePassing
from torch_geometric.nn.models.basic_gnn import BasicGNN

from .gat_conv import GATConv
from .gcn_conv import GCNConv
from .hetero_sage_groups import group_all
from .rgcn_conv import RGCNConv
from .sage_conv import SAGEConv
from .trimmed_gnn import trimmable, trimmed_forward

# PyG's class -> ours (ours subclass PyG's and add no state).
SWAPS: Dict[Type, Type] = {PyGSAGEConv: SAGEConv, PyGGCNConv: GCNConv,
                           PyGGATConv: GATConv, PyGRGCNConv: RGCNConv}


def register_swap(pyg_class: Type, fused_class: Type):
    r"""Adds a (PyG layer, mini-batch layer) pair to what :func:`to_fused`
    swaps; :obj:`fused_class` must subclass :obj:`pyg_class` without state
    of its own."""
    if not issubclass(fused_class, pyg_class):
        raise TypeError(f"{fused_class.__name__} must subclass "
                        f"{pyg_class.__name__}")
    SWAPS[pyg_class] = fused_class


def to_fused(model: torch.nn.Module, trim: bool = True,
             group: bool = True) -> torch.nn.Module:
    r"""Swaps every PyG layer of :obj:`model` that has a mini-batch
    counterpart (``SAGEConv``, ``GCNConv``, ``GATConv``, ``RGCNConv`` and
    those added by :func:`register_swap`) for it, in place:
    parameters, buffers, hooks and the state dict's keys stay as they are
    (the swapped layers subclass PyG's and keep its state), so the model
    computes what it computed. Works on homogeneous models and on
    ``to_hetero`` / ``HeteroConv`` models (their per-edge-type convs).
    Other message-passing layers are left as they are, with a warning
    naming them.

    With :obj:`trim` (default), a PyG ``BasicGNN`` (``GraphSAGE``, ``GCN``,
    ``GAT``, ...) called with PyG's ``num_sampled_nodes_per_hop`` /
    ``num_sampled_edges_per_hop`` computes in layer ``l`` only the nodes
    the next layer reads (:mod:`~pyg_fusesample.nn.trimmed_gnn`): its
    output then holds the seeds' rows. Models with ``jk`` or normalisation
    layers keep PyG's own trimming (a warning says so).

    With :obj:`group` (default), in a ``to_hetero`` model the SAGE convs
    whose outputs are summed per target type are computed as one sum with
    one root GEMM (:mod:`~pyg_fusesample.nn.hetero_sage_groups`; the same
    up to rounding, the same parameters and state dict).

    Returns:
        :obj:`model`.
    """
    left = set()
    for module in model.modules():
        fused = SWAPS.get(type(module))
        if fused is not None:
            module.__class__ = fused
        elif isinstance(module, MessagePassing) and \
                type(module) not in SWAPS.values():
            left.add(type(module).__name__)
    if left:
        warnings.warn(f"to_fused: no mini-batch layer for "
                      f"{', '.join(sorted(left))}; left as PyG's",
                      stacklevel=2)
    if group:
        group_all(model)
    if trim and isinstance(model, BasicGNN):
        reason = trimmable(model)
        if reason is None:
            model.forward = types.MethodType(trimmed_forward, model)
        else:
            warnings.warn(f"to_fused: {type(model).__name__} keeps PyG's "
                          f"trim_to_layer ({reason})", stacklevel=2)
    return model
