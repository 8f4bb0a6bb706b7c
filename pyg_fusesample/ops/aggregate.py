"""Fused sample + aggregate: the op behind FusedSAGEConv and FusedGraphSAGE.

``torch.ops.fusesample.sample_aggregate`` draws up to ``k`` in-neighbours of
each target and reduces their feature rows in one pass; its backward replays
the saved draws (contract: ``kernels/aggregate/sample_aggregate.cpp``). This
module adds the fake kernels (``torch.compile``, ``opcheck``) and the autograd
formula, and the Python entry point.
"""
from typing import NamedTuple, Optional

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

_ops = torch.ops.fusesample

REDUCTIONS = ('sum', 'mean', 'max')


class SampleAggregateOutput(NamedTuple):
    out: Tensor  #: ``[T, F]`` reduction over the sampled neighbours
    nbr: Tensor  #: ``[T, k]`` sampled neighbour ids (-1: unused slot)
    arg: Tensor  #: ``[T, F]`` neighbour giving each maximum ('max'), else [0]


def sample_aggregate(colptr: Tensor, row: Tensor, x: Tensor, target: Tensor,
                     num_neighbors: int, reduce: str = 'mean',
                     replace: bool = False, rng_seed: int = -1,
                     level: int = 0) -> SampleAggregateOutput:
    r"""Samples up to :obj:`num_neighbors` in-neighbours of every node in
    :obj:`target` and reduces their rows of :obj:`x` in the same pass:

    .. math::
        \mathbf{out}_t = \bigoplus_{u \in \mathcal{S}(t)} \mathbf{x}_u,
        \qquad \mathcal{S}(t) \subseteq \mathcal{N}(t),\;
        |\mathcal{S}(t)| = \min(k, |\mathcal{N}(t)|)

    with :math:`\bigoplus` the sum, mean or (elementwise) max. Differentiable
    in :obj:`x`: the backward replays the saved draws :obj:`nbr` exactly.

    Args:
        colptr (Tensor): ``[N_dst + 1]`` int64 CSC column pointers.
        row (Tensor): ``[E]`` int32/int64 sources (rows of :obj:`x`).
        x (Tensor): ``[N_src, F]`` float64/32/16 or bfloat16 features.
        target (Tensor): ``[T]`` int64 nodes to compute; ``-1`` marks an
            empty slot (zero output).
        num_neighbors (int): ``k``; ``-1`` takes every in-neighbour (exact).
        reduce (str): ``'sum'``, ``'mean'`` or ``'max'``.
        replace (bool): draw with replacement.
        rng_seed (int): RNG key; draws are keyed by
            ``(rng_seed, level, node, slot)``, equal on CPU and CUDA. ``-1``
            (default) takes a fresh key from PyTorch's generator of the
            device (``torch.manual_seed`` makes it repeatable); on CUDA it is
            read from the Philox state inside the kernel, so a captured CUDA
            graph draws new neighbours on every replay.
        level (int): separates the draws of different tree levels.

    Returns:
        :class:`SampleAggregateOutput` ``(out, nbr, arg)``.
    """
    if reduce == 'add':
        reduce = 'sum'
    return SampleAggregateOutput(*_ops.sample_aggregate(
        colptr, row, x, target, int(num_neighbors), reduce, bool(replace),
        int(rng_seed), int(level)))


# Fake kernels ###############################################################

@torch.library.register_fake('fusesample::sample_aggregate')
def _sample_aggregate_fake(colptr, row, x, target, num_neighbors,
                           reduce='mean', replace=False, rng_seed=-1,
                           level=0):
    T, F = target.shape[0], x.shape[1]
    out = x.new_empty((T, F))
    nbr = target.new_empty((T, max(num_neighbors, 0)))
    arg = (target.new_empty((T, F)) if reduce == 'max' else
           target.new_empty((0,)))
    return out, nbr, arg


@torch.library.register_fake('fusesample::sample_aggregate_backward')
def _sample_aggregate_backward_fake(grad_out, colptr, row, target, nbr, arg,
                                    num_neighbors, reduce, num_src):
    return grad_out.new_empty((num_src, grad_out.shape[1]))


# Autograd ###################################################################

