"""Whole-step CUDA graph capture for models built on the fused ops.

A FusedGraphSAGE training step is a few dozen small kernels (about 0.4 ms of
GPU work on a products-sized graph at batch 1024) whose launch cost from
Python is several times larger. The fused ops have no host synchronisation
and draw their RNG key inside the kernel from the CUDA generator, so the
whole step -- sampling, forward, loss, backward and optimizer step -- can be
captured once and replayed, each replay drawing new neighbours.
"""
import contextlib
import gc
from typing import Callable, Iterator, Optional, Tuple

import torch
from torch import Tensor

from ..ops.capture_branch import branching_capture, drop_cublas_workspace


def check_capturable(optimizer: torch.optim.Optimizer, owner: str) -> None:
    r"""An optimizer whose step can run in a CUDA graph: those with a
    ``capturable`` option (Adam, AdamW, ...) need it set; those without one
    (SGD) keep no host-side state."""
    for group in optimizer.param_groups:
        if 'capturable' in group and not group['capturable']:
            raise ValueError(f"{owner}: create the optimizer with "
                             f"capturable=True (its step runs in the graph)")


def capture_on_side_stream(step: Callable[[], Tensor],
                           optimizer: torch.optim.Optimizer,
                           device: torch.device, warmup: int,
                           before_capture: Optional[Callable[[], None]] = None,
                           branch: bool = False
                           ) -> Tuple[torch.cuda.CUDAGraph, Tensor]:
    r"""PyTorch's whole-network capture recipe: :obj:`warmup` eager calls of
    :obj:`step` on a side stream, the optimizer's gradients set to ``None``
    (so the graph allocates and owns them), then one call captured.
    Returns the graph and the captured call's output (replays overwrite
    it). With :obj:`branch`, the layers' backwards may run their
    parameters' gradients on a second stream of the graph
    (:mod:`pyg_fusesample.ops.capture_branch`)."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(warmup):
            optimizer.zero_grad(set_to_none=True)
            step()
    torch.cuda.current_stream(device).wait_stream(side)
    optimizer.zero_grad(set_to_none=True)
    if before_capture is not None:
        before_capture()
    graph = torch.cuda.CUDAGraph()
    # Captured on the warm-up's stream, but not with the warm-up's cuBLAS
    # workspace: that one is freed by whoever clears ATen's workspace map
    # (torch.compile's CUDA graphs do), and the replays would write into
    # freed memory. Dropping the stream's workspace around the capture makes
    # the graph's GEMMs use one made in its own memory pool
    # (kernels/common/capture_workspace.h).
    with collector_paused():
        drop_cublas_workspace(side)
        with branching_capture(device) if branch else \
                contextlib.nullcontext(), torch.cuda.graph(graph, stream=side):
            out = step()
        drop_cublas_workspace(side)
    return graph, out


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    r"""Python's dead reference cycles collected now, and the cyclic
    collector paused until the block ends (then restored as it was).

    Around a capture: ``torch.cuda.graph`` no longer collects before it
    captures (``torch.compiler.config.force_cudagraph_gc`` is off by
    default), so an object in a dead cycle that holds a CUDA graph (e.g. a
    dropped :class:`CapturedBatchStep` whose step function refers back to
    its owner, as the benchmark's runs do) would otherwise be
    destroyed by whichever collection the capture's own Python allocations
    happen to trigger, inside the capture: the graph's destruction releases
    its memory pool and clears the cuBLAS workspace of the stream it was
    captured on, which can be the stream capturing now (both come from
    PyTorch's stream pool). The capture then fails ("operation failed due
    to a previous error during capture") or, worse, hands the freed
    workspace to a tensor of the graph being captured, which its GEMMs
    then overwrite at every replay."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class CapturedStep:
    r"""Captures ``step_fn(seeds) -> loss`` (forward, backward and
    ``optimizer.step()``, as PyTorch's whole-network capture recipe does) in
    a CUDA graph and replays it for each new batch of seeds.

    .. code-block:: python

        model = FusedGraphSAGE(F, 256, C, 2, [15, 10]).cuda()
        opt = torch.optim.AdamW(model.parameters(), capturable=True,
                                fused=True)

        def step(seeds):
            loss = F.cross_entropy(model(x, edge_index, seeds), y[seeds])
            loss.backward()
            opt.step()
            return loss

        step = CapturedStep(step, opt, batch_size=1024, device='cuda')
        for seeds in perm.split(1024):
            loss = step(seeds)  # a batch of another size runs eagerly

    Args:
        step_fn (Callable): the step; it must call ``backward`` and
            ``optimizer.step()`` itself and must not synchronise with the
            host (no ``.item()``; the fused ops qualify).
        optimizer (torch.optim.Optimizer): its grads are set to ``None``
            before capture, so the graph owns them; create it with
            ``capturable=True``.
        batch_size (int): seeds per captured step.
        device: the CUDA device.
        warmup (int): eager steps on a side stream before capture (they
            train too, as in PyTorch's recipe).
    """
    def __init__(self, step_fn: Callable[[Tensor], Tensor],
                 optimizer: torch.optim.Optimizer, batch_size: int,
                 device='cuda', warmup: int = 3,
                 example_seeds: Optional[Tensor] = None):
        device = torch.device(device)
        if device.type != 'cuda':
            raise ValueError(f"CapturedStep needs a CUDA device, got {device}")
        check_capturable(optimizer, 'CapturedStep')
        self.step_fn = step_fn
        self.optimizer = optimizer
        self.batch_size = int(batch_size)
        self.seeds = torch.zeros(self.batch_size, dtype=torch.long,
                                 device=device)
        if example_seeds is not None:
            self.seeds.copy_(example_seeds[:self.batch_size])
        self.graph, self.loss = capture_on_side_stream(
            lambda: step_fn(self.seeds), optimizer, device, warmup)

    def __call__(self, seeds: Tensor) -> Tensor:
        if seeds.numel() != self.batch_size:
            # A short last batch: the captured shapes do not fit it.
            self.optimizer.zero_grad(set_to_none=False)
            return self.step_fn(seeds)
        self.seeds.copy_(seeds, non_blocking=True)
        self.graph.replay()
        return self.loss
