"""Whole-step CUDA graph capture of a model trained on a fused loader's
batches (PyG models with :func:`~pyg_fusesample.nn.to_fused` layers).

On a GPU the mini-batch layers leave a step host-bound: a 3-layer
GraphSAGE step is about 1.5 ms of kernels (bf16, products-like, batch 1024)
launched by about 4 ms of Python and dispatch. Every batch is a new shape,
so the step cannot be replayed as it is; padded to fixed per-hop capacities
(:mod:`~pyg_fusesample.sparse.padded_batch`) it can: the layers take no
host synchronisation and read the padded batch's layout from its fixed
counts, so forward, loss, backward and the optimizer step are captured
once and replayed for every batch that fits.
"""
import warnings
from typing import Callable, Optional, Sequence

import torch
from torch import Tensor

from ..sparse.padded_batch import BatchCapacity, PaddedBatch, edge_stores_of
from .captured_step import capture_on_side_stream, check_capturable


class CapturedBatchStep:
    r"""Captures ``step_fn(batch) -> loss`` (forward, loss on the seeds,
    ``backward`` and ``optimizer.step()``) on a fused loader's batches,
    padded to fixed per-hop capacities, in a CUDA graph, and replays it for
    each new batch.

    .. code-block:: python

        loader = FusedNeighborLoader(data, [15, 10, 5], batch_size=1024,
                                     input_nodes=train_idx, shuffle=True,
                                     drop_last=True)
        model = to_fused(GraphSAGE(F, 256, 3, C)).cuda()
        opt = torch.optim.AdamW(model.parameters(), capturable=True,
                                fused=True)

        def step(batch):
            out = model(batch.x, batch.edge_index,
                        num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                        num_sampled_edges_per_hop=batch.num_sampled_edges)
            loss = F.cross_entropy(out[:batch.batch_size],
                                   batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
            return loss

        step = CapturedBatchStep(step, opt)
        for batch in loader:
            loss = step(batch)  # the graph's output: read it before the next

    ``step_fn`` sees the padded batch (:class:`PaddedBatch`): its per-hop
    counts are the capacities, its seeds the first ``batch_size`` rows, as
    in the loader's batch, and what it computes for them (loss, every
    gradient) is what the unpadded batch gives. It must read the seeds' rows
    only (``out[:batch.batch_size]``), take no host synchronisation
    (``.item()``, ``nonzero``, ...) and use no layer that mixes rows
    (normalisation layers over the batch).

    The first batch sets the capacities: its per-hop counts and
    :obj:`margin` more. A later batch that does not fit grows them and the
    step is captured again (:attr:`captures` counts the captures, a warning
    says so); each capture first runs :obj:`warmup` eager steps on its
    batch, which train too (PyTorch's capture recipe). A batch of another
    seed count (a last short batch; ``drop_last=True`` avoids it) or with
    other fixed-shape tensors runs eagerly, with a warning once.

    Args:
        step_fn (Callable): the step; it calls ``backward`` and
            ``optimizer.step()`` itself.
        optimizer (torch.optim.Optimizer): created with ``capturable=True``;
            its gradients are set to ``None`` before each capture, so the
            graph owns them.
        margin (float): capacity beyond a batch's counts, per hop
            (default: ``0.1``).
        warmup (int): eager steps on a side stream before each capture.
        attrs (List[str], optional): the batch's tensor attributes
            ``step_fn`` reads (e.g. ``['x', 'y']``; ``edge_index`` always):
            only those are copied into the padded batch before each replay
            (a copy per hop each: host time on every step). Default: all.
        branch_backward (bool): let the mini-batch layers' backwards run
            their parameters' gradients on a second stream of the graph,
            beside the input gradients (:class:`~pyg_fusesample.nn.SAGEConv`
            today; :mod:`pyg_fusesample.ops.capture_branch`): the same
            kernels on the same inputs, two edges of the graph. On an H200,
            GraphSAGE's captured step on arXiv-like batches 1.04x (fp32)
            and 1.07-1.09x (bf16) as fast as without it, 1.00-1.04x on
            products- and Reddit-like ones (medians of four bench runs,
            docs/minibatch_layers.md).
            ``False`` keeps the whole step on one stream.
            (default: ``True``)
    """
    def __init__(self, step_fn: Callable[[object], Tensor],
                 optimizer: torch.optim.Optimizer, margin: float = 0.1,
                 warmup: int = 3, attrs: Optional[Sequence[str]] = None,
                 branch_backward: bool = True):
        check_capturable(optimizer, 'CapturedBatchStep')
        if margin < 0:
            raise ValueError(f"CapturedBatchStep: 'margin' must be >= 0, got "
                             f"{margin}")
        self.step_fn, self.optimizer = step_fn, optimizer
        self.margin, self.warmup = float(margin), int(warmup)
        self.attrs = None if attrs is None else list(attrs)
        self.branch_backward = bool(branch_backward)
        self.padded: Optional[PaddedBatch] = None
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.loss: Optional[Tensor] = None
        self.captures = 0
        self.eager_steps = 0

    def __call__(self, batch) -> Tensor:
        device = _device_of(batch)
        if self.padded is not None and self.padded.try_fill(batch,
                                                            register=False):
            self.graph.replay()
            return self.loss
        if self.padded is not None and not self.padded.same_fixed(batch):
            return self._eager(batch)
        self._capture(batch, device)
        self.graph.replay()
        return self.loss

    def _eager(self, batch) -> Tensor:
        if self.eager_steps == 0:
            warnings.warn(
                "CapturedBatchStep: a batch with another seed count (or "
                "other fixed-shape tensors) than the captured one runs "
                "eagerly (a last short batch: drop_last=True avoids it)",
                stacklevel=3)
        self.eager_steps += 1
        # (the graph owns the gradients: zeroed in place, not dropped)
        self.optimizer.zero_grad(set_to_none=False)
        return self.step_fn(batch)

    def _capture(self, batch, device: torch.device) -> None:
        old = None if self.padded is None else self.padded.capacity
        if old is not None:
            warnings.warn(
                f"CapturedBatchStep: a batch larger than the capacity; "
                f"capturing the step again with a larger one (capture "
                f"{self.captures + 1}; margin={self.margin} sets the room "
                f"left per hop)", stacklevel=3)
        # the old graph, its padded inputs and outputs go first
        self.graph = self.loss = self.padded = None
        self.padded = PaddedBatch(
            batch, BatchCapacity.of(batch, self.margin, at_least=old),
            self.attrs)
        # (re-registered before the capture: what the warm-up cached per
        # batch, its target pointers, is computed again inside the graph)
        self.graph, self.loss = capture_on_side_stream(
            lambda: self.step_fn(self.padded.batch), self.optimizer, device,
            self.warmup, self.padded.register, branch=self.branch_backward)
        self.captures += 1


def _device_of(batch) -> torch.device:
    # (called every step: a store's item, not `in` and an attribute, ~5x
    # less host time on a Data)
    for store in edge_stores_of(batch).values():
        try:
            device = store['edge_index'].device
        except KeyError:
            continue
        if device.type != 'cuda':
            raise ValueError(f"CapturedBatchStep needs a batch on a CUDA "
                             f"device, got {device}")
        return device
    raise ValueError("CapturedBatchStep: the batch has no 'edge_index'")
