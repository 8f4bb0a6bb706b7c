r"""``to_hetero`` SAGE layers grouped by target type: one root GEMM for the
edge types that a sum adds up.

PyG's :func:`~torch_geometric.nn.to_hetero` turns ``conv(x, edge_index)``
into one call per edge type and, per target type, a sum of the calls that
end there (``aggr='sum'``; ``'mean'`` divides that sum). For
:class:`~pyg_fusesample.nn.SAGEConv` the sum over the ``k`` edge types
``(s_i, r_i, d)`` ending at ``d`` is

.. math::
    \sum_i \left( \mathrm{aggr}_i(\mathbf{x}_{s_i}) \mathbf{W}_{l,i}^{\top}
    + \mathbf{b}_i + \mathbf{x}_d \mathbf{W}_{r,i}^{\top} \right)
    = \sum_i \mathrm{aggr}_i(\mathbf{x}_{s_i}) \mathbf{W}_{l,i}^{\top}
    + \sum_i \mathbf{b}_i + \mathbf{x}_d \Big( \sum_i \mathbf{W}_{r,i}
    \Big)^{\top},

one root GEMM (forward, and two in the backward) where there were ``k``:
:func:`group_hetero_sage` rewrites the ``to_hetero`` graph so that each such
sum is one call of :func:`hetero_sage_sum`. The convs stay where they were
(parameters, state dict, hooks on the module dict); the result is the same
up to rounding (the root weights are summed before the product). A group
whose convs take PyG's path at run time (an unsupported input, lazy
parameters not yet initialised) is computed conv by conv, as before.
"""
import operator
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor
from torch.nn.parameter import UninitializedParameter

from ..ops.aggregate_linear import aggregate_linear
from .minibatch_common import fast_graph, layout_of, linear_first, uninitialized
from .sage_conv import _REDUCE, SAGEConv

XArg = Union[Tensor, Tuple[Tensor, Optional[Tensor]]]
_ADDS = (torch.add, operator.add)


def _groupable(conv) -> bool:
    # Options under which the per-edge-type terms add up as the module
    # docstring's sum: a plain SAGE term per conv, no normalisation after it.
    return (type(conv) is SAGEConv and isinstance(conv.aggr, str)
            and conv.aggr in _REDUCE and not conv.normalize)


def hetero_sage_sum(convs: torch.nn.ModuleDict, keys: Sequence[str],
                    xs: Sequence[XArg], edge_indices: Sequence[Tensor]
                    ) -> Tensor:
    r"""``sum(convs[key](x, edge_index))`` over the group, with one root
    GEMM (see the module). Every ``x`` holds the same target rows (a tensor,
    or ``(x_src, x_dst)`` with the same ``x_dst``)."""
    mods = [convs[k] for k in keys]
    x_dst = [x if isinstance(x, Tensor) else x[1] for x in xs]
    roots = [m for m in mods if m.root_weight]
    if x_dst[0] is None or any(not _groupable(m) for m in mods) or \
            any(not fast_graph(ei) for ei in edge_indices) or uninitialized(
                *[m.lin_l.weight for m in mods],
                *[m.lin_r.weight for m in roots]):
        return _unfused(mods, xs, edge_indices)
    target = x_dst[0]
    weight_r = None if not roots else (
        roots[0].lin_r.weight if len(roots) == 1 else
        torch.stack([m.lin_r.weight for m in roots]).sum(0))
    biases = [m.lin_l.bias for m in mods if m.lin_l.bias is not None]
    bias = None if not biases else (
        biases[0] if len(biases) == 1 else torch.stack(biases).sum(0))
    out = None
    for i, (m, x, ei) in enumerate(zip(mods, xs, edge_indices)):
        x_src = x if isinstance(x, Tensor) else x[0]
        if m.project and hasattr(m, 'lin'):
            x_src = m.lin(x_src).relu()
        layout = layout_of(ei, x_src.size(0), target.size(0), 'SAGEConv')
        reduce = _REDUCE[m.aggr]
        first = i == 0
        term = aggregate_linear(
            layout, x_src, reduce, m.lin_l.weight, bias if first else None,
            target if first and weight_r is not None else None,
            weight_r if first else None,
            reduce != 'max' and linear_first(layout, m.lin_l.in_channels,
                                             m.lin_l.out_channels, x_src))
        out = term if out is None else out + term
    return out


def _unfused(mods, xs, edge_indices) -> Tensor:
    out = None
    for m, x, ei in zip(mods, xs, edge_indices):
        term = m(x, ei)
        out = term if out is None else out + term
    return out


