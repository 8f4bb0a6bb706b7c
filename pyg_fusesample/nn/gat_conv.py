"""``GATConv``: PyG's layer, its attention softmax and weighted sum computed
as segment reductions over the targets' in-edges."""
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import GATConv as PyGGATConv
from torch_geometric.utils import add_self_loops, remove_self_loops

from ..ops.segment import (index_rows, index_sources, index_targets,
                           segment_aggregate)
from ..ops.segment_softmax import segment_softmax
from .minibatch_common import (fast_graph, layout_of, pyg_fallback,
                               warn_pyg_path)

_FILL_REDUCE = {'add': 'sum', 'sum': 'sum', 'mean': 'sum', 'max': 'max',
                'min': 'min', 'mul': 'prod'}
_NEUTRAL = {'sum': 0., 'max': float('-inf'), 'min': float('inf'), 'prod': 1.}


@pyg_fallback
class GATConv(PyGGATConv):
    r"""PyG's :class:`~torch_geometric.nn.conv.GATConv`, computed over each
    target's in-edges as segment reductions:

    .. math::
        \mathbf{x}^{\prime}_i = \sum_{j \in \mathcal{N}(i) \cup \{ i \}}
        \alpha_{i,j}\mathbf{\Theta}_s\mathbf{x}_{j}, \qquad
        \alpha_{i,j} = \mathrm{softmax}_j \left( \mathrm{LeakyReLU}\left(
        \mathbf{a}^{\top}_{s} \mathbf{\Theta}_{s}\mathbf{x}_j
        + \mathbf{a}^{\top}_{t} \mathbf{\Theta}_{t}\mathbf{x}_i
        + \mathbf{a}^{\top}_{e} \mathbf{\Theta}_{e} \mathbf{e}_{j,i}
        \right)\right)

    Same constructor, parameters (a PyG state dict loads unchanged),
    ``forward`` and output as PyG's layer. The scores are computed per node
    and gathered per edge; the softmax (max, exponentials, sums) and the
    weighted sum are reductions over each target's slots of a
    :class:`~pyg_fusesample.sparse.TargetLayout`: no sort on a
    :class:`~pyg_fusesample.FusedNeighborLoader` batch, no atomics, no host
    synchronisation, a deterministic backward. Self-loops (PyG removes those
    given and adds one per node ``i < min(N_src, N_dst)``) are not built as
    edges: the given ones get no weight, and each such target gets a self
    term in its softmax and sum (with the edge features of
    :obj:`fill_value` when :obj:`edge_dim` is set).

    The fast path covers every option of the constructor (heads, concat,
    dropout, edge features, each :obj:`fill_value`, bias, residual,
    bipartite inputs) and :obj:`return_attention_weights` (the edges and
    weights in PyG's order: one host read, as PyG's own). PyG's code runs,
    with a warning once, for ``SparseTensor`` / ``torch.sparse`` graphs,
    inputs PyG rejects (not 2-D, :obj:`size` off the inputs' shapes), and
    edge features with a string :obj:`fill_value` on a graph with more
    targets than self-loops. Attention dropout draws its own mask, so
    training-mode outputs equal PyG's in distribution, not bit for bit.

    Args: as :class:`torch_geometric.nn.conv.GATConv`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})` or
          :math:`((|\mathcal{V_s}|, F_{s}), (|\mathcal{V_t}|, F_{t}))`,
          edge indices :math:`(2, |\mathcal{E}|)`, edge features
          :math:`(|\mathcal{E}|, D)` *(optional)*
        - **output:** node features :math:`(|\mathcal{V}|, H * F_{out})` or
          :math:`(|\mathcal{V_t}|, H * F_{out})`, and with
          :obj:`return_attention_weights=True` also
          :math:`((2, |\mathcal{E}'|), (|\mathcal{E}'|, H))` as PyG's
    """
    def forward(self, x: Union[Tensor, Tuple[Tensor, Optional[Tensor]]],
                edge_index, edge_attr: Optional[Tensor] = None,
                size: Optional[Tuple[int, int]] = None,
                return_attention_weights: Optional[bool] = None):
        x_src, x_dst = (x, x) if isinstance(x, Tensor) else x
        num_dst = _num_targets(x_src, x_dst, size)
        use_edges = edge_attr is not None and self.lin_edge is not None
        loops = _num_loops(x_src, x_dst, size) if self.add_self_loops else 0
        reason = _pyg_reason(edge_index, x_src, x_dst, size)
        if reason is None and use_edges and loops < num_dst and isinstance(
                self.fill_value, str) and self.add_self_loops:
            reason = "edge features with a string 'fill_value' on more " \
                     "targets than self-loops"
        if reason is not None:
            warn_pyg_path(self, reason)
            return super().forward(x, edge_index, edge_attr, size,
                                   return_attention_weights)

        h_src, h_dst, res = self._project(x)
        layout = layout_of(edge_index, x_src.size(0), num_dst, 'GATConv')
        score, self_score, loop_slots = self._scores(layout, h_src, h_dst,
                                                      loops)
        if use_edges:
            e, e_loop = self._edge_scores(layout, edge_attr, loop_slots,
                                          loops)
            score = score + e
            self_score = self_score + e_loop
        # (in float32 for 16-bit inputs: a hub's hundreds of exponentials
        # summed in bfloat16 lose the softmax's normalisation)
        alpha, alpha_self = _segment_softmax(
            layout, _widened(self._act(score, loop_slots)),
            _widened(self._act(self_score)), num_dst)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        alpha_self = F.dropout(alpha_self, p=self.dropout,
                               training=self.training)

        H, C = self.heads, self.out_channels
        out = segment_aggregate(layout, h_src.view(-1, H * C), 'sum', alpha)
        if loops > 0:
            own = (alpha_self.unsqueeze(-1) * _head(h_src, loops)).to(
                out.dtype).view(loops, H * C)
            out = out + (own if loops == num_dst else
                         F.pad(own, (0, 0, 0, num_dst - loops)))
        out = out if self.concat else out.view(-1, H, C).mean(dim=1)
        if res is not None:
            out = out + res
        if self.bias is not None:
            out = out + self.bias
        if return_attention_weights:
            return out, self._pyg_order(layout, edge_index, alpha, alpha_self)
        return out

    def _project(self, x):
        r"""PyG's projections: ``(x_src, x_dst)`` as ``[N, H, C]`` (``x_dst``
        may be ``None``) and the residual term."""
        H, C = self.heads, self.out_channels
        if isinstance(x, Tensor):
            res = self.res(x) if self.res is not None else None
            if self.lin is not None:
                h = self.lin(x).view(-1, H, C)
                return h, h, res
            return (self.lin_src(x).view(-1, H, C),
                    self.lin_dst(x).view(-1, H, C), res)
        x_src, x_dst = x
        res = self.res(x_dst) if (x_dst is not None
                                  and self.res is not None) else None
        lin_src = self.lin if self.lin is not None else self.lin_src
        lin_dst = self.lin if self.lin is not None else self.lin_dst
        h_dst = None if x_dst is None else lin_dst(x_dst).view(-1, H, C)
        return lin_src(x_src).view(-1, H, C), h_dst, res

    def _scores(self, layout, h_src: Tensor, h_dst: Optional[Tensor],
                loops: int):
        r"""Per slot ``[E, H]`` and per self-loop ``[loops, H]`` scores
        (before the edge term), and the slots of the given self-loops, which
        PyG drops for its own (``None``: none dropped)."""
        if h_dst is h_src:  # (one projection: both scores in one product)
            a_src, a_dst = _head_scores(h_src, self.att_src, self.att_dst)
        else:
            a_src, = _head_scores(h_src, self.att_src)
            a_dst = None if h_dst is None else \
                _head_scores(h_dst, self.att_dst)[0]
        score = index_sources(a_src, layout)
        self_score = _head(a_src, loops)
        if a_dst is not None:
            score = score + index_targets(a_dst, layout)
            self_score = self_score + _head(a_dst, loops)
        loop_slots = layout.src == layout.dst if self.add_self_loops \
            else None
        return score, self_score, loop_slots

    def _edge_scores(self, layout, edge_attr: Tensor,
                     loop_slots: Optional[Tensor], loops: int):
        r"""The edge term ``a_e^T Theta_e e`` of the slots and of the
        self-loops (edge features :obj:`fill_value`, as PyG's
        ``add_self_loops``)."""
        edge_attr = edge_attr.view(-1, 1) if edge_attr.dim() == 1 \
            else edge_attr
        edge_attr = layout.in_layout_order(edge_attr)
        loop_attr = _loop_attr(layout, edge_attr, loop_slots, loops,
                               self.fill_value)
        return self._edge_term(edge_attr), self._edge_term(loop_attr)

    def _edge_term(self, edge_attr: Tensor) -> Tensor:
        e = self.lin_edge(edge_attr).view(-1, self.heads, self.out_channels)
        return _head_scores(e, self.att_edge)[0]

    def _act(self, score: Tensor,
             loop_slots: Optional[Tensor] = None) -> Tensor:
        score = F.leaky_relu(score, self.negative_slope)
        return score if loop_slots is None else score.masked_fill(
            loop_slots.unsqueeze(-1), float('-inf'))

    def _pyg_order(self, layout, edge_index: Tensor, alpha: Tensor,
                   alpha_self: Tensor):
        r"""``(edge_index, alpha)`` as PyG returns them: the given edges less
        self-loops (in their order), then the self-loops."""
        if layout.perm is not None:
            alpha = torch.zeros_like(alpha).index_copy(0, layout.perm, alpha)
        if not self.add_self_loops:
            return edge_index, alpha
        alpha = alpha[edge_index[0] != edge_index[1]]
        edge_index, _ = remove_self_loops(edge_index)
        edge_index, _ = add_self_loops(edge_index,
                                       num_nodes=alpha_self.size(0))
        return edge_index, torch.cat([alpha, alpha_self])


