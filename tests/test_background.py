"""loader/background.py: the batch thread is stopped when its iterator is
dropped, and at interpreter exit when it is not; loader/side_stream.py's
iterator makes its items one ahead."""
import itertools
import textwrap
import threading
import time
import weakref

import pytest
import torch

from conftest import devices
from example_runner import run_subprocess
from pyg_fusesample.loader import (background, fused_shadow, layer_wise_loader,
                                   side_stream)


def _endless(made):
    for i in itertools.count():
        made.append(i)
        yield torch.full((4, ), i)


def test_batches_in_order_then_stop_all_joins_a_kept_iterator():
    made = []
    it = background.BackgroundIterator.start(_endless(made), None, 0, 'test')
    assert [int(next(it)[0]) for _ in range(5)] == [0, 1, 2, 3, 4]
    assert it.thread.is_alive()  # blocked on the full queue
    background.stop_all()
    assert not it.thread.is_alive()
    # It ended after the batch it was making: at most the queue's depth and
    # one more beyond what was taken.
    assert len(made) <= 5 + background.BackgroundIterator.depth + 1


def test_dropping_the_iterator_stops_the_thread():
    it = background.BackgroundIterator.start(_endless([]), None, 0, 'test')
    next(it)
    thread = it.thread
    del it
    thread.join(timeout=10)
    assert not thread.is_alive()




def _strided(make, items, workers):
    return background.BackgroundIterator.start_strided(
        [map(make, items[i::workers]) for i in range(workers)],
        [None] * workers, len(items), 'test')


def test_strided_threads_yield_the_epoch_in_order():
    made_by = {}

    def make(i):
        made_by[i] = threading.current_thread().name
        return i
    it = _strided(make, list(range(10)), 3)
    assert len(it) == 10 and list(it) == list(range(10))
    assert not any(t.is_alive() for t in it.threads)
    # batch i was made by thread i % 3
    assert {made_by[i] for i in range(0, 10, 3)} == {'test-0'}
    assert {made_by[i] for i in range(1, 10, 3)} == {'test-1'}
    assert list(_strided(make, [], 2)) == []
    assert list(_strided(make, [7], 3)) == [7]


def test_strided_error_in_its_place_and_close_stops_every_thread():
    def make(i):
        if i == 4:
            raise RuntimeError('batch 4')
        return i
    it = _strided(make, list(range(10)), 2)
    assert [next(it) for _ in range(4)] == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match='batch 4'):
        next(it)
    assert not any(t.is_alive() for t in it.threads)
    with pytest.raises(StopIteration):
        next(it)
    it = _strided(lambda i: i, list(range(100)), 3)
    assert next(it) == 0
    it.close()
    assert not any(t.is_alive() for t in it.threads)

class _SlowToFree:
    def __init__(self, freed):
        self.freed = freed

    def __del__(self):
        time.sleep(0.3)
        self.freed.append(True)


def test_stop_all_waits_for_a_thread_freeing_its_last_batches():
    # A dropped iterator's thread frees the batches left in its queue after
    # its producer is gone: stop_all (at exit) must still wait for it, or
    # finalisation catches it inside a tensor's deallocation.
    freed = []
    it = background.BackgroundIterator.start(
        (_SlowToFree(freed) for _ in itertools.count()), None, 0, 'test')
    first = next(it)
    thread, producer = it.thread, weakref.ref(it.producer)
    time.sleep(0.1)  # the queue is full again
    del it
    deadline = time.monotonic() + 10
    while producer() is not None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert producer() is None
    # The queue's batches are being freed now, on the thread.
    assert thread.is_alive()
    background.stop_all()
    assert not thread.is_alive()
    assert len(freed) >= 1 + background.BackgroundIterator.depth
    del first

EXIT_SCRIPT = textwrap.dedent('''
    import sys, torch
    from torch_geometric.data import Data
    from pyg_fusesample.loader.layer_wise_loader import LayerWiseLoader
    device = sys.argv[1]
    g = torch.Generator().manual_seed(0)
    data = Data(edge_index=torch.randint(2000, (2, 40000), generator=g),
                x=torch.randn(2000, 16, generator=g), num_nodes=2000).to(device)
    loader = LayerWiseLoader(data, [64, 64], batch_size=8, shuffle=True,
                             seed=0, prefetch=True)
    it = iter(loader)  # kept alive to the end, its thread still busy
    next(it)
    print('ok')
''')


@pytest.mark.parametrize('device', devices())
def test_exit_with_a_live_prefetch_thread_is_clean(device, tmp_path):
    script = tmp_path / 'exit_live_thread.py'
    script.write_text(EXIT_SCRIPT)
    code, out, err = run_subprocess(script, [device])
    assert code == 0, err[-2000:]
    assert out.strip() == 'ok' and 'terminate called' not in err