def group_hetero_sage(gm: torch.fx.GraphModule) -> int:
    r"""Rewrites, in place, every sum of two or more SAGE calls of one
    ``to_hetero`` module dict (one per edge type) that share their target
    rows into one :func:`hetero_sage_sum` call. Returns how many sums were
    rewritten (0: the graph is as it was)."""
    graph = gm.graph
    groups = []
    for node in graph.nodes:
        if node.op == 'call_function' and node.target in _ADDS:
            leaves = _sum_leaves(node, root=True)
            if leaves is not None and _same_group(gm, leaves):
                groups.append((node, leaves))
    done = set()
    count = 0
    # Outer sums first: an inner sum of a rewritten one is erased with it
    # (and left to itself only when the outer one is not a group).
    for root, leaves in reversed(groups):
        if root in done or any(leaf in done for leaf in leaves):
            continue  # (inside a larger sum already rewritten)
        dict_path = leaves[0].target.rsplit('.', 1)[0]
        keys = tuple(leaf.target.rsplit('.', 1)[1] for leaf in leaves)
        with graph.inserting_before(root):
            convs = graph.get_attr(dict_path)
            fused = graph.call_function(
                hetero_sage_sum,
                (convs, keys, tuple(leaf.args[0] for leaf in leaves),
                 tuple(leaf.args[1] for leaf in leaves)))
        root.replace_all_uses_with(fused)
        doomed = _sum_nodes(root)
        for n in doomed:
            graph.erase_node(n)
        done.update(doomed)
        count += 1
    if count:
        graph.lint()
        gm.recompile()
    return count


def _sum_leaves(node, root: bool = False) -> Optional[List]:
    # The call_module leaves of an add tree (each inner node used once), in
    # the order the sum adds them; None if a leaf is anything else.
    if node.op == 'call_function' and node.target in _ADDS and \
            (root or len(node.users) == 1) and len(node.args) == 2 and \
            not node.kwargs:
        left, right = (_sum_leaves(a) for a in node.args)
        return None if left is None or right is None else left + right
    if node.op == 'call_module' and len(node.users) == 1 and \
            len(node.args) == 2 and not node.kwargs:
        return [node]
    return None


def _sum_nodes(node) -> List:
    # The nodes of the add tree below `node`, users before what they use.
    if node.op == 'call_function' and node.target in _ADDS:
        return [node] + [n for a in node.args for n in _sum_nodes(a)]
    return [node]


def _same_group(gm: torch.fx.GraphModule, leaves: List) -> bool:
    # Two or more groupable SAGE convs of one module dict, reading the same
    # target rows (the same x node, or (x_src, x_dst) with the same x_dst).
    if len(leaves) < 2:
        return False
    paths = {leaf.target.rsplit('.', 1)[0] for leaf in leaves
             if '.' in leaf.target}
    if len(paths) != 1 or len(leaves) != len({l.target for l in leaves}):
        return False
    try:
        convs = [gm.get_submodule(leaf.target) for leaf in leaves]
    except AttributeError:
        return False
    if not all(_groupable(c) for c in convs):
        return False
    targets = {_target_node(leaf.args[0]) for leaf in leaves}
    return len(targets) == 1 and None not in targets


def _target_node(x) -> Optional[torch.fx.Node]:
    if isinstance(x, torch.fx.Node):
        return x
    if isinstance(x, (tuple, list)) and len(x) == 2 and \
            isinstance(x[1], torch.fx.Node):
        return x[1]
    return None


def group_all(model: torch.nn.Module) -> Dict[str, int]:
    r""":func:`group_hetero_sage` on every ``torch.fx.GraphModule`` in
    :obj:`model`: ``{module name: sums rewritten}`` (those with any). A
    module with lazy parameters not yet initialised is rewritten after its
    first call instead (a one-shot forward hook): the rewrite changes the
    order of the convs' calls, and lazy parameters are drawn from the RNG
    in call order, so rewriting first would initialise the model otherwise
    than PyG's."""
    out = {}
    for name, m in model.named_modules():
        if not isinstance(m, torch.fx.GraphModule):
            continue
        if any(isinstance(p, UninitializedParameter)
               for p in m.parameters()):
            handle = []

            def after_first_call(module, args, output, handle=handle):
                handle[0].remove()
                group_hetero_sage(module)
            handle.append(m.register_forward_hook(after_first_call))
            continue
        n = group_hetero_sage(m)
        if n:
            out[name] = n
    return out
