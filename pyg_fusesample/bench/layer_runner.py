"""Mini-batch conv layers against PyG's: the model step on pre-sampled
batches, beside a floor derived from each batch.

``python -m pyg_fusesample.bench layers`` writes one row per (graph, model,
dtype, variant, round) to a CSV of its own schema
(:data:`.csv_schema.LAYER_COLUMNS`), appended as each setting (graph, model,
dtype) finishes, and a markdown table next to it.

The step: forward + cross-entropy on the seeds + backward + AdamW step
(``lr=1e-3``; ``fused=True`` on a GPU, for every variant), on
``--batches`` (8) batches sampled once with
:class:`~pyg_fusesample.FusedNeighborLoader` (batch size 1024, shuffled,
``seed``) and kept on the device, cycled. No loader runs in the timed loop.
Each batch's ``EdgeIndex`` / ``SparseTensor`` is made once and kept, so what
those objects cache (torch_sparse's CSC of ``adj_t``, EdgeIndex's
transposes), like our layers' per-batch layouts, is reused when a batch
comes round again, as in the ``model-only`` floor of ``bench step``. Where
torch_scatter has no CUDA kernels (the GPU machine's wheel), PyG runs its
torch-native scatter and segment ops, as it does without torch_scatter.

Models (all built with ``torch.manual_seed(seed)``; every variant of a
setting starts from the same weights and sees the same batches):

* ``sage``: ``torch_geometric.nn.models.GraphSAGE`` (3 layers, hidden 256,
  fan-out [15, 10, 5]) on a homogeneous graph.
* ``gat``: ``torch_geometric.nn.models.GAT`` (3 layers, 4 heads of 64,
  the last layer's heads averaged, fan-out [15, 10, 5]).
* ``rgcn``: two ``RGCNConv`` layers (hidden 128, no bases; ReLU between)
  on mag-like made homogeneous (``HeteroData.to_homogeneous()``: its 7 edge
  types are ``edge_type``, seeds the train papers), fan-out [15, 10];
  the ``pyg-fast*`` variants load the same weights into ``FastRGCNConv``.
  ``rgcn-bases`` is the same with ``num_bases=4`` (not in the default list).
* ``hetero-sage``: ``to_hetero`` of SAGEConv((-1, -1)) layers (2 layers,
  hidden 256, ``aggr='sum'``, ReLU between) on mag-like, fan-out [15, 10],
  loss on the paper seeds. One ``to_hetero`` module per layer, so that
  PyG's heterogeneous ``trim_to_layer`` can run between them (``to_hetero``
  of BasicGNN passes its trimming module (type, type) tuples and fails);
  the per-layer modules hold the same parameters and compute the same as
  ``to_hetero`` of the whole model.

Graphs (``--graphs``; SYNTHETIC, ``pyg_fusesample.datasets`` at
``--scale``): ``sage`` and ``gat`` run on the homogeneous ones (products-,
Reddit- and arXiv-like by default: arXiv-like is directed and sparse, an
average in-degree of 6.9, so most fan-outs are not filled), ``rgcn`` and
``hetero-sage`` on ``mag``.

Variants (``--variants``; those a model has, in turn, round after round):

* ``pyg``: PyG's model on the batch's ``edge_index`` (no trimming).
* ``pyg-trim``: the same with ``num_sampled_nodes_per_hop`` /
  ``num_sampled_edges_per_hop`` (BasicGNN's ``trim_to_layer``; the
  ``rgcn`` and ``hetero-sage`` models call ``trim_to_layer`` themselves, the
  latter with PyG's per-type dictionaries).
* ``pyg-trim-edgeindex``: trimmed, on a ``torch_geometric.EdgeIndex`` of the
  batch (sorted by target, ``sparse_size`` set), made once per batch.
* ``pyg-trim-sparse``: trimmed, on a torch_sparse ``SparseTensor`` ``adj_t``
  (``edge_type`` as its value for ``rgcn``), made once per batch; on CUDA
  only with a torch_sparse that has CUDA kernels
  (benchmarks/device/build_scatter_sparse.sh), else a row noted
  ``unsupported: ...``.
* ``pyg-fast``, ``pyg-fast-trim`` (``rgcn`` only): PyG's ``FastRGCNConv``.
* ``fused``: ``pyg_fusesample.nn.to_fused(copy.deepcopy(model))``, called as
  ``pyg-trim`` is (the batch's own ``edge_index``, as the loader made it).
* ``fused-compiled``: ``torch.compile(fullgraph=True)`` of that model
  (default mode; the optimizer step stays eager); compilation happens in
  the row's first step (``first_step_ms``). A failure is a row note.
* ``fused-captured``: the ``fused`` model's whole step (forward, loss,
  backward, AdamW with ``capturable=True``) captured in a CUDA graph by
  :class:`~pyg_fusesample.nn.CapturedBatchStep` and replayed per batch,
  each batch first padded into the graph's inputs (per-hop capacities: the
  first batch's counts + 10%, grown with a new capture if a batch does not
  fit; the padding's copies of ``x``, ``y`` and ``edge_type``, the
  attributes the step reads, are in the timed step). CUDA only; the note
  gives the captures and the padded size.
* ``fused-captured-unbranched``: ``fused-captured`` with
  ``CapturedBatchStep(branch_backward=False)`` (the whole step on one
  stream: the layers' parameter gradients are not forked onto a second
  stream of the graph), for an A/B against ``fused-captured`` in the same
  rounds.
* ``fused-compiled-captured``: both: the compiled model's step captured
  (the compiler's fused kernels replayed without launch cost; compiled in
  the capture's eager warm-up steps, on the padded batch's fixed shapes).

Without ``to_fused`` the fused variants give rows noted ``skipped: ...``; a
variant that raises gives a row noted ``error: ...`` and the run goes on.

Dtypes (``--dtypes``): ``float32``, and ``bfloat16`` = ``torch.autocast``
with bf16 (features and weights stay float32).

Timing: :func:`.timing.timed_calls` (the device synchronised around every
step), the median of ``--steps`` (30) steps after ``--warmup`` (8: every
batch once) untimed ones; in round 0 one more step comes first, timed alone
(``first_step_ms``). Peak memory is reset before the timed steps
(``transient_mem_mb`` = peak - allocated before them; the other variants'
models and optimizer states are allocated too). ``execution`` says eager,
compiled or captured (``fused-captured``: its first step,
``first_step_ms``, includes the capture).

The floor of a row (the same for every variant of a setting; the mean over
the cycled batches): for layer ``l`` of ``L`` the trimmed batch has
``N_src`` = the nodes of hops ``0..L-l``, ``N_dst`` = those of hops
``0..L-l-1`` and ``E`` = the edges of hops ``1..L-l``;

* bytes = per layer: gathers ``E x F_msg x b`` once forward and, where the
  gathered rows need a gradient, once backward (``F_msg``: the layer's input
  width for SAGE and RGCN, its heads x channels for GAT, whose messages are
  projected features), plus node rows: ``N_src x F_in`` read and
  ``N_dst x F_out`` written forward, ``N_dst x F_out`` read and (but in the
  first layer, whose input needs no gradient) ``N_src x F_in`` written
  backward. ``b`` is 4 bytes (float32) or 2 (bf16), the first layer's input
  read at its own 4.
* FLOPs = the GEMMs, forward + weight gradients + (but in the first layer)
  input gradients: SAGE ``2 x (2 N_dst F_in F_out)`` (lin_l, lin_r); GAT
  ``2 N_src F_in (heads x channels)``; RGCN ``2 P F_in F_out`` over the ``P``
  distinct (target, relation) pairs + the root's ``2 N_dst F_in F_out``;
  hetero SAGE lin_l per edge type over its distinct targets and one lin_r
  per destination type (the edge types' lin_r of a type add up to one).
* ``floor_ms`` = bytes / the bandwidth of a large device copy (read + write)
  + FLOPs / the throughput of a large matmul in the row's dtype, both
  measured at the start of the run (``bandwidth_gbps``, ``gemm_tflops``);
  ``ratio_to_floor`` = ``step_ms / floor_ms``.

``vs_pyg`` and ``vs_best_pyg``: the ``pyg`` row's / the fastest PyG row's
(``best_pyg``) step time over the row's, same setting and round (> 1:
faster than PyG). The markdown holds the issue's targets against the
fused rows (:data:`TARGETS`).
"""
import contextlib
import copy
import itertools
import os
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from ..environment import device_name, host_cpu, versions
from .csv_schema import LAYER_COLUMNS, append_rows, read_rows
from .graph_runs import for_each_graph, write_markdown
from .spmm_runner import copy_bandwidth
from .timing import (event_timed_calls, median, peak_memory_columns,
                     peak_memory_start, timed_calls, warm_up_device)