def _setup_context(ctx, inputs, output):
    colptr, row, x, target, k, reduce, _replace, _seed, _level = inputs
    _, nbr, arg = output
    ctx.save_for_backward(colptr, row, target, nbr, arg)
    ctx.k, ctx.reduce, ctx.num_src = k, reduce, x.shape[0]
    ctx.mark_non_differentiable(nbr, arg)


def _backward(ctx, grad_out, _grad_nbr, _grad_arg):
    colptr, row, target, nbr, arg = ctx.saved_tensors
    grad_x = None
    if ctx.needs_input_grad[2]:
        grad_x = _ops.sample_aggregate_backward(
            grad_out, colptr, row, target, nbr, arg, ctx.k, ctx.reduce,
            ctx.num_src)
    return None, None, grad_x, None, None, None, None, None, None


torch.library.register_autograd('fusesample::sample_aggregate', _backward,
                                setup_context=_setup_context)


# Ids out of range on CUDA ###################################################

# The error word's kinds (kernels/common/error_word.cuh) and what each says.
_ERROR_KINDS = {1: 'target', 2: 'source', 3: 'pointer', 4: 'relation'}
ERROR_RELATION = 4


class DeviceErrorWatch:
    r"""Reports ids out of range that :func:`sample_aggregate`'s CUDA kernel
    met, without a host synchronisation.

    The CUDA kernel does not check ids on the host (that would cost a sync
    per call) and does not assert (that loses the process's CUDA context):
    it treats a target out of range as padding (zero output, no
    neighbours), skips a source out of range, and records the first bad id
    in a per-device error word (``fusesample::sample_aggregate_error``).
    :meth:`arm`, called after a step, copies that word to pinned host memory
    on the current stream (asynchronously); :meth:`check`, called at the
    start of a later step, raises :class:`RuntimeError` naming
    :obj:`target_name` if the copied word is set and the copy has finished
    (it never waits for it). The error therefore surfaces one or more calls
    after the bad batch, whose outputs were computed with those ids as
    padding. CPU tensors need none of this: the CPU kernels raise at once.
    """

    def __init__(self, owner: str, target_name: str):
        self.owner, self.target_name = owner, target_name
        self._pending = None  # (event, pinned host copy, device word)
        # One pinned buffer and one event, made at the first arm (H200:
        # arm + check took 24-27 us of host time a step with a new pinned
        # tensor and event each time, 21 us with these kept).
        self._host = self._event = None

    # A copy (deepcopy, pickling) starts with nothing pending: an event and
    # a pinned buffer are neither copyable nor the copy's.
    def __getstate__(self):
        return {'owner': self.owner, 'target_name': self.target_name}

    def __setstate__(self, state):
        self.__init__(state['owner'], state['target_name'])

    def check(self):
        if self._pending is None:
            return
        event, host, word = self._pending
        if not event.query():  # not copied yet: look again next call
            return
        self._pending = None
        kind, bad = int(host[0]), int(host[1])
        if kind:
            word.zero_()
            raise RuntimeError(
                f"{self.owner}: {self._describe(_ERROR_KINDS.get(kind), bad)}"
                f" in an earlier call on {word.device} (found on the device "
                f"without a host sync; that call computed without it)")

    def _describe(self, what: Optional[str], bad: int) -> str:
        if what == 'pointer':
            return (f"'edge_index' was not grouped by target as its layout "
                    f"says (row {bad}); pass edge_index as given by the "
                    f"loader, or any edge_index without a registered layout")
        if what == 'relation':
            return (f"'edge_type' held relation {bad}, outside "
                    f"[0, num_relations)")
        name = self.target_name if what == 'target' else 'edge_index'
        return (f"'{name}' held id {bad}, outside the graph's nodes (the "
                f"call treated it as an empty slot); check the ids passed as "
                f"'{name}'")

    def arm(self, device: torch.device):
        if device.type != 'cuda' or self._pending is not None:
            return
        word = _ops.sample_aggregate_error(torch.empty(0, device=device))
        if self._host is None:
            self._host = torch.empty(2, dtype=torch.long, pin_memory=True)
            self._event = torch.cuda.Event()
        # (not re-armed while a copy is pending, so the buffer is free)
        self._host.copy_(word, non_blocking=True)
        self._event.record()
        self._pending = (self._event, self._host, word)


@torch.library.register_fake('fusesample::sample_aggregate_error')
def _sample_aggregate_error_fake(like):
    return like.new_empty((2,), dtype=torch.long)
