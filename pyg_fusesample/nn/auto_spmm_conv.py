"""AutoSpMMConv: GCN-style aggregation through input-aware SpMM kernels."""
import weakref
from typing import Optional

import torch
from torch import Tensor
from torch.nn import Parameter
from torch_geometric.nn.conv import MessagePassing
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.nn.dense.linear import Linear
from torch_geometric.nn.inits import zeros
from torch_geometric.typing import SparseTensor

from ..autotune import run_spmm
from ..ops.spmm import csr_attention
from ..sparse import CSRGraph
from ..sparse.edge_index_checks import check_compressed, check_edge_index
from .graph_spmm_op import layer_spmm, register_layer

AGGRS = ('gcn', 'sum', 'mean')


class AutoSpMMConv(MessagePassing):
    r"""A graph convolution whose aggregation :math:`\mathbf{A}\mathbf{X}` runs
    on the SpMM kernel :mod:`pyg_fusesample.autotune` picks for this graph,
    feature width, dtype and device -- and only if it beats cuSPARSE
    (``torch.sparse.mm``), PyG's own scatter path and, for 16-bit inputs,
    the float32 kernel with casts on a probe (else the fastest of those
    runs); the decision is cached per graph (and on disk), so repeated calls
    cost the kernel alone.

    By default (``aggr='gcn'``) it computes what
    :class:`torch_geometric.nn.conv.GCNConv` computes,

    .. math::
        \mathbf{X}^{\prime} = \mathbf{\hat{D}}^{-1/2} \mathbf{\hat{A}}
        \mathbf{\hat{D}}^{-1/2} \mathbf{X} \mathbf{\Theta} + \mathbf{b},

    with the same parameter names (``lin``, ``bias``) so state dicts load
    across. ``aggr='sum'`` / ``'mean'`` aggregate :math:`\mathbf{X}
    \mathbf{\Theta}` over in-neighbours without normalisation (optionally
    weighted by ``edge_weight``). ``attention=True`` replaces the fixed
    weights by multi-head attention on the sparsity pattern (SDDMM -> row
    softmax -> SpMM): :math:`\mathbf{x}'_i = \Vert_h \sum_j
    \mathrm{softmax}_j(\langle \mathbf{q}^h_i, \mathbf{k}^h_j \rangle /
    \sqrt{C}) \mathbf{v}^h_j`, with ``lin`` as the value projection.

    Args:
        in_channels (int): size of each input sample.
        out_channels (int): size of each output sample (split over
            :obj:`heads` with attention).
        aggr (str, optional): ``'gcn'``, ``'sum'`` or ``'mean'``.
        add_self_loops (bool, optional): add self-loops (``'gcn'`` and
            attention). (default: :obj:`normalize` for ``'gcn'``, as in
            GCNConv; else :obj:`False`)
        normalize (bool, optional): symmetric normalisation (``'gcn'``).
        improved (bool, optional): self-loop weight 2 (``'gcn'``).
        attention (bool, optional): multi-head CSR attention.
        heads (int, optional): attention heads (must divide
            :obj:`out_channels`).
        bias (bool, optional): learn an additive bias.
        **kwargs (optional): arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`, edge
          indices :math:`(2, |\mathcal{E}|)` (or a ``SparseTensor`` /
          ``torch.sparse`` CSR ``adj_t``), optional edge weights
          :math:`(|\mathcal{E}|)`
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """
    def __init__(self, in_channels: int, out_channels: int, aggr: str = 'gcn',
                 add_self_loops: Optional[bool] = None, normalize: bool = True,
                 improved: bool = False, attention: bool = False,
                 heads: int = 1, bias: bool = True, **kwargs):
        if aggr not in AGGRS:
            raise ValueError(f"AutoSpMMConv: 'aggr' must be one of {AGGRS}, "
                             f"got {aggr!r}")
        if attention and out_channels % heads != 0:
            raise ValueError(f"AutoSpMMConv: 'heads' ({heads}) must divide "
                             f"'out_channels' ({out_channels})")
        if add_self_loops is None:  # GCNConv's default: loops iff normalised
            add_self_loops = normalize if aggr == 'gcn' else False
        if aggr == 'gcn' and add_self_loops and not normalize and not attention:
            raise ValueError("AutoSpMMConv: 'add_self_loops=True' needs "
                             "'normalize=True' with aggr='gcn' (as GCNConv)")
        super().__init__(aggr='add' if aggr == 'gcn' else aggr, **kwargs)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.mode = aggr
        self.add_self_loops = add_self_loops
        self.normalize = normalize
        self.improved = improved
        self.attention = attention
        self.heads = heads
        self.lin = Linear(in_channels, out_channels, bias=False,
                          weight_initializer='glorot')
        if attention:
            self.lin_query = Linear(in_channels, out_channels, bias=False,
                                    weight_initializer='glorot')
            self.lin_key = Linear(in_channels, out_channels, bias=False,
                                  weight_initializer='glorot')
        if bias:
            self.bias = Parameter(torch.empty(out_channels))
        else:
            self.register_parameter('bias', None)
        self._graphs = {}
        self._handle = register_layer(self)  # for torch.compile's op
        self.reset_parameters()

    def __setstate__(self, state):
        # A copy (deepcopy, pickle) is another layer: its own handle.
        super().__setstate__(state)
        self._handle = register_layer(self)

    def reset_parameters(self):
        super().reset_parameters()
        self.lin.reset_parameters()
        if self.attention:
            self.lin_query.reset_parameters()
            self.lin_key.reset_parameters()
        zeros(self.bias)

    # -- the graph, built once per input -----------------------------------
    def csr(self, edge_index, num_nodes: int,
            edge_weight: Optional[Tensor] = None,
            dtype: torch.dtype = torch.float32) -> CSRGraph:
        r"""The (normalised) :class:`CSRGraph` this layer multiplies with,
        memoised per input tensors (weakly, invalidated by in-place edits),
        so the scheduler's per-graph decisions survive across calls."""
        # The memo is keyed on the caller's objects (a SparseTensor on its
        # column tensor), before any conversion makes temporaries.
        anchor = edge_index
        if isinstance(edge_index, SparseTensor):
            anchor = edge_index.storage.col()
        keys = [anchor] + ([edge_weight] if edge_weight is not None else [])
        key = tuple((id(t), t._version) for t in keys) + (num_nodes, dtype)
        entry = self._graphs.get(key)
        if entry is not None and all(r() is t for r, t in zip(entry[0], keys)):
            return entry[1]
        if isinstance(edge_index, SparseTensor):
            row, col, value = edge_index.coo()  # adj_t: rows are targets
            edge_index, edge_weight = torch.stack([col, row]), value
        elif isinstance(edge_index, Tensor) and edge_index.layout == torch.sparse_csr:
            # (torch.sparse_csr_tensor checks no invariants by default)
            check_compressed(edge_index.crow_indices(),
                             edge_index.col_indices(), 'AutoSpMMConv',
                             'crow_indices', 'col_indices',
                             edge_index.size(1))
            adj = edge_index.to_sparse_coo().coalesce()
            edge_index = adj.indices().flip(0)
            edge_weight = adj.values()
        graph = self._build(edge_index, num_nodes, edge_weight, dtype)
        self._graphs = {key: ([weakref.ref(t) for t in keys], graph)}
        return graph

    def _build(self, edge_index: Tensor, num_nodes: int,
               edge_weight: Optional[Tensor], dtype) -> CSRGraph:
        # Once per graph (the CSR is memoised), before gcn_norm's scatter
        # would index with the ids: on a GPU an id out of range there is a
        # device-side assert, which loses the process's CUDA context.
        check_edge_index(edge_index, num_nodes, 'AutoSpMMConv')
        if edge_weight is not None and (
                edge_weight.dim() == 0
                or edge_weight.size(0) != edge_index.size(1)):
            raise ValueError(f"AutoSpMMConv: 'edge_weight' must have one "
                             f"entry per edge ({edge_index.size(1)}), got "
                             f"shape {list(edge_weight.shape)}")
        if self.mode == 'gcn' and self.normalize and not self.attention:
            edge_index, edge_weight = gcn_norm(
                edge_index, edge_weight, num_nodes, self.improved,
                self.add_self_loops, self.flow, dtype)
        elif self.add_self_loops and (self.mode == 'gcn' or self.attention):
            from torch_geometric.utils import add_remaining_self_loops
            edge_index, edge_weight = add_remaining_self_loops(
                edge_index, edge_weight, 1.0, num_nodes)
        if edge_weight is not None and not self.attention:
            edge_weight = edge_weight.to(dtype)
        else:
            edge_weight = None
        if self.flow == 'target_to_source':  # rows aggregate edge_index[0]
            edge_index = edge_index.flip(0)
        return CSRGraph.from_edge_index(edge_index, num_nodes, edge_weight)

    def forward(self, x: Tensor, edge_index,
                edge_weight: Optional[Tensor] = None) -> Tensor:
        reduce = 'mean' if self.mode == 'mean' else 'sum'
        if torch.compiler.is_compiling():
            # The graph's construction (self-loops, normalisation, CSR:
            # data-dependent sizes) and the kernel choice stay behind one
            # opaque op (graph_spmm_op), memoised per edge_index as in eager
            # mode; the traced part is [N, F] -> [N, F].
            self._check_compilable(edge_index, edge_weight)
            out = layer_spmm(self.lin(x), edge_index, edge_weight, x.size(0),
                             self._handle, reduce)
        else:
            h = self.lin(x)
            # The graph's values in the dtype the SpMM sees: under autocast
            # that is lin's 16-bit output, not x's float32 (values of x's
            # dtype made every 16-bit kernel refuse the input, and the
            # decision fell back to the float32 kernel with casts).
            graph = self.csr(edge_index, x.size(0), edge_weight, h.dtype)
            if self.attention:
                shape = (x.size(0), self.heads, self.out_channels // self.heads)
                out = csr_attention(graph, self.lin_query(x).view(shape),
                                    self.lin_key(x).view(shape), h.view(shape))
                out = out.reshape(x.size(0), self.out_channels)
            else:
                out = run_spmm(graph, h.contiguous(), reduce)
        if self.bias is not None:
            out = out + self.bias
        return out

    def _check_compilable(self, edge_index, edge_weight: Optional[Tensor]):
        if self.attention or not isinstance(edge_index, Tensor) or \
                edge_index.layout != torch.strided:
            raise NotImplementedError(
                'AutoSpMMConv under torch.compile takes an edge_index tensor '
                'and attention=False (attention, SparseTensor and sparse '
                'adj_t inputs run eagerly)')
        if edge_weight is not None and edge_weight.requires_grad:
            raise NotImplementedError(
                'AutoSpMMConv under torch.compile does not differentiate '
                'edge_weight (eager mode does)')

    def __repr__(self) -> str:
        extra = f', heads={self.heads}, attention=True' if self.attention else ''
        return (f'{self.__class__.__name__}({self.in_channels}, '
                f'{self.out_channels}, aggr={self.mode}{extra})')