MODELS = ('sage', 'gat', 'rgcn', 'rgcn-bases', 'hetero-sage')
DEFAULT_MODELS = ('sage', 'gat', 'rgcn', 'hetero-sage')
PYG_VARIANTS = ('pyg', 'pyg-trim', 'pyg-trim-edgeindex', 'pyg-trim-sparse',
                'pyg-fast', 'pyg-fast-trim')
FUSED_VARIANTS = ('fused', 'fused-compiled', 'fused-captured',
                  'fused-captured-unbranched', 'fused-compiled-captured')
COMPILED_VARIANTS = ('fused-compiled', 'fused-compiled-captured')
CAPTURED_VARIANTS = ('fused-captured', 'fused-captured-unbranched',
                     'fused-compiled-captured')
VARIANTS = PYG_VARIANTS + FUSED_VARIANTS
DTYPES = {'float32': torch.float32, 'bfloat16': torch.bfloat16}
DEFAULT_GRAPHS = ('products', 'mag', 'reddit', 'arxiv')
# The targets: the fused row's speed-up over a PyG row ('best': the
# fastest PyG variant of the setting).
TARGETS = {'sage': (('pyg', 5.0), ('best', 2.0)), 'gat': (('pyg', 3.0), ),
           'rgcn': (('pyg', 4.0), ('pyg-fast', 4.0)),
           'rgcn-bases': (('pyg', 4.0), ('pyg-fast', 4.0)),
           'hetero-sage': (('pyg', 4.0), )}


class Spec:
    """A model of the benchmark: its fan-out, hidden width (``--hidden``
    overrides it) and which graph."""
    def __init__(self, fanout, hidden: int, hetero_graph: bool,
                 heads: int = 1, num_bases: Optional[int] = None):
        self.fanout, self.hidden, self.heads = list(fanout), hidden, heads
        self.hetero_graph, self.num_bases = hetero_graph, num_bases
        self.layers = len(self.fanout)


SPECS = {
    'sage': Spec((15, 10, 5), 256, False),
    'gat': Spec((15, 10, 5), 256, False, heads=4),
    'rgcn': Spec((15, 10), 128, True),
    'rgcn-bases': Spec((15, 10), 128, True, num_bases=4),
    'hetero-sage': Spec((15, 10), 256, True),
}


def _variants_of(model: str) -> Tuple[str, ...]:
    if model.startswith('rgcn'):
        return VARIANTS
    return tuple(v for v in VARIANTS if not v.startswith('pyg-fast'))


# Models #####################################################################

