"""FusedGraphSAGE: the original GraphSAGE minibatch algorithm (a sampled
tree per seed) with every level's sampling fused into its aggregation."""
import warnings
from typing import Callable, List, Optional, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.resolver import activation_resolver

from ..ops.aggregate import DeviceErrorWatch, sample_aggregate
from ..ops.sage_tree import sage_tree
from ..sparse.edge_index_checks import check_ids_in_range
from .edge_index_aggregate import sample_aggregate_ei
from .fused_sage_conv import FusedSAGEConv, _check_target, rng_key
from .gather_linear import GatherLinear
from .graph_input import as_csc
from .sage_tree_compiled import sage_tree_step
from .tree_layer_input import TreeLayerInput, child_slots


class FusedGraphSAGE(torch.nn.Module):
    r"""GraphSAGE over a sampled computation tree, as in Algorithm 2 of
    `"Inductive Representation Learning on Large Graphs"
    <https://arxiv.org/abs/1706.02216>`_, without any subgraph or block
    tensors.

    In training, each seed draws :obj:`num_neighbors[0]` children, each child
    :obj:`num_neighbors[1]` children, and so on (level :math:`l` nodes are
    tree positions, so a node reached twice is expanded twice, with the same
    draws). Layer :math:`j` then computes, for the levels :math:`l \le L - j`,

    .. math::
        \mathbf{h}^{(j)}_v = \sigma\Big(\mathbf{W}^{(j)}_1 \mathbf{h}^{(j-1)}_v
        + \mathbf{W}^{(j)}_2 \cdot \mathrm{aggr}_{c \in \mathrm{children}(v)}
        \mathbf{h}^{(j-1)}_c\Big), \qquad \mathbf{h}^{(0)} = \mathbf{x},

    with its own weights and nonlinearity (none after the last layer). The
    first layer's aggregation over each level comes out of the fused
    :func:`~pyg_fusesample.ops.sample_aggregate` that also draws the next
    level, so the leaves' features are reduced without ever being gathered.
    Gradients reach the weights and :math:`\mathbf{x}` (learnable node
    embeddings work). A training step keeps only what its backward needs
    (:class:`~pyg_fusesample.nn.gather_linear.GatherLinear`,
    :class:`~pyg_fusesample.nn.tree_layer_input.TreeLayerInput`): on a
    products-sized graph it needs 1/16 of the transient memory of
    :class:`~pyg_fusesample.loader.FusedNeighborLoader` + GraphSAGE. In
    eager training with the default ReLU the forward and its backward are
    one op, :func:`~pyg_fusesample.ops.sage_tree` (C++ ports of those two,
    replayed from CUDA graphs on CUDA: see :obj:`replay`); under
    :func:`torch.compile` the same op runs as two opaque ops
    (:mod:`~pyg_fusesample.nn.sage_tree_compiled`), and with another
    activation (or a CPU :obj:`generator` under :func:`torch.compile`) the
    Python path runs.
    The training forward with the default ReLU cannot be differentiated
    twice (``retain_graph=True`` raises). In eval mode the model runs exact layer-wise
    full-neighbour inference (:meth:`inference`).

    **Seeds out of range.** On the CPU, and in eval mode on any device,
    :obj:`seed_nodes` outside ``[0, N)`` raise :class:`ValueError` at once.
    In training on a GPU they are not checked on the host (that would cost a
    synchronisation per step): the CUDA kernel treats such a seed as an
    empty slot (no neighbours, its own features read from the nearest valid
    row: a defined but meaningless output row; nothing is read out of
    bounds and the CUDA context survives) and records it in a device error
    word, which the model copies
    to the host asynchronously after the step. The next training call whose
    copy has arrived raises :class:`RuntimeError` naming
    :obj:`seed_nodes`: **the error shows one step late** (or later), after
    the bad step's output and gradients were computed. Steps captured whole
    (:class:`CapturedStep`) or compiled with :func:`torch.compile` do not
    read the word; validate their seeds once beforehand where they are not
    produced by a loader.

    Weights live in :obj:`convs` (:class:`FusedSAGEConv` with SAGEConv's
    parameter names), so a state dict of
    :class:`torch_geometric.nn.models.GraphSAGE` of the same shape loads.

    Args:
        in_channels (int): size of each input sample.
        hidden_channels (int): size of each hidden sample.
        out_channels (int): size of each output sample.
        num_layers (int): number of layers :math:`L`.
        num_neighbors (List[int]): children drawn per tree node at each
            level, from the seeds outwards; the last may be ``-1`` (all).
        aggr (str, optional): ``"mean"``, ``"sum"`` or ``"max"``.
            (default: :obj:`"mean"`)
        dropout (float, optional): dropout between layers. (default: :obj:`0.`)
        act (str or Callable, optional): nonlinearity. (default: :obj:`"relu"`)
        replace (bool, optional): draw with replacement. (default:
            :obj:`False`)
        generator (torch.Generator, optional): a CPU generator for the RNG
            keys (default: the device's generator, drawn inside the op --
            CUDA-graph safe; see :class:`FusedSAGEConv`). A generator's key
            is drawn on the host, so the eager step is not replayed.
        replay (bool, optional): on CUDA the eager training step
            (:func:`~pyg_fusesample.ops.sage_tree`) records its kernels in
            CUDA graphs on the second batch of a size and replays them after;
            outputs and gradients are fresh tensors, so the step behaves as
            an eager one. ``False`` launches every kernel from the host.
            (default: :obj:`True`)

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`, edge
          indices :math:`(2, |\mathcal{E}|)` (or ``adj_t``), seed nodes
          :math:`(B)`
        - **output:** :math:`(B, F_{out})` (all nodes if no seeds are given)
    """
    def __init__(self, in_channels: int, hidden_channels: int,
                 out_channels: int, num_layers: int,
                 num_neighbors: List[int], aggr: str = 'mean',
                 dropout: float = 0.0, act: Union[str, Callable] = 'relu',
                 replace: bool = False,
                 generator: Optional[torch.Generator] = None,
                 replay: bool = True):
        super().__init__()
        num_neighbors = [int(k) for k in num_neighbors]
        if num_layers < 1:
            raise ValueError(f"FusedGraphSAGE: 'num_layers' must be >= 1, "
                             f"got {num_layers}")
        if len(num_neighbors) != num_layers:
            raise ValueError(f"FusedGraphSAGE: 'num_neighbors' needs one "
                             f"fan-out per layer ({num_layers}), got "
                             f"{num_neighbors}")
        if any(k < 0 for k in num_neighbors[:-1]) or num_neighbors[-1] < -1:
            raise ValueError(f"FusedGraphSAGE: fan-outs must be >= 0 (only "
                             f"the last may be -1: its level is never "
                             f"expanded), got {num_neighbors}")
        self.in_channels = in_channels
        self.hidden_channels = hidden_channels
        self.out_channels = out_channels
        self.num_layers = num_layers
        self.num_neighbors = num_neighbors
        self.aggr = 'sum' if aggr == 'add' else aggr
        self.dropout = float(dropout)
        self.act = activation_resolver(act)
        self.replace = replace
        self.generator = generator
        self.replay = replay
        self._warned_python_step = False
        self._errors = DeviceErrorWatch('FusedGraphSAGE', 'seed_nodes')
        sizes = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList([
            FusedSAGEConv(sizes[i], sizes[i + 1], num_neighbors=k, aggr=aggr,
                          replace=replace, generator=generator)
            for i, k in enumerate(num_neighbors)
        ])

    def reset_parameters(self):
        for conv in self.convs:
            conv.reset_parameters()

    # -- sampling -----------------------------------------------------------
    def sample_tree(self, x: Tensor, edge_index, seed_nodes: Tensor,
                    rng_seed: Optional[int] = None):
        r"""Draws the tree and the first layer's aggregations.

        Returns ``(levels, aggs)``: ``levels[l]`` are the node ids of tree
        level :math:`l` (``[B * k_1 * ... * k_l]``, ``-1`` for an empty
        slot; level :math:`L` is never materialised) and ``aggs[l]`` the
        ``aggr`` of :math:`\mathbf{x}` over each level-:math:`l` node's
        children, for :math:`l < L`.
        """
        if rng_seed is None:
            rng_seed = rng_key(self.generator)
        if torch.compiler.is_compiling() and isinstance(edge_index, Tensor) \
                and edge_index.layout == torch.strided:
            # (compiled: the ops look the memoised CSC up themselves, so it
            # is not copied out of the memo every step)
            def aggregate(target, k, level):
                return sample_aggregate_ei(edge_index, x.size(0), x, target,
                                           k, self.aggr, self.replace,
                                           rng_seed, level)[:2]
        else:
            colptr, row = as_csc(edge_index, x.size(0), x.size(0))

            def aggregate(target, k, level):
                out = sample_aggregate(colptr, row, x, target, k, self.aggr,
                                       self.replace, rng_seed, level)
                return out.out, out.nbr
        levels, aggs = [seed_nodes], []
        for level, k in enumerate(self.num_neighbors):
            out, nbr = aggregate(levels[-1], k, level)
            aggs.append(out)
            if level + 1 < self.num_layers:
                levels.append(nbr.reshape(-1))
        return levels, aggs

    def forward(self, x: Tensor, edge_index,
                seed_nodes: Optional[Tensor] = None) -> Tensor:
        if seed_nodes is not None:
            _check_target(seed_nodes, x.device, 'seed_nodes')
            if (not self.training or seed_nodes.device.type == 'cpu') and \
                    not torch.compiler.is_compiling():
                # (no sync on the CPU; eval computes every node anyway;
                # compiled, the op checks CPU seeds itself)
                check_ids_in_range(seed_nodes, x.size(0), 'seed_nodes',
                                   'FusedGraphSAGE')
        if not self.training:
            out = self.inference(x, edge_index)
            return out if seed_nodes is None else out[seed_nodes]
        if seed_nodes is None:
            seed_nodes = torch.arange(x.size(0), device=x.device)
        if x.is_cuda and not torch.compiler.is_compiling() and \
                not torch.cuda.is_current_stream_capturing():
            # Seeds out of range on a GPU, found by the kernel in an earlier
            # step (see the class docstring, "Seeds out of range").
            self._errors.check()
            out = self._train_step(x, edge_index, seed_nodes)
            self._errors.arm(x.device)
            return out
        return self._train_step(x, edge_index, seed_nodes)

    def _train_step(self, x: Tensor, edge_index, seed_nodes: Tensor) -> Tensor:
        # Under autocast the step computes in its dtype: the aggregations
        # are cast before they are concatenated, so no full-precision copy
        # of them stays alive.
        dtype = (torch.get_autocast_dtype(x.device.type)
                 if torch.is_autocast_enabled(x.device.type) else x.dtype)
        if torch.compiler.is_compiling():
            return self._compiled_step(x, edge_index, seed_nodes, dtype)
        if not self._native_step():
            return self._traced_forward(x, edge_index, seed_nodes, dtype)
        colptr, row = as_csc(edge_index, x.size(0), x.size(0))
        return sage_tree(x, colptr, row, seed_nodes, self._params(),
                         self.num_neighbors, dtype, self.aggr, self.replace,
                         rng_key(self.generator), self.dropout,
                         bias=self.convs[0].lin_l.bias is not None,
                         replay=self.replay)

    def _native_step(self) -> bool:
        # The C++ step (ops.sage_tree) fuses ReLU and dropout into the tree
        # layers and takes every conv's [W_l, W_r(, b)].
        if not isinstance(self.act, torch.nn.ReLU):
            if not self._warned_python_step:
                self._warned_python_step = True
                warnings.warn(
                    f"FusedGraphSAGE: act={self.act} is not ReLU, so the "
                    f"eager training step runs through Python autograd "
                    f"instead of the native op (several times the host "
                    f"time per step; act='relu' or torch.compile avoid it)")
            return False
        return True

    def _compiled_step(self, x: Tensor, edge_index, seed_nodes: Tensor,
                       dtype: torch.dtype) -> Tensor:
        # Under torch.compile: the native step as two opaque ops (traced
        # through, it would be ~50 kernels launched one by one). A CPU
        # generator's keys are drawn on the host, which the ops do not take:
        # that model (and one with another activation) traces the Python
        # path.
        if self.generator is not None or \
                not isinstance(self.act, torch.nn.ReLU):
            return self._traced_forward(x, edge_index, seed_nodes, dtype)
        if isinstance(edge_index, Tensor) and \
                edge_index.layout == torch.strided:
            graph = [edge_index]  # (its CSC is looked up where the op runs)
        else:
            graph = list(as_csc(edge_index, x.size(0), x.size(0)))
        params = self._params()
        need = [x.requires_grad] + [p.requires_grad for p in params]
        return sage_tree_step(x, graph, seed_nodes, params,
                              self.num_neighbors, dtype, self.aggr,
                              self.replace, self.dropout,
                              self.convs[0].lin_l.bias is not None, need,
                              True)[0]

    def _params(self) -> List[Tensor]:
        params = []
        for conv in self.convs:
            params += [conv.lin_l.weight, conv.lin_r.weight]
            if conv.lin_l.bias is not None:
                params.append(conv.lin_l.bias)
        return params

    def _traced_forward(self, x: Tensor, edge_index, seed_nodes: Tensor,
                        dtype: torch.dtype) -> Tensor:
        r"""The training forward over torch ops and Python autograd Functions
        (what torch.compile traces; the same values as
        :func:`~pyg_fusesample.ops.sage_tree`)."""
        levels, aggs = self.sample_tree(x, edge_index, seed_nodes)
        # Layer 1 over levels 0..L-1: [aggr | root] rows times [W_1 | W_2],
        # without keeping the root rows (GatherLinear); padded slots read
        # row 0 and get weight 0 from their parents.
        agg = torch.cat([a.to(dtype) for a in aggs])
        del aggs
        conv = self.convs[0]
        # (clamped above too: a seed out of range on CUDA was reported by
        # the op's error word, and must not make the gather assert)
        h = GatherLinear.apply(agg, x,
                               torch.cat(levels).clamp(0, x.size(0) - 1),
                               conv.lin_l.weight, conv.lin_r.weight,
                               conv.lin_l.bias)
        del agg
        valid = child_slots(levels, self.num_neighbors)
        fused_act = isinstance(self.act, torch.nn.ReLU)
        for j in range(1, self.num_layers):
            # h: pre-activations of levels 0..L-j -> this layer's input
            if not fused_act:
                h = F.dropout(self.act(h), self.dropout, self.training)
            m = self.num_layers - j  # parent levels 0..m-1
            h, _ = TreeLayerInput.apply(h, valid[:m], self.num_neighbors[:m],
                                        self.aggr, fused_act, self.dropout)
            conv = self.convs[j]
            h = F.linear(h.to(dtype), _stacked_weight(conv).to(dtype),
                         conv.lin_l.bias.to(dtype)
                         if conv.lin_l.bias is not None else None)
        return h

    @torch.no_grad()
    def inference(self, x: Tensor, edge_index) -> Tensor:
        r"""Exact layer-wise full-neighbour evaluation of every node (as
        PyG's products example does, without the loader): one fused
        :math:`k = -1` aggregation per layer."""
        colptr, row = as_csc(edge_index, x.size(0), x.size(0))
        target = torch.arange(x.size(0), device=x.device)
        for j, conv in enumerate(self.convs):
            agg = sample_aggregate(colptr, row, x, target, -1, self.aggr,
                                   rng_seed=0).out
            x = conv.lin_l(agg) + conv.lin_r(x)
            if j < self.num_layers - 1:
                x = self.act(x)
        return x

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, '
                f'{self.out_channels}, num_layers={self.num_layers}, '
                f'num_neighbors={self.num_neighbors}, aggr={self.aggr})')


def _stacked_weight(conv: FusedSAGEConv) -> Tensor:
    # [W_1 | W_2]: one GEMM over [aggr | root] rows instead of two GEMMs
    # whose outputs would be alive together with their sum.
    return torch.cat([conv.lin_l.weight, conv.lin_r.weight], dim=1)