def _num_targets(x_src: Tensor, x_dst: Optional[Tensor], size) -> int:
    if size is not None:
        return size[1]
    return (x_dst if x_dst is not None else x_src).size(0)


def _num_loops(x_src: Tensor, x_dst: Optional[Tensor], size) -> int:
    r"""PyG's count of self-loops: ``min(size)``, else ``min(N_src,
    N_dst)``."""
    if size is not None:
        return min(size)
    n = x_src.size(0)
    return n if x_dst is None else min(n, x_dst.size(0))


def _pyg_reason(edge_index, x_src: Tensor, x_dst: Optional[Tensor],
                size) -> Optional[str]:
    if not fast_graph(edge_index):
        return f"a {type(edge_index).__name__} graph input"
    if x_src.dim() != 2 or (x_dst is not None and x_dst.dim() != 2):
        return "node features that are not 2-D"
    if size is not None and (size[0] != x_src.size(0) or (
            x_dst is not None and size[1] != x_dst.size(0))):
        return "a 'size' that disagrees with the node features"
    return None


def _head_scores(h: Tensor, *atts: Tensor) -> Tuple[Tensor, ...]:
    r"""PyG's ``(h * att).sum(-1)`` for each ``att`` (``[1, H, C]``) of
    ``h`` (``[N, H, C]``): ``[N, H]`` each, in float32 (float64 stays).
    One matrix product with the block-diagonal ``[H * C, H]`` of every
    ``att`` side by side: ``h`` is read once, and neither the forward nor
    the backward writes an ``[N, H, C]`` temporary per ``att``. The blocks
    are the ``att`` rows times an identity, one broadcast product (a few
    kernels each way; ``block_diag`` of the heads took a copy per head and
    as many slices back, per layer and step). In float32
    even for 16-bit ``h`` and ``att`` (PyG's product with a float32 ``att``
    under autocast is float32 too): the gradient of ``att`` sums over every
    node, and a 16-bit product sums in 16 bits on some CPUs."""
    N, H, C = h.shape
    # weight[h * C + c, k * H + g] = atts[k][h, c] where g == h, else 0
    a = torch.stack([att.reshape(H, C) for att in atts], dim=-1)
    eye = torch.eye(H, dtype=a.dtype, device=a.device).view(H, 1, 1, H)
    weight = (a.unsqueeze(-1) * eye).reshape(H * C, len(atts) * H)
    dtype = torch.promote_types(torch.promote_types(h.dtype, weight.dtype),
                                torch.float32)
    with torch.autocast(h.device.type, enabled=False):
        out = torch.mm(h.reshape(N, H * C).to(dtype), weight.to(dtype))
    return out.split(H, dim=1)