class RGCN(torch.nn.Module):
    """``RGCNConv`` (or ``FastRGCNConv``) layers with ReLU between, trimmed
    by PyG's ``trim_to_layer`` when given the per-hop counts (``edge_type``
    trimmed with the edges; a ``SparseTensor`` carries it as its value)."""
    def __init__(self, in_channels: int, hidden: int, out_channels: int,
                 num_relations: int, num_layers: int = 2,
                 num_bases: Optional[int] = None, fast: bool = False):
        super().__init__()
        from torch_geometric.nn import FastRGCNConv, RGCNConv
        conv = FastRGCNConv if fast else RGCNConv
        widths = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(
            conv(a, b, num_relations, num_bases=num_bases)
            for a, b in zip(widths, widths[1:]))

    def forward(self, x, edge_index, edge_type=None,
                num_sampled_nodes_per_hop=None,
                num_sampled_edges_per_hop=None):
        from torch_geometric.utils import trim_to_layer
        for i, conv in enumerate(self.convs):
            if num_sampled_nodes_per_hop is not None:
                x, edge_index, edge_type = trim_to_layer(
                    i, num_sampled_nodes_per_hop, num_sampled_edges_per_hop,
                    x, edge_index, edge_type)
            x = conv(x, edge_index, edge_type)
            if i < len(self.convs) - 1:
                x = x.relu()
        return x


class _SAGELayer(torch.nn.Module):
    # One lazy SAGEConv((-1, -1)) (+ ReLU): what to_hetero makes per type.
    def __init__(self, out_channels: int, relu: bool):
        super().__init__()
        from torch_geometric.nn import SAGEConv
        self.conv = SAGEConv((-1, -1), out_channels)
        self.relu = relu

    def forward(self, x, edge_index):
        x = self.conv(x, edge_index)
        return x.relu() if self.relu else x


class HeteroSAGE(torch.nn.Module):
    """``to_hetero`` SAGE, one heterogeneous module per layer (module
    docstring), trimmed between layers by PyG's heterogeneous
    ``trim_to_layer`` when given the per-type per-hop counts."""
    def __init__(self, metadata, hidden: int, out_channels: int,
                 num_layers: int):
        super().__init__()
        from torch_geometric.nn import to_hetero
        widths = [hidden] * (num_layers - 1) + [out_channels]
        self.layers = torch.nn.ModuleList(
            to_hetero(_SAGELayer(w, i < num_layers - 1), metadata,
                      aggr='sum') for i, w in enumerate(widths))

    def forward(self, x_dict, edge_index_dict,
                num_sampled_nodes_per_hop=None,
                num_sampled_edges_per_hop=None):
        from torch_geometric.utils import trim_to_layer
        for i, layer in enumerate(self.layers):
            if num_sampled_nodes_per_hop is not None:
                x_dict, edge_index_dict, _ = trim_to_layer(
                    i, num_sampled_nodes_per_hop, num_sampled_edges_per_hop,
                    x_dict, edge_index_dict)
            x_dict = layer(x_dict, edge_index_dict)
        return x_dict


# Batches ####################################################################

def _sorted_by_target(edge_index: torch.Tensor) -> bool:
    col = edge_index[1]
    return col.numel() < 2 or bool((col[1:] >= col[:-1]).all())


def _edge_index_obj(ei, num_src: int, num_dst: int, edge_type=None):
    """(EdgeIndex sorted by target with its sparse size, edge_type in its
    order). The fused loaders' batches are sorted already (no copy); any
    other is sorted stably, which keeps the hops in order."""
    from torch_geometric import EdgeIndex
    if not _sorted_by_target(ei):
        perm = torch.sort(ei[1], stable=True).indices
        ei = ei[:, perm]
        edge_type = None if edge_type is None else edge_type[perm]
    return (EdgeIndex(ei, sparse_size=(num_src, num_dst), sort_order='col'),
            edge_type)


def _adj_t(ei, num_src: int, num_dst: int, value=None):
    from torch_geometric.typing import SparseTensor
    return SparseTensor(row=ei[1], col=ei[0], value=value,
                        sparse_sizes=(num_dst, num_src))


class Batch:
    """One pre-sampled batch and the inputs each variant calls the model
    with, made once (outside the timed loop) and kept."""
    def __init__(self, batch, node_type: Optional[str] = None):
        self.batch, self.node_type = batch, node_type
        self.hetero = node_type is not None
        if self.hetero:
            store = batch[node_type]
            self.x, self.edge_index = batch.x_dict, batch.edge_index_dict
            self.nsn = batch.num_sampled_nodes_dict
            self.nse = batch.num_sampled_edges_dict
        else:
            store = batch
            self.x, self.edge_index = batch.x, batch.edge_index
            self.nsn = list(batch.num_sampled_nodes)
            self.nse = list(batch.num_sampled_edges)
        self.edge_type = getattr(batch, 'edge_type', None)
        self.y = store.y[:store.batch_size]
        self._graphs: Dict[str, object] = {}

    @property
    def trim(self) -> Dict:
        return {'num_sampled_nodes_per_hop': self.nsn,
                'num_sampled_edges_per_hop': self.nse}

    def _num_nodes(self, node_type=None) -> int:
        if node_type is None:
            return self.batch.num_nodes
        return self.batch[node_type].num_nodes

    def graph(self, kind: str):
        """The adjacency of ``kind`` ('edge_index', 'edgeindex', 'sparse'):
        ``(adjacency, edge_type)``; dictionaries on a heterogeneous batch."""
        if kind == 'edge_index':
            return self.edge_index, self.edge_type
        if kind not in self._graphs:
            if self.hetero:
                out = {}
                for et, ei in self.edge_index.items():
                    ns, nd = self._num_nodes(et[0]), self._num_nodes(et[-1])
                    out[et] = (_edge_index_obj(ei, ns, nd)[0]
                               if kind == 'edgeindex' else _adj_t(ei, ns, nd))
                self._graphs[kind] = (out, None)
            else:
                n = self._num_nodes()
                self._graphs[kind] = (
                    _edge_index_obj(self.edge_index, n, n, self.edge_type)
                    if kind == 'edgeindex' else
                    (_adj_t(self.edge_index, n, n, self.edge_type), None))
        return self._graphs[kind]


