r"""A second stream for independent work inside our CUDA graph captures.

A captured mini-batch step is short and made of small kernels, so its
length is the chain of their latencies, not their work. Where a backward
has work that no later kernel of the same backward reads (a layer's weight
and bias gradients, beside its input gradient), running it on a second
stream makes two edges of the graph that replays run side by side.

Only inside :func:`branching_capture` (entered by
:func:`pyg_fusesample.nn.captured_step.capture_on_side_stream` around its
capture when asked: ``CapturedBatchStep(branch_backward=True)``, the
default), and only while the current stream is capturing: eager steps,
other people's captures and ``torch.compile``'s traced layers keep one
stream.

Three rules keep the branch safe:

* the branch waits for the current stream before its first kernel and the
  current stream waits for the branch before the backward returns
  (:class:`Branch` ``fork`` / ``join``), so nothing after the backward sees
  a difference;
* every tensor the branch reads is marked as used by it
  (``record_stream``) and every tensor it makes as used by the current
  stream, so that the caching allocator never hands their memory to
  another stream's allocation while the other stream may still touch it
  (during a capture it defers such frees to the capture's end);
* the branch stream's cuBLAS workspace is dropped before and after the
  capture (as the capture stream's is,
  ``kernels/common/capture_workspace.h``), so the branch's GEMMs use one
  made in the graph's own pool, and no later GEMM on that stream runs in
  memory the graph owns.
"""
import contextlib
from typing import Dict, Iterator, Optional

import torch
from torch import Tensor

from .. import _extension  # noqa: F401  (registers the ops)

# The branch stream of the capture under way on each device, by device
# index. Process-wide, not per thread: autograd runs a CUDA backward on its
# own thread for the device, not the thread that called backward().
_streams: Dict[int, torch.cuda.Stream] = {}


def drop_cublas_workspace(stream: torch.cuda.Stream) -> None:
    r""":obj:`stream`'s cuBLAS workspace dropped from ATen's map, so that
    its next GEMM makes a new one (in a capture: in the graph's pool). See
    ``kernels/common/capture_workspace.h``."""
    with torch.cuda.stream(stream):
        torch.ops.fusesample.drop_cublas_workspace()


@contextlib.contextmanager
def branching_capture(device: torch.device) -> Iterator[None]:
    r"""Lets the ops captured inside it put independent work on a second
    stream (:func:`branch_for`). Enter it around ``torch.cuda.graph(...)``;
    one capture at a time per device."""
    stream = torch.cuda.Stream(device)
    index = stream.device.index
    if index in _streams:
        raise RuntimeError(f"branching_capture: a capture on cuda:{index} "
                           f"is already branching")
    drop_cublas_workspace(stream)
    _streams[index] = stream
    try:
        yield
    finally:
        del _streams[index]
        drop_cublas_workspace(stream)


class Branch:
    r"""The second stream of one backward: :meth:`fork` before its work,
    :meth:`join` after."""
    def __init__(self, stream: torch.cuda.Stream):
        self.stream = stream
        self.main = torch.cuda.current_stream(stream.device)

    def fork(self, *reads: Optional[Tensor]) -> 'Branch':
        self.stream.wait_stream(self.main)
        for t in reads:
            if t is not None:
                t.record_stream(self.stream)
        return self

    def join(self, *made: Optional[Tensor]) -> None:
        self.main.wait_stream(self.stream)
        for t in made:
            if t is not None:
                t.record_stream(self.main)


def branch_for(t: Tensor) -> Optional[Branch]:
    r"""A :class:`Branch` for work on :obj:`t`'s device, or ``None`` (run it
    on the current stream): outside :func:`branching_capture`, outside a
    capture, or on another device."""
    stream = _streams.get(t.device.index) if t.is_cuda else None
    if stream is None or not torch.cuda.is_current_stream_capturing():
        return None
    return Branch(stream)