def _head(t: Tensor, rows: int) -> Tensor:
    r"""``t[:rows]``, or ``t`` itself where that is all of it: autograd's
    backward of a slice writes a zero tensor of ``t``'s size and copies the
    gradient in, even for a slice of every row (a trimmed layer's self-loops
    cover all its rows)."""
    return t if rows == t.size(0) else t[:rows]


def _widened(t: Tensor) -> Tensor:
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _segment(layout, data: Tensor, reduce: str) -> Tensor:
    return torch.segment_reduce(data, reduce, offsets=layout.ptr, axis=0,
                                unsafe=True)


def _segment_softmax(layout, score: Tensor, self_score: Tensor,
                     num_dst: int) -> Tuple[Tensor, Tensor]:
    r"""PyG's ``softmax`` over each target's slots (``-inf`` scores count
    for nothing) and its self-loop (``self_score``, for the first rows):
    ``exp(s - max) / (sum exp(s - max) + 1e-16)``, the max detached. Eager:
    one op each way (:func:`~pyg_fusesample.ops.segment_softmax.
    segment_softmax`); compiled: these ops, for the compiler to fuse."""
    if not torch.compiler.is_compiling():
        return segment_softmax(layout.ptr, score, self_score.contiguous())
    loops = self_score.size(0)
    own = F.pad(self_score, (0, 0, 0, num_dst - loops), value=float('-inf'))
    top = torch.maximum(_segment(layout, score.detach(), 'max'),
                        own.detach())
    top = top.masked_fill(top == float('-inf'), 0.)
    p = (score - top.index_select(0, layout.dst)).exp()
    p_own = (self_score - top[:loops]).exp()
    total = _segment(layout, p, 'sum') + F.pad(
        p_own, (0, 0, 0, num_dst - loops)) + 1e-16
    return p / index_rows(total, layout.dst), p_own / total[:loops]