def _graph_kind(variant: str) -> str:
    return {'pyg-trim-edgeindex': 'edgeindex',
            'pyg-trim-sparse': 'sparse'}.get(variant, 'edge_index')


def model_call(model: str, variant: str, b: Batch) -> Tuple[tuple, Dict]:
    """(args, kwargs) of the model's call on ``b`` for ``variant``."""
    graph, edge_type = b.graph(_graph_kind(variant))
    kwargs = {} if variant in ('pyg', 'pyg-fast') else b.trim
    if model.startswith('rgcn'):
        return (b.x, graph, edge_type), kwargs
    return (b.x, graph), kwargs


# Floors #####################################################################

def _layer_counts(nsn: List[int], nse: List[int], num_layers: int):
    """Per layer ``l``: (N_src, N_dst, E) of the trimmed batch (module
    docstring)."""
    return [(sum(nsn[:num_layers - l + 1]), sum(nsn[:num_layers - l]),
             sum(nse[:num_layers - l])) for l in range(num_layers)]


def _distinct(keys: torch.Tensor) -> int:
    return int(torch.unique(keys).numel()) if keys.numel() else 0


def _node_bytes(l: int, n_src: int, n_dst: int, f_in: int, f_out: int,
                b_in: int, b: int) -> int:
    # Forward: read the inputs, write the outputs; backward: read the
    # output gradient and, past the first layer, write the input gradient.
    out = n_src * f_in * b_in + 2 * n_dst * f_out * b
    return out + (n_src * f_in * b if l > 0 else 0)


def _passes(l: int) -> int:
    # GEMM passes: forward + weight gradient (+ input gradient past layer 0)
    return 3 if l > 0 else 2


def batch_floor(model: str, spec: Spec, b: Batch, widths: List[int],
                x_bytes: int, b_bytes: int) -> Tuple[float, float]:
    """(bytes, FLOPs) of the floor of one step of ``model`` on ``b``
    (module docstring); ``widths``: the layers' input widths then the
    output width; ``b_bytes``: bytes of an element in the compute dtype."""
    L = spec.layers
    nbytes = flops = 0.0
    if b.edge_type is not None and b.edge_type.numel():
        num_relations = int(b.edge_type.max()) + 1
    if b.hetero:
        counts = {nt: _layer_counts(c, [0] * L, L) for nt, c in b.nsn.items()}
        for l in range(L):
            f_in, f_out = widths[l], widths[l + 1]
            b_in = x_bytes if l == 0 else b_bytes
            for nt in counts:
                n_src, n_dst, _ = counts[nt][l]
                nbytes += _node_bytes(l, n_src, n_dst, f_in, f_out, b_in,
                                      b_bytes)
                flops += _passes(l) * 2 * n_dst * f_in * f_out  # lin_r
            for et, ei in b.edge_index.items():
                e = sum(b.nse[et][:L - l])
                nbytes += e * f_in * b_in * (2 if l > 0 else 1)
                flops += _passes(l) * 2 * _distinct(ei[1, :e]) * f_in * f_out
        return nbytes, flops
    for l, (n_src, n_dst, e) in enumerate(_layer_counts(b.nsn, b.nse, L)):
        f_in, f_out = widths[l], widths[l + 1]
        b_in = x_bytes if l == 0 else b_bytes
        nbytes += _node_bytes(l, n_src, n_dst, f_in, f_out, b_in, b_bytes)
        if model == 'gat':
            last = l == L - 1
            msg = spec.heads * (f_out if last else f_out // spec.heads)
            nbytes += 2 * e * msg * b_bytes
            flops += _passes(l) * 2 * n_src * f_in * msg
        elif model.startswith('rgcn'):
            nbytes += e * f_in * b_in * (2 if l > 0 else 1)
            # distinct (target, relation) pairs of the layer's edges
            pairs = _distinct(b.edge_index[1, :e] * num_relations
                              + b.edge_type[:e])
            flops += _passes(l) * 2 * (pairs + n_dst) * f_in * f_out
        else:  # sage
            nbytes += e * f_in * b_in * (2 if l > 0 else 1)
            flops += _passes(l) * 2 * 2 * n_dst * f_in * f_out
    return nbytes, flops


def gemm_throughput(device: torch.device, dtype: torch.dtype) -> float:
    """FLOP/s of a large square matmul in ``dtype`` (8192 on a GPU, 512 on
    a CPU; the median of 5 after 2 warm-up ones), with the run's matmul
    precision settings (float32 without TF32 unless the user enabled it)."""
    n = 8192 if device.type == 'cuda' else 512
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=g, device=device).to(dtype)
    b = torch.randn(n, n, generator=g, device=device).to(dtype)
    ms = median(event_timed_calls(lambda: a @ b, 5, 2, device))
    return 2 * n ** 3 / (ms / 1e3)


# Rows #######################################################################

def _autocast(device: torch.device, dtype: torch.dtype, cache: bool = True):
    # (a step captured in a CUDA graph runs autocast without its cast cache,
    # as PyTorch's capture recipe requires)
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype, cache_enabled=cache)


