"""FusedSAGEConv: SAGEConv whose neighbour sampling happens inside the
aggregation (FuseSampleAgg), with an exact backward."""
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing
from torch_geometric.nn.dense.linear import Linear

from ..ops.aggregate import REDUCTIONS, DeviceErrorWatch, sample_aggregate
from ..sampler.fused_neighbor_sampler import draw_rng_seeds
from .graph_input import as_csc


class FusedSAGEConv(MessagePassing):
    r"""The GraphSAGE operator of `"Inductive Representation Learning on Large
    Graphs" <https://arxiv.org/abs/1706.02216>`_, with neighbour sampling
    fused into the aggregation:

    .. math::
        \mathbf{x}^{\prime}_i = \mathbf{W}_1 \mathbf{x}_i + \mathbf{W}_2 \cdot
        \mathrm{aggr}_{j \in \mathcal{S}(i)} \mathbf{x}_j

    where in training :math:`\mathcal{S}(i)` holds up to
    :obj:`num_neighbors` in-neighbours of :math:`i` drawn uniformly without
    replacement (or with, :obj:`replace=True`) in the same pass that reduces
    their features -- no subgraph and no per-edge message tensor is built;
    in eval mode, or with :obj:`num_neighbors=-1`,
    :math:`\mathcal{S}(i) = \mathcal{N}(i)` and the layer computes exactly
    what :class:`torch_geometric.nn.conv.SAGEConv` computes. Gradients reach
    the weights and :math:`\mathbf{x}` (the saved draws are replayed).

    Parameter names match SAGEConv's (``lin_l`` aggregates, ``lin_r`` is the
    root weight), so state dicts load across.

    Args:
        in_channels (int or tuple): size of each input sample, or a pair of
            (source, target) sizes for bipartite graphs.
        out_channels (int): size of each output sample.
        num_neighbors (int, optional): neighbours drawn per target in
            training; ``-1`` aggregates all of them. (default: :obj:`10`)
        aggr (str, optional): ``"mean"``, ``"sum"`` (``"add"``) or ``"max"``.
            (default: :obj:`"mean"`)
        normalize (bool, optional): :math:`\ell_2`-normalise the output.
            (default: :obj:`False`)
        root_weight (bool, optional): add the transformed root features.
            (default: :obj:`True`)
        bias (bool, optional): learn an additive bias in ``lin_l``.
            (default: :obj:`True`)
        replace (bool, optional): draw with replacement. (default:
            :obj:`False`)
        generator (torch.Generator, optional): a CPU generator for the
            per-call RNG keys. By default the op draws its key from PyTorch's
            generator of the device (``torch.manual_seed`` makes training
            repeatable) inside the kernel on CUDA, so a training step with
            this layer can be captured in a CUDA graph.
        **kwargs (optional): arguments of
            :class:`torch_geometric.nn.conv.MessagePassing`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})` or
          :math:`((|\mathcal{V_s}|, F_{s}), (|\mathcal{V_t}|, F_{t}))`,
          edge indices :math:`(2, |\mathcal{E}|)` (or a ``SparseTensor`` /
          CSR ``adj_t`` of shape :math:`(|\mathcal{V_t}|, |\mathcal{V_s}|)`),
          optional target nodes :math:`(T)` (ids of target nodes; unlike
          the op, the layer takes no ``-1`` padding)
        - **output:** node features :math:`(T, F_{out})`, with :math:`T` all
          target nodes unless ``target`` is given
    """
    def __init__(
        self,
        in_channels: Union[int, Tuple[int, int]],
        out_channels: int,
        num_neighbors: int = 10,
        aggr: str = 'mean',
        normalize: bool = False,
        root_weight: bool = True,
        bias: bool = True,
        replace: bool = False,
        generator: Optional[torch.Generator] = None,
        **kwargs,
    ):
        aggr = 'sum' if aggr == 'add' else aggr
        if aggr not in REDUCTIONS:
            raise ValueError(f"FusedSAGEConv: 'aggr' must be one of "
                             f"{REDUCTIONS} (or 'add'), got {aggr!r}")
        if int(num_neighbors) < -1:
            raise ValueError(f"FusedSAGEConv: 'num_neighbors' must be >= 0 "
                             f"or -1 (all), got {num_neighbors}")
        super().__init__(aggr=aggr, **kwargs)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_neighbors = int(num_neighbors)
        self.normalize = normalize
        self.root_weight = root_weight
        self.replace = replace
        self.generator = generator
        self._errors = DeviceErrorWatch('FusedSAGEConv', 'target')
        if isinstance(in_channels, int):
            in_channels = (in_channels, in_channels)
        self.lin_l = Linear(in_channels[0], out_channels, bias=bias)
        if self.root_weight:
            self.lin_r = Linear(in_channels[1], out_channels, bias=False)
        self.reset_parameters()

    def reset_parameters(self):
        super().reset_parameters()
        self.lin_l.reset_parameters()
        if self.root_weight:
            self.lin_r.reset_parameters()

    def sampling(self) -> bool:
        r"""Whether a call draws neighbours (training with ``k >= 0``)."""
        return self.training and self.num_neighbors >= 0

    def aggregate_sampled(self, x: Tensor, edge_index, target: Optional[Tensor],
                          num_dst: int, level: int = 0,
                          rng_seed: Optional[int] = None):
        r"""The fused op: ``(aggregated, nbr)`` with :obj:`nbr` the draws."""
        colptr, row = as_csc(edge_index, x.size(0), num_dst)
        if target is None:
            target = torch.arange(num_dst, device=x.device)
        k = self.num_neighbors if self.sampling() else -1
        if rng_seed is None:  # eval / k = -1 draws nothing: RNG untouched
            rng_seed = rng_key(self.generator) if k >= 0 else 0
        out = sample_aggregate(colptr, row, x, target, k, self.aggr,
                               self.replace, rng_seed, level)
        return out.out, out.nbr

    def forward(self, x: Union[Tensor, Tuple[Tensor, Optional[Tensor]]],
                edge_index, target: Optional[Tensor] = None) -> Tensor:
        if isinstance(x, Tensor):
            x = (x, x)
        x_src, x_dst = x
        num_dst = x_dst.size(0) if x_dst is not None else x_src.size(0)
        watch = target is not None and x_src.is_cuda and \
            not torch.compiler.is_compiling() and \
            not torch.cuda.is_current_stream_capturing()
        if target is not None:
            _check_target(target, x_src.device)
            if watch:
                # A target out of range, found by the CUDA kernel in an
                # earlier call (no host sync; see FusedGraphSAGE's
                # "Seeds out of range"); the CPU op raises at once.
                self._errors.check()
        agg, _ = self.aggregate_sampled(x_src, edge_index, target, num_dst)
        if watch:
            self._errors.arm(x_src.device)
        out = self.lin_l(agg)
        if self.root_weight and x_dst is not None:
            if target is not None:
                # (in bounds for the gather: an id out of range was reported
                # above, and must not make the index assert on a GPU)
                n = x_dst.size(0)
                x_dst = x_dst[target.clamp(-n, n - 1) if n else target]
            out = out + self.lin_r(x_dst)
        if self.normalize:
            out = F.normalize(out, p=2., dim=-1)
        return out

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, '
                f'{self.out_channels}, num_neighbors={self.num_neighbors}, '
                f'aggr={self.aggr})')


def rng_key(generator: Optional[torch.Generator]) -> int:
    r"""The op's ``rng_seed``: drawn from :obj:`generator` if given, else
    ``-1`` (the op draws from the device's default generator; no host work,
    CUDA-graph safe)."""
    return -1 if generator is None else draw_rng_seeds(1, generator)[0]


def _check_target(target: Tensor, device: torch.device,
                  name: str = 'target'):
    if not isinstance(target, Tensor) or target.dim() != 1 \
            or target.dtype != torch.long:
        raise ValueError(f"'{name}' must be a 1-D int64 tensor of node ids")
    if target.device != device:
        raise ValueError(f"'{name}' is on {target.device} but 'x' is on "
                         f"{device}")