def _loaders(data, **kwargs):
    from pyg_fusesample import (FusedGraphSAINTRandomWalkSampler,
                                FusedShaDowKHopSampler, LayerWiseLoader)
    return [
        FusedGraphSAINTRandomWalkSampler(data, batch_size=5, walk_length=2,
                                         num_steps=2, log=False, **kwargs),
        FusedShaDowKHopSampler(data, depth=1, num_neighbors=2, batch_size=8,
                               **kwargs),
        LayerWiseLoader(data, [5], batch_size=8, **kwargs),
    ]


@pytest.mark.parametrize('device', devices())
def test_subgraph_loaders_prefetch_by_default_on_a_gpu(device):
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(0)
    data = Data(edge_index=torch.randint(30, (2, 120), generator=g),
                x=torch.randn(30, 4, generator=g), num_nodes=30).to(device)
    for loader in _loaders(data):
        assert loader.prefetch is None
        it = iter(loader)
        threaded = isinstance(it, (background.BackgroundIterator,
                                   layer_wise_loader._NativeIterator,
                                   fused_shadow._NativeIterator))
        assert threaded == (device == 'cuda'), type(loader).__name__
        assert len(list(it)) == len(loader)
    # Worker processes (CPU data only: CUDA data refuses them) turn the
    # default off instead of raising; False wins.
    for loader in _loaders(data.cpu(), num_workers=1) + _loaders(
            data, prefetch=False):
        assert loader.prefetch is False
        assert not isinstance(iter(loader), (
            background.BackgroundIterator, layer_wise_loader._NativeIterator,
            fused_shadow._NativeIterator))


@pytest.mark.cuda
def test_gpu_prefetch_makes_batches_on_a_side_stream():
    # The thread's reads of device values must not wait for the training
    # steps on the caller's stream: it works on a stream of its own, and
    # the caller's stream waits for each batch (the same batches).
    # (FusedGraphSAINTRandomWalkSampler's Python threads; the native ones of
    # LayerWiseLoader and FusedShaDowKHopSampler: their own test files)
    from torch_geometric.data import Data
    from pyg_fusesample import FusedGraphSAINTRandomWalkSampler
    g = torch.Generator().manual_seed(0)
    data = Data(edge_index=torch.randint(60, (2, 400), generator=g),
                x=torch.randn(60, 4, generator=g), num_nodes=60).to('cuda')

    def saint(prefetch):
        return FusedGraphSAINTRandomWalkSampler(
            data, batch_size=5, walk_length=2, num_steps=8, log=False,
            seed=1, prefetch=prefetch)
    plain_loader = saint(False)
    plain = [b.x for b in plain_loader]
    plain_next = [b.x for b in plain_loader]  # (a second epoch's batches differ)
    streams = []

    def spied(loader):  # (the streams its batches are made on)
        make = loader._collate

        def spy(item):
            streams.append(torch.cuda.current_stream().cuda_stream)
            return make(item)
        loader._collate = spy
        return loader
    loader = spied(saint(True))
    consumer = torch.cuda.current_stream().cuda_stream
    ahead = [b for b in loader]
    assert len(ahead) == len(plain)
    assert all(torch.equal(a.x, p) for a, p in zip(ahead, plain))
    assert streams and all(s != consumer for s in streams)
    # one side stream per thread, the batches dealt out in turn
    assert len(set(streams)) == min(background.GPU_THREADS, len(plain))
    for b in ahead:
        side_stream.record_on(b, torch.cuda.current_stream())
    # the next epoch's threads, and another loader's, work on the same
    # streams (kept: the allocator's blocks cached for them are reused)
    first = set(streams)
    streams.clear()
    assert all(torch.equal(a.x, p) for a, p in zip(loader, plain_next))
    assert set(streams) == first
    streams.clear()
    assert len(list(spied(saint(True)))) == len(plain)
    assert set(streams) == first


def test_side_stream_iterator_makes_one_ahead_on_the_cpu():
    # (the distributed loader's prefetch=True on CPU parts: items made one
    # ahead in the caller's thread; any item, None too, is one)
    made = []

    def make(item):
        made.append(item)
        return item

    it = side_stream.SideStreamIterator(iter([None, 1, 2]), make,
                                        torch.device('cpu'))
    assert made == [None]  # the first, made when the epoch starts
    assert next(it) is None and made == [None, 1]  # the next, as one goes
    assert list(it) == [1, 2] and made == [None, 1, 2]
    assert next(it, 'end') == 'end'
