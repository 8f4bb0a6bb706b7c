"""loader/background.py: the batch thread is stopped when its iterator is
dropped, and at interpreter exit when it is not."""
import itertools
import textwrap

import pytest
import torch

from conftest import devices
from example_runner import run_subprocess
from pyg_fusesample.loader import background


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
        threaded = isinstance(it, background.BackgroundIterator)
        assert threaded == (device == 'cuda'), type(loader).__name__
        assert len(list(it)) == len(loader)
    # Worker processes (CPU data only: CUDA data refuses them) turn the
    # default off instead of raising; False wins.
    for loader in _loaders(data.cpu(), num_workers=1) + _loaders(
            data, prefetch=False):
        assert loader.prefetch is False
        assert not isinstance(iter(loader), background.BackgroundIterator)