def sparse_unsupported(device: torch.device) -> str:
    """Why the ``pyg-trim-sparse`` variant cannot run here ('' if it can)."""
    import torch_geometric.typing as pyg_typing
    if not pyg_typing.WITH_TORCH_SPARSE:
        return 'unsupported: torch_sparse is not importable'
    import torch_sparse
    if device.type == 'cuda' and torch.ops.torch_sparse.cuda_version() == -1:
        return (f'unsupported: torch_sparse {torch_sparse.__version__} has no '
                f'CUDA kernels (benchmarks/device/build_scatter_sparse.sh '
                f'builds them)')
    return ''


def fused_unsupported() -> str:
    """Why the fused variants cannot run here ('' if they can)."""
    try:
        from ..nn import to_fused  # noqa: F401
    except ImportError:
        return 'skipped: pyg_fusesample.nn.to_fused is not available'
    return ''


def _scatter_without_cuda(device: torch.device) -> None:
    # A torch_scatter without CUDA kernels (the GPU machine's wheel) would
    # fail PyG's segment/scatter paths on CUDA tensors; PyG then uses
    # torch's own ops instead, as it does when torch_scatter is absent.
    try:
        import torch_geometric.typing as pyg_typing
        if (device.type == 'cuda' and pyg_typing.WITH_TORCH_SCATTER
                and torch.ops.torch_scatter.cuda_version() == -1):
            pyg_typing.WITH_TORCH_SCATTER = False
            print('(torch_scatter has no CUDA kernels: PyG runs its '
                  'torch-native scatter instead)', flush=True)
    except (ImportError, AttributeError, RuntimeError):
        pass


def execution_of(variant: str) -> str:
    """The ``execution`` column: eager, compiled, captured or
    compiled+captured."""
    modes = [m for m, vs in (('compiled', COMPILED_VARIANTS),
                             ('captured', CAPTURED_VARIANTS)) if variant in vs]
    return '+'.join(modes) or 'eager'


# fused-captured: room per hop beyond the first batch's counts
CAPTURE_MARGIN = 0.1


class Run:
    """One variant's model, optimizer and per-batch calls."""
    def __init__(self, model_name: str, variant: str, model: torch.nn.Module,
                 batches: List[Batch], device: torch.device,
                 dtype: torch.dtype):
        self.model, self.device, self.dtype = model, device, dtype
        self.note = swapped_note(model) if variant in FUSED_VARIANTS else ''
        self.forward = model
        if variant in COMPILED_VARIANTS:
            torch._dynamo.reset()  # one compiled model at a time
            _dynamo_counters().clear()  # (the note counts this model's)
            self.forward = torch.compile(model, fullgraph=True)
        captured = variant in CAPTURED_VARIANTS
        # (fused on a GPU for every variant: one kernel a step, not a
        # foreach launch per parameter group and operation)
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3,
                                     capturable=captured,
                                     fused=device.type == 'cuda')
        self.calls = [model_call(model_name, variant, b) + (b, )
                      for b in batches]
        self.i = 0
        self.first_ms: Optional[float] = None
        self.captured = None
        if captured:
            from ..nn import CapturedBatchStep
            node_type = batches[0].node_type

            def padded_step(batch):
                b = Batch(batch, node_type)
                args, kwargs = model_call(model_name, variant, b)
                return self._loss_step(args, kwargs, b, cache=False)
            self.captured = CapturedBatchStep(
                padded_step, self.opt, margin=CAPTURE_MARGIN,
                attrs=['x', 'y', 'edge_type'],
                branch_backward=variant != 'fused-captured-unbranched')

    def step(self) -> None:
        args, kwargs, b = self.calls[self.i % len(self.calls)]
        self.i += 1
        if self.captured is not None:
            self.captured(b.batch)
            return
        self.opt.zero_grad(set_to_none=True)
        self._loss_step(args, kwargs, b)

    def _loss_step(self, args, kwargs, b, cache: bool = True):
        with _autocast(self.device, self.dtype, cache):
            out = self.forward(*args, **kwargs)
            if b.hetero:
                out = out[b.node_type]
            loss = F.cross_entropy(out[:b.y.numel()].float(), b.y)
        loss.backward()
        self.opt.step()
        return loss

    @property
    def capture_note(self) -> str:
        if self.captured is None:
            return ''
        cap = self.captured.padded.capacity
        rows = sum(sum(c) for c in cap.nodes.values())
        slots = sum(sum(c) for c in cap.edges.values())
        return (f'; CUDA graph: {self.captured.captures} capture(s), '
                f'padded to {rows} rows / {slots} edge slots '
                f'(margin {CAPTURE_MARGIN})')

    def time(self, steps: int, warmup: int) -> Dict:
        """The timed columns of one round (the first call: first_step_ms)."""
        dev = self.device
        row = {}
        if self.first_ms is None:
            self.first_ms = timed_calls(self.step, 1, 0, dev)[0]
            row['first_step_ms'] = f'{self.first_ms:.3f}'
        timed_calls(self.step, 0, warmup, dev)
        before = peak_memory_start(dev)
        ms = median(timed_calls(self.step, steps, 0, dev))
        row.update(step_ms=f'{ms:.3f}', **peak_memory_columns(dev, before))
        return row


def swapped_note(model: torch.nn.Module) -> str:
    """Which convs of a ``to_fused`` model are ours and which stayed PyG's:
    'to_fused: 3 of 3 convs ours (SAGEConv)', '...; PyG kept: GATConv'."""
    from torch_geometric.nn.conv import MessagePassing
    convs = [m for m in model.modules() if isinstance(m, MessagePassing)]
    ours = sorted({type(m).__name__ for m in convs
                   if type(m).__module__.startswith('pyg_fusesample.')})
    kept = sorted({type(m).__name__ for m in convs
                   if not type(m).__module__.startswith('pyg_fusesample.')})
    n = sum(type(m).__module__.startswith('pyg_fusesample.') for m in convs)
    note = f'to_fused: {n} of {len(convs)} convs ours'
    if ours:
        note += f" ({', '.join(ours)})"
    if kept:
        note += f"; PyG kept: {', '.join(kept)}"
    return note