def _loop_attr(layout, edge_attr: Tensor, loop_slots: Optional[Tensor],
               loops: int, fill_value) -> Tensor:
    r"""The edge features PyG's ``add_self_loops`` gives the self-loops of
    nodes ``0 .. loops - 1``: :obj:`fill_value` (``None``: ones), or the
    reduction it names over each target's other in-edges (empty: ``0``,
    ``1`` for ``'mul'``)."""
    shape = (loops, ) + edge_attr.shape[1:]
    if fill_value is None:
        return edge_attr.new_ones(shape)
    if isinstance(fill_value, (int, float)):
        return edge_attr.new_full(shape, fill_value)
    if isinstance(fill_value, Tensor):
        fill = fill_value.to(edge_attr.device, edge_attr.dtype)
        fill = fill.unsqueeze(0) if fill.dim() != edge_attr.dim() else fill
        return fill.expand(shape)
    reduce = _FILL_REDUCE.get(fill_value)
    if reduce is None:
        raise AttributeError("No valid 'fill_value' provided")
    if loops == 0:
        return edge_attr.new_zeros(shape)
    count = layout.degree() if loop_slots is None else _segment(
        layout, (~loop_slots).to(edge_attr.dtype), 'sum')
    if loop_slots is not None:
        edge_attr = edge_attr.masked_fill(loop_slots.unsqueeze(-1),
                                          _NEUTRAL[reduce])
    out = _segment(layout, edge_attr, reduce)[:loops]
    count = count[:loops].to(edge_attr.dtype).unsqueeze(-1)
    if fill_value == 'mean':
        return out / count.clamp_min(1)
    return out if reduce in ('sum', 'prod') else out.masked_fill(
        count == 0, 0.)
