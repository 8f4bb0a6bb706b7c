"""Captures and Python's cyclic garbage collector: a CUDA graph held by a dead
reference cycle is destroyed before a capture, never during it (its
destruction clears the cuBLAS workspace of the stream it was captured on,
which can be the stream capturing now, and releases its memory pool:
capture_on_side_stream collects first and pauses the collector)."""
import gc
import weakref

import pytest
import torch

from pyg_fusesample.nn.captured_step import (capture_on_side_stream,
                                             collector_paused)


class _Cycle:
    def __init__(self):
        self.me = self


def test_collector_paused_collects_first_and_restores_the_collector():
    dead = _Cycle()
    ref = weakref.ref(dead)
    del dead
    assert gc.isenabled()
    with collector_paused():
        assert ref() is None and not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a caller's own setting is kept
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(KeyError):  # restored on an error too
        with collector_paused():
            raise KeyError
    assert gc.isenabled()


@pytest.mark.cuda
def test_a_dead_graph_is_collected_before_a_capture_not_during_it():
    lin = torch.nn.Linear(64, 64).cuda()
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = torch.randn(256, 64, device='cuda')

    def step():
        loss = lin(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    holder = _Cycle()  # a captured graph in a dead cycle
    holder.graph, _ = capture_on_side_stream(step, opt, x.device, 1)
    dead = weakref.ref(holder)
    del holder
    seen = []

    def watched():
        seen.append((gc.isenabled(), dead() is None))
        return step()
    graph, loss = capture_on_side_stream(watched, opt, x.device, 0)
    assert seen == [(False, True)] and gc.isenabled()
    graph.replay()
    assert bool(torch.isfinite(loss))