def _error(e: BaseException) -> str:
    # The message's first line, and where torch.compile met the code it
    # could not trace (its 'Caused by:' line), if it says.
    lines = str(e).strip().splitlines() or ['']
    out = f'{type(e).__name__}: {lines[0][:240]}'
    cause = [x for x in lines if x.startswith('Caused by:')]
    return out + (f' ({cause[0][:240]})' if cause else '')


class Graph:
    """A benchmark graph on the device and the batches of its models."""
    def __init__(self, label: str, data, device: torch.device, args):
        from torch_geometric.data import HeteroData
        self.label, self.data, self.device = label, data, device
        self.args = args
        self.hetero = isinstance(data, HeteroData)
        self._dev: Dict[str, object] = {}
        self._batches: Dict[tuple, List[Batch]] = {}

    def applies(self, model: str) -> bool:
        return SPECS[model].hetero_graph == self.hetero

    def hidden(self, model: str) -> int:
        return getattr(self.args, 'hidden', None) or SPECS[model].hidden

    def _homogeneous_mag(self):
        # The HeteroData as one graph with node_type / edge_type; labels
        # and the train mask of the labelled type (others: 0 / False).
        from .runner import _node_type
        d = self.data
        nt = _node_type(d)
        hom = d.to_homogeneous(node_attrs=['x'])
        is_nt = hom.node_type == d.node_types.index(nt)
        hom.y = torch.zeros(hom.num_nodes, dtype=torch.long)
        hom.y[is_nt] = d[nt].y
        hom.train_mask = torch.zeros(hom.num_nodes, dtype=torch.bool)
        hom.train_mask[is_nt] = d[nt].train_mask
        return hom

    def data_for(self, model: str):
        """(data on the device, graph label, node type of the seeds)."""
        key = 'homogeneous' if model.startswith('rgcn') else 'native'
        if key not in self._dev:
            data = (self._homogeneous_mag() if key == 'homogeneous'
                    else copy.copy(self.data))
            self._dev[key] = data.to(self.device)
        label = self.label + ('/homogeneous' if key == 'homogeneous' else '')
        from .runner import _node_type
        nt = _node_type(self.data) if key == 'native' and self.hetero else None
        return self._dev[key], label, nt

    def batches(self, model: str) -> List[Batch]:
        from ..loader import FusedNeighborLoader
        spec = SPECS[model]
        data, _, nt = self.data_for(model)
        key = (model.startswith('rgcn'), tuple(spec.fanout))
        if key not in self._batches:
            seeds = (nt, data[nt].train_mask) if nt else data.train_mask
            loader = FusedNeighborLoader(
                data, num_neighbors=spec.fanout,
                batch_size=self.args.batch_size, input_nodes=seeds,
                shuffle=True, seed=self.args.seed, prefetch=False)
            it = iter(loader)
            self._batches[key] = [Batch(b, nt) for b in itertools.islice(
                it, self.args.batches)]
        return self._batches[key]

    def base_model(self, model: str, batches: List[Batch]) -> torch.nn.Module:
        from torch_geometric.nn.models import GAT, GraphSAGE
        spec = SPECS[model]
        data, _, nt = self.data_for(model)
        y = data[nt].y if nt else data.y
        classes, hidden = int(y.max()) + 1, self.hidden(model)
        torch.manual_seed(self.args.seed)
        if model == 'sage':
            m = GraphSAGE(data.num_features, hidden, spec.layers,
                          out_channels=classes)
        elif model == 'gat':
            m = GAT(data.num_features, hidden, spec.layers,
                    out_channels=classes, heads=spec.heads)
        elif model.startswith('rgcn'):
            m = RGCN(data.num_features, hidden, classes,
                     int(data.edge_type.max()) + 1, spec.layers,
                     num_bases=spec.num_bases)
        else:
            m = HeteroSAGE(data.metadata(), hidden, classes, spec.layers)
        m = m.to(self.device)
        if model == 'hetero-sage':  # lazy layers: shapes from one batch
            with torch.no_grad():
                m(batches[0].x, batches[0].edge_index)
        return m

    def widths(self, model: str) -> List[int]:
        spec = SPECS[model]
        data, _, nt = self.data_for(model)
        x = (data[nt].x if nt else data.x)
        y = data[nt].y if nt else data.y
        return [x.size(1)] + [self.hidden(model)] * (spec.layers - 1) + [
            int(y.max()) + 1]


def _variant_model(model: str, variant: str, base: torch.nn.Module,
                   g: Graph) -> torch.nn.Module:
    if variant.startswith('pyg-fast'):
        spec = SPECS[model]
        w = g.widths(model)
        data = g.data_for(model)[0]
        fast = RGCN(w[0], g.hidden(model), w[-1],
                    int(data.edge_type.max()) + 1, spec.layers,
                    num_bases=spec.num_bases, fast=True)
        fast.load_state_dict(base.state_dict())
        return fast.to(g.device)
    if variant in FUSED_VARIANTS:
        from ..nn import to_fused
        return to_fused(copy.deepcopy(base))
    return copy.deepcopy(base)


def _unsupported(variant: str, device: torch.device) -> str:
    if variant == 'pyg-trim-sparse':
        return sparse_unsupported(device)
    if variant in CAPTURED_VARIANTS and device.type != 'cuda':
        return 'unsupported: CUDA graph capture needs a CUDA device'
    if variant in FUSED_VARIANTS:
        return fused_unsupported()
    return ''


