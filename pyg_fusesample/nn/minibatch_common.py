"""What the mini-batch layers (SAGEConv, GCNConv, GATConv, RGCNConv) share:
the graph argument as a :class:`~pyg_fusesample.sparse.TargetLayout`, the
warning when a call takes PyG's own path, and the order of aggregation and
linear map."""
import warnings
from typing import Optional, Set, Tuple

import torch
from torch import Tensor
from torch_geometric.inspector import Inspector

from ..ops.aggregate import ERROR_RELATION, DeviceErrorWatch
from ..sparse.target_layout import TargetLayout, target_layout
from .compiled_layout import traced_layout

_warned: Set[Tuple[str, str]] = set()


def warn_pyg_path(layer, reason: str):
    r"""Says once per (layer class, reason) that a call runs PyG's own
    message passing (correct, not faster)."""
    key = (type(layer).__name__, reason)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(
            f"pyg_fusesample.nn.{key[0]}: {reason}; this call runs PyG's "
            f"{key[0]} code path (same result, none of the mini-batch "
            f"speed-up)", stacklevel=3)


_watch = DeviceErrorWatch('pyg_fusesample.nn', 'edge_index')


def watch_device_errors(x: Tensor):
    r"""At each fast-path call on a GPU: raises what an earlier call's
    kernels found wrong (ids or a layout out of range, reported in the
    device's error word instead of a sync or an assert), then starts the
    asynchronous copy of the word again. Not while compiling or capturing
    a CUDA graph."""
    if not x.is_cuda or torch.compiler.is_compiling() or \
            torch.cuda.is_current_stream_capturing():
        return
    _watch.check()
    _watch.arm(x.device)


def check_relations(edge_type: Tensor, num_relations: int, owner: str):
    r"""``edge_type`` in ``[0, num_relations)``: raises on the CPU; on a GPU
    (a check there would be a sync per batch) the first bad one goes to the
    error word, raised by a later call (:func:`watch_device_errors`)."""
    if edge_type.numel() == 0:
        return
    bad = (edge_type < 0) | (edge_type >= num_relations)
    if not edge_type.is_cuda:
        if bool(bad.any()):
            value = int(edge_type[bad][0])
            raise ValueError(f"{owner}: 'edge_type' holds relation {value}, "
                             f"outside [0, {num_relations})")
        return
    if torch.compiler.is_compiling() or \
            torch.cuda.is_current_stream_capturing():
        return
    word = torch.ops.fusesample.sample_aggregate_error(edge_type)
    first = edge_type.index_select(0, bad.to(torch.uint8).argmax().view(1))
    report = torch.cat([first.new_full((1, ), ERROR_RELATION), first.long()])
    word.copy_(torch.where(bad.any() & (word[0] == 0), report, word))


def fast_graph(edge_index) -> bool:
    r"""Whether the layers' own path takes this graph argument: an
    ``edge_index`` tensor (SparseTensor / torch.sparse ``adj_t`` go to
    PyG)."""
    return isinstance(edge_index, Tensor) and edge_index.layout == torch.strided


def layout_of(edge_index: Tensor, num_src: int, num_dst: int,
              owner: str) -> TargetLayout:
    r"""The call's :class:`TargetLayout` (and, on a GPU, the error word's
    watch: :func:`watch_device_errors`)."""
    if torch.compiler.is_compiling():
        return traced_layout(edge_index, num_src, num_dst, owner)
    watch_device_errors(edge_index)
    return target_layout(edge_index, num_src, num_dst, owner)


# FLOPs a GEMM does in the time the memory system moves a byte, by device
# type and element size: an H100 / H200 multiplies bf16 / fp16 at ~700
# TFLOP/s on tensor cores and fp32 at ~50 on its SIMT units (PyG's and our
# layers' fp32 GEMMs use no TF32), beside ~4 TB/s; a CPU core's vector units
# against its share of DRAM bandwidth are nearer ~30 whatever the type.
_FLOPS_PER_BYTE = {('cuda', 2): 175.0, ('cuda', 4): 13.0, ('cuda', 8): 13.0}
_CPU_FLOPS_PER_BYTE = 30.0


def linear_first(layout: TargetLayout, in_channels: int,
                 out_channels: int, x: Tensor) -> bool:
    r"""For a linear map ``W`` after a linear aggregation ``A``,
    ``A (x W) = (A x) W``: project first when that costs less, counting
    the values moved and the GEMM's FLOPs at the device's FLOPs per byte
    for :obj:`x`'s compute dtype (autocast's where enabled). Forward, first
    moves ``E * out + N * (in + out)`` values and multiplies ``N`` rows;
    after, ``E * in + T * (in + out)`` and ``T'`` rows (``T'``: targets
    with slots). Under autograd first's backward runs the aggregation's
    gradient and reads ``x`` for ``W``'s; after's only reads the aggregation
    for ``W``'s -- unless ``x`` needs a gradient too (both then read and
    write ``x``-wide rows, after per slot). In fp32 on a GPU, or on a first
    layer whose input needs no gradient, the product over every source row
    can cost more than the gathered bytes it saves (the Reddit-like first
    layer, 602 -> 256). Decided from shapes on the host: the same for every
    batch of one fan-out shape, width and dtype."""
    E, N, T = layout.num_slots, layout.num_src, layout.num_dst
    i, o = in_channels, out_channels
    first, after, passes = E * o + N * (i + o), E * i + T * (i + o), 1
    if torch.is_grad_enabled():
        first, after, passes = first + E * o + N * (i + o), after + T * i, 2
        if x.requires_grad:
            first, after, passes = first + N * i, after + E * i + N * i, 3
    device = x.device.type
    dtype = torch.get_autocast_dtype(device) if device in ('cuda', 'cpu') \
        and torch.is_autocast_enabled(device) else x.dtype
    size = torch.finfo(dtype).bits // 8 if dtype.is_floating_point else 4
    balance = _FLOPS_PER_BYTE.get((device, size), _CPU_FLOPS_PER_BYTE)
    gemm = passes * 2 * i * o / balance  # (the bytes' worth of a GEMM row)
    return first * size + N * gemm < after * size + layout.num_active * gemm


def uninitialized(*params: Optional[Tensor]) -> bool:
    r"""Lazy PyG ``Linear`` (``in_channels=-1``) before its first call."""
    return any(isinstance(p, torch.nn.parameter.UninitializedParameter)
               for p in params if p is not None)


def pyg_fallback(cls):
    r"""Class decorator of a layer subclassing a PyG layer: gives the
    subclass the argument types of its PyG base's ``propagate`` (and
    ``edge_updater``) calls. PyG compiles those methods per class from the
    ``# propagate_type`` comments of the class's own source; a subclass
    whose ``forward`` makes no such call would get methods taking no
    arguments, and its fallback to PyG's ``forward`` would fail."""
    base = next(b for b in cls.__mro__[1:]
                if b.__module__.startswith('torch_geometric.'))
    for method in ('propagate', 'edge_updater'):
        params = Inspector(base).get_params_from_method_call(
            method, exclude=[0, 'edge_index', 'size'])
        if params:
            setattr(cls, f'{method}_type',
                    {name: p.type for name, p in params.items()})
    return cls