def setting_rows(g: Graph, model: str, dname: str, variants: List[str],
                 args, bandwidth: float, gemm: Dict[str, float],
                 spent: Optional[Dict[str, float]] = None) -> List[Dict]:
    """The rows of one (graph, model, dtype): every variant, round after
    round. ``spent['compile_s']``: the seconds the run's compiled variants
    took so far in their first steps (``--compile-budget-s``)."""
    spent = {'compile_s': 0.0} if spent is None else spent
    budget = getattr(args, 'compile_budget_s', None)
    spec, dev, dtype = SPECS[model], g.device, DTYPES[dname]
    data, label, nt = g.data_for(model)
    batches = g.batches(model)
    x = data[nt].x if nt else data.x
    floors = [batch_floor(model, spec, b, g.widths(model), x.element_size(),
                          torch.finfo(dtype).bits // 8) for b in batches]
    nbytes = sum(f[0] for f in floors) / len(floors)
    flops = sum(f[1] for f in floors) / len(floors)
    floor_ms = (nbytes / bandwidth + flops / gemm[dname]) * 1e3

    def mean(fn):
        return sum(fn(b) for b in batches) / len(batches)

    layer_edges = mean(lambda b: sum(
        sum(sum(c[:spec.layers - l]) for c in
            (b.nse.values() if b.hetero else [b.nse]))
        for l in range(spec.layers)))
    base_row = {
        'device': device_name(dev), **versions(), 'host_cpu': host_cpu(),
        'graph': label,
        'num_nodes': data.num_nodes, 'num_edges': data.num_edges,
        'model': model, 'layers': spec.layers,
        'hidden': g.hidden(model), 'fanout': '-'.join(map(str, spec.fanout)),
        'batch_size': args.batch_size, 'batches': len(batches),
        'dtype': dname, 'steps': args.steps, 'warmup': args.warmup,
        'batch_nodes': f'{mean(lambda b: b.batch.num_nodes):.0f}',
        'batch_edges': f'{mean(lambda b: b.batch.num_edges):.0f}',
        'layer_edges': f'{layer_edges:.0f}',
        'floor_mb': f'{nbytes / 2**20:.2f}',
        'floor_gflop': f'{flops / 1e9:.3f}',
        'bandwidth_gbps': f'{bandwidth / 1e9:.1f}',
        'gemm_tflops': f'{gemm[dname] / 1e12:.2f}',
        'floor_ms': f'{floor_ms:.4f}',
    }
    base = g.base_model(model, batches)
    runs: Dict[str, object] = {}
    for v in variants:
        note = _unsupported(v, dev)
        if (not note and v in COMPILED_VARIANTS and budget is not None
                and spent['compile_s'] >= budget):
            note = (f"skipped: the run's compiled rows took "
                    f"{spent['compile_s']:.0f} s >= --compile-budget-s "
                    f"{budget:g}")
        if not note:
            try:
                runs[v] = Run(model, v, _variant_model(model, v, base, g),
                              batches, dev, dtype)
                continue
            except Exception as e:  # noqa: BLE001 (a row note, run goes on)
                note = f'error: {_error(e)}'
        runs[v] = note
    rows = []
    for rnd, v in itertools.product(range(args.rounds), variants):
        run = runs[v]
        row = dict(base_row, variant=v, round=rnd, execution=execution_of(v))
        if isinstance(run, Run):
            t0 = time.perf_counter()
            try:
                row.update(run.time(args.steps, args.warmup))
                ratio = float(row['step_ms']) / floor_ms
                row['ratio_to_floor'] = f'{ratio:.2f}'
                row['note'] = run.note + run.capture_note
                if v in COMPILED_VARIANTS:
                    row['note'] += f'; {_compile_note()}'
            except Exception as e:  # noqa: BLE001
                what = ('compile failed' if v in COMPILED_VARIANTS
                        else 'error')
                runs[v] = run = f'{what}: {_error(e)}'
                if dev.type == 'cuda':
                    torch.cuda.empty_cache()
            if v in COMPILED_VARIANTS and rnd == 0:
                spent['compile_s'] += (
                    run.first_ms / 1e3 if isinstance(run, Run)
                    else time.perf_counter() - t0)
        if isinstance(run, str):
            if rnd > 0:
                continue  # the reason is in round 0's row
            row['note'] = run
        rows.append(row)
        print(f"{label} {model} {dname} {v:>18} round {rnd}: "
              f"{row.get('step_ms', '-')} ms (first "
              f"{row.get('first_step_ms', '-')} ms, floor {floor_ms:.3f} ms) "
              f"{row.get('note', '')}", flush=True)
    del runs, base
    fill_speedups(rows)
    return rows


def _dynamo_counters():
    from torch._dynamo.utils import counters
    return counters


def _compile_note() -> str:
    try:
        return (f"dynamo graphs: "
                f"{_dynamo_counters()['stats']['unique_graphs']}")
    except Exception:  # noqa: BLE001 (a note only)
        return ''


def fill_speedups(rows: List[Dict]) -> None:
    """vs_pyg, vs_best_pyg and best_pyg of every timed row, from the PyG
    rows of the same graph, model, dtype and round."""
    def key(r):
        return (r['graph'], r['model'], r['dtype'], str(r['round']))
    pyg: Dict[tuple, Dict[str, float]] = {}
    for r in rows:
        if r['variant'] in PYG_VARIANTS and r.get('step_ms'):
            pyg.setdefault(key(r), {})[r['variant']] = float(r['step_ms'])
    for r in rows:
        ms = float(r['step_ms']) if r.get('step_ms') else None
        rivals = pyg.get(key(r), {})
        if ms is None or not rivals:
            continue
        best = min(rivals, key=rivals.get)
        if 'pyg' in rivals:
            r['vs_pyg'] = f"{rivals['pyg'] / ms:.2f}"
        r['vs_best_pyg'] = f'{rivals[best] / ms:.2f}'
        r['best_pyg'] = best


# Report #####################################################################

def _targets(rows: List[Dict[str, str]], r: Dict[str, str]) -> str:
    """The issue's targets for a fused row: '>=5x pyg: 6.1x met', ..."""
    if r['variant'] not in FUSED_VARIANTS or not r.get('step_ms'):
        return ''
    same = {x['variant']: x for x in rows
            if (x['graph'], x['model'], x['dtype'], x['round'])
            == (r['graph'], r['model'], r['dtype'], r['round'])}
    out = []
    for rival, goal in TARGETS.get(r['model'], ()):
        name = r.get('best_pyg') if rival == 'best' else rival
        other = same.get(name or '')
        if other is None or not other.get('step_ms'):
            continue
        x = float(other['step_ms']) / float(r['step_ms'])
        out.append(f"≥{goal:g}x {'best PyG ' if rival == 'best' else ''}"
                   f"{name}: {x:.2f}x {'met' if x >= goal else 'MISSED'}")
    return '; '.join(out)


def markdown(path: str) -> str:
    rows = read_rows(path)
    lines = [f'<!-- generated from {os.path.basename(path)}; do not edit -->',
             '', '| graph | model | dtype | variant | execution | round | '
             'step ms | first step ms | vs pyg | vs best PyG | floor ms | '
             'step / floor | peak MB | targets / note |',
             '|' + '---|' * 14]
    for r in rows:
        note = '; '.join(x for x in (_targets(rows, r), r.get('note', ''))
                         if x)
        best = (f"{r['vs_best_pyg']} ({r['best_pyg']})"
                if r.get('vs_best_pyg') else '-')
        lines.append(
            f"| {r['graph']} | {r['model']} | {r['dtype']} | {r['variant']} | "
            f"{r['execution']} | {r['round']} | {r.get('step_ms') or '-'} | "
            f"{r.get('first_step_ms') or '-'} | {r.get('vs_pyg') or '-'} | "
            f"{best} | {r['floor_ms']} | {r.get('ratio_to_floor') or '-'} | "
            f"{r.get('peak_mem_mb') or '-'} | {note or '-'} |")
    return '\n'.join(lines) + '\n'


def main(args) -> int:
    device = torch.device(args.device)
    bad = [v for v in args.variants if v not in VARIANTS]
    if bad:
        raise SystemExit(f'unknown variant(s) {bad}; expected some of '
                         f'{list(VARIANTS)}')
    _scatter_without_cuda(device)
    warm_up_device(device)
    bandwidth = copy_bandwidth(device)
    gemm = {d: gemm_throughput(device, DTYPES[d]) for d in args.dtypes}
    print(f'measured: copy bandwidth {bandwidth / 1e9:.1f} GB/s; GEMM ' +
          ', '.join(f'{d} {f / 1e12:.2f} TFLOP/s' for d, f in gemm.items()),
          flush=True)
    for v in FUSED_VARIANTS:
        if v in args.variants and fused_unsupported():
            print(f'({v}: {fused_unsupported()})', flush=True)

    spent = {'compile_s': 0.0}

    def measure(label, data):
        g = Graph(label, data, device, args)
        for model in args.models:
            if not g.applies(model):
                continue
            t0 = time.perf_counter()
            variants = [v for v in args.variants if v in _variants_of(model)]
            for dname in args.dtypes:
                rows = setting_rows(g, model, dname, variants, args,
                                    bandwidth, gemm, spent)
                append_rows(args.out, rows, columns=LAYER_COLUMNS)
            print(f'{label} {model}: {time.perf_counter() - t0:.1f} s',
                  flush=True)
        del g

    for_each_graph(args.graphs, args.scale, args.seed, device, 'layers',
                   measure, hetero=True)
    write_markdown(args.out, markdown)
    return 0


def add_parser(sub, positive: Callable) -> None:
    """The ``layers`` sub-command's arguments."""
    p = sub.add_parser('layers', help="mini-batch conv layers (to_fused) vs "
                       "PyG's: the model step on pre-sampled batches against "
                       "a floor (bench/layer_runner.py)")
    p.add_argument('--graphs', nargs='+', default=list(DEFAULT_GRAPHS))
    p.add_argument('--models', nargs='+', default=list(DEFAULT_MODELS),
                   choices=MODELS)
    p.add_argument('--variants', nargs='+', default=list(VARIANTS),
                   choices=VARIANTS)
    p.add_argument('--dtypes', nargs='+', default=list(DTYPES),
                   choices=list(DTYPES))
    p.add_argument('--scale', type=float, default=1.0)
    p.add_argument('--batch-size', type=positive, default=1024)
    p.add_argument('--hidden', type=positive, default=None,
                   help="hidden width of every model (default: each model's:"
                        " 256, rgcn 128)")
    p.add_argument('--batches', type=positive, default=8,
                   help='pre-sampled batches the steps cycle through')
    p.add_argument('--steps', type=positive, default=30)
    p.add_argument('--warmup', type=int, default=8)
    p.add_argument('--rounds', type=positive, default=1,
                   help='measure every variant of a setting this many '
                        'times, in interleaved rounds (column round)')
    p.add_argument('--compile-budget-s', type=float, default=None,
                   help="once the run's fused-compiled rows have taken this "
                        "many seconds in their first steps (compilation), "
                        "the next settings' are skipped with a note")
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--device', default='cuda' if torch.cuda.is_available()
                   else 'cpu')
    p.add_argument('--out', default='benchmarks/results/layers.csv')
