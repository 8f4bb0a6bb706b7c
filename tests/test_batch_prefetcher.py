"""prefetch='thread' on the native thread (fusesample.BatchPrefetcher): the
batches of the plain path, in order, across epochs and abandoned epochs;
errors in order; close(); argument checks. CPU data here (CUDA, streams:
test_cuda_sampler.py)."""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyg_fusesample  # noqa: E402,F401
from pyg_fusesample import FusedNeighborLoader  # noqa: E402
from pyg_fusesample.loader.fused_neighbor_loader import (  # noqa: E402
    _NativeIterator)
from pyg_fusesample.ops import csc_from_coo, neighbor_sample  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

import reference as ref  # noqa: E402
from test_loader import assert_batches_equal  # noqa: E402


def graph_data(num_nodes=600, num_edges=6000, seed=0):
    """A random graph with hubs and isolated nodes, node and edge attributes
    of several dtypes and shapes, and a node attribute the sampler does not
    gather by rows (cat dim 1)."""
    ei = ref.random_graph(num_nodes, num_edges, seed, 2, 10)
    g = torch.Generator().manual_seed(seed)
    data = Data(edge_index=ei, num_nodes=num_nodes,
                x=torch.randn(num_nodes, 7, generator=g),
                y=torch.randint(4, (num_nodes, ), generator=g),
                train_mask=torch.rand(num_nodes, generator=g) < 0.5,
                edge_attr=torch.randn(ei.size(1), 3, generator=g).double(),
                name='random')
    return data


def assert_same_epochs(a, b):
    """Equal batches, in order: every key, value and dtype."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert_batches_equal(x, y)


@pytest.mark.parametrize('kw', [
    dict(num_neighbors=[10, 5]),
    dict(num_neighbors=[10, 5], disjoint=True),
    dict(num_neighbors=[4, 4, 4], replace=True),
    dict(num_neighbors=[-1, 3]),
    dict(num_neighbors=[0, 4]),
    dict(num_neighbors=[3], drop_last=True),
])
def test_native_thread_equals_plain(kw):
    """Plain batches take the native thread; they equal prefetch=False's,
    every key, over epochs, also after an epoch abandoned half-way."""
    data = graph_data()
    kw = dict(kw, batch_size=64, shuffle=True, seed=3,
              input_nodes=data.train_mask)
    plain = FusedNeighborLoader(data, prefetch=False, **kw)
    native = FusedNeighborLoader(data, prefetch='thread', **kw)
    assert native.prefetch == 'thread'
    for epoch in range(3):
        if epoch == 1:  # abandoned after one batch, on both
            next(iter(plain))
            it = iter(native)
            assert isinstance(it, _NativeIterator)
            assert len(it) == len(plain)
            next(it)
            del it  # its collection stops the thread
        assert_same_epochs(list(plain), list(native))


def test_native_thread_transform_and_other_cat_dims():
    """A transform runs on each handed-out batch; a node attribute
    concatenated along its last dimension (a key with 'index', as
    Data.__cat_dim__ has it) is not gathered by rows on the thread but
    selected as on the plain path."""
    data = graph_data()
    data.pair_index = torch.arange(2 * data.num_nodes).view(2, -1)

    def transform(batch):
        batch.marked = batch.x.sum()
        return batch

    kw = dict(num_neighbors=[5, 5], batch_size=100, seed=1,
              transform=transform)
    native = FusedNeighborLoader(data, prefetch='thread', **kw)
    assert 'pair_index' not in native._filter_plan().node_rows
    batches = list(native)
    assert all(b.pair_index.size(1) == b.num_nodes for b in batches)
    assert_same_epochs(list(FusedNeighborLoader(data, prefetch=False, **kw)),
                       batches)


def test_native_thread_needs_a_plain_data():
    """A Data subclass is not a plain batch: refused on CPU data."""
    data = type('MyData', (Data, ), {})(**graph_data().to_dict())
    with pytest.raises(ValueError, match='native thread'):
        FusedNeighborLoader(data, [5], prefetch='thread')


def test_native_thread_close_and_empty_epoch():
    data = graph_data()
    it = iter(FusedNeighborLoader(data, [5], batch_size=50, prefetch='thread'))
    next(it)
    it.close()
    with pytest.raises(StopIteration):
        next(it)
    it.close()  # idempotent
    empty = FusedNeighborLoader(data, [5], batch_size=50, prefetch='thread',
                                input_nodes=torch.tensor([], dtype=torch.long))
    assert list(empty) == []


@pytest.mark.parametrize('kw', [
    dict(transform_sampler_output=lambda out: out),
    dict(subgraph_type='induced'),
    dict(subgraph_type='bidirectional'),
])
def test_thread_on_cpu_needs_plain_batches(kw):
    """Only the native thread runs on CPU data; what it does not assemble is
    refused with a message that says why."""
    with pytest.raises(ValueError, match='native thread'):
        FusedNeighborLoader(graph_data(), [5], prefetch='thread', **kw)


def test_python_thread_is_kept_for_other_batches():
    """Batches the native thread does not assemble (here a sampler-output
    transform) keep the Python thread on GPU data; on the CPU it is not
    reachable, so this checks the choice only."""
    data = graph_data()
    loader = FusedNeighborLoader(data, [5], batch_size=50, prefetch='thread')
    assert loader._native_thread()
    loader.transform_sampler_output = lambda out: out
    assert not loader._native_thread()


# The class itself ###########################################################

def csc(num_nodes=300, num_edges=3000):
    ei = ref.random_graph(num_nodes, num_edges, 0, 2, 10)
    colptr, row, perm = csc_from_coo(ei, num_nodes)
    return colptr, row, perm


def prefetcher(colptr, row, perm, seeds, batch_size, keys, fanouts=(5, 3),
               node_attrs=(), edge_attrs=(), depth=2, disjoint=False,
               edge_time=None, seed_time=None, temporal_last=False,
               weight_cumsum=None):
    return torch.classes.fusesample.BatchPrefetcher(
        colptr, row, perm, seeds, batch_size, list(keys), list(fanouts),
        False, disjoint, True, list(node_attrs), list(edge_attrs), depth, True,
        edge_time, seed_time, temporal_last, weight_cumsum)


@pytest.mark.parametrize('depth', [1, 3])
def test_prefetcher_matches_the_ops(depth):
    """Each batch is neighbor_sample of its seed window with its key,
    edge_index = stack(row, col), and the attributes' rows."""
    colptr, row, perm = csc()
    n = colptr.numel() - 1
    x = torch.randn(n, 4)
    w = torch.randn(row.numel())
    seeds = torch.randperm(n)[:250]
    keys = [11, 12, 13]
    p = prefetcher(colptr, row, perm, seeds, 100, keys, node_attrs=[x],
                   edge_attrs=[w], depth=depth, disjoint=True)
    for b, key in enumerate(keys):
        out = neighbor_sample(colptr, row, perm, seeds[100 * b:100 * b + 100],
                              [5, 3], disjoint=True, rng_seed=key)
        node, edge_index, edge, batch, nsn, nse, gx, gw = p.next()
        assert torch.equal(node, out.node) and torch.equal(edge, out.edge)
        assert torch.equal(edge_index, torch.stack([out.row, out.col]))
        assert torch.equal(batch, out.batch)
        assert torch.equal(nsn, out.num_sampled_nodes)
        assert torch.equal(nse, out.num_sampled_edges)
        assert torch.equal(gx, x[out.node]) and torch.equal(gw, w[out.edge])
    assert p.next() == [] and p.next() == []


@pytest.mark.parametrize('last', [False, True])
def test_prefetcher_passes_the_rule_on(last):
    """Temporal (and weighted) batches are the op's with the rule's tensors
    and each window's seed times."""
    colptr, row, perm = csc()
    n = colptr.numel() - 1
    g = torch.Generator().manual_seed(3)
    edge_time = torch.randint(0, 50, (row.numel(), ), generator=g)
    edge_time = torch.cat([edge_time[colptr[v]:colptr[v + 1]].sort().values
                           for v in range(n)])
    weight_cumsum = torch.cat([
        torch.rand(int(colptr[v + 1] - colptr[v]), generator=g,
                   dtype=torch.float64).add_(0.1).cumsum(0) for v in range(n)])
    seeds = torch.randperm(n, generator=g)[:250]
    seed_time = torch.randint(0, 50, (250, ), generator=g)
    for rule in (dict(edge_time=edge_time, seed_time=seed_time,
                      temporal_last=last),
                 dict(weight_cumsum=weight_cumsum)):
        p = prefetcher(colptr, row, perm, seeds, 100, [4, 5, 6],
                       disjoint='seed_time' in rule, **rule)
        for b, key in enumerate([4, 5, 6]):
            window = slice(100 * b, 100 * b + 100)
            kw = {k: v for k, v in rule.items() if k != 'temporal_last'}
            if 'seed_time' in kw:
                kw['seed_time'] = seed_time[window]
                kw['temporal_strategy'] = 'last' if last else 'uniform'
            out = neighbor_sample(colptr, row, perm, seeds[window], [5, 3],
                                  disjoint='seed_time' in rule, rng_seed=key,
                                  **kw)
            node, edge_index, edge, *_ = p.next()
            assert torch.equal(node, out.node) and torch.equal(edge, out.edge)
        assert p.next() == []


def test_prefetcher_raises_at_the_failing_batch():
    """A batch whose sampling fails raises at that batch, after the ones
    before it; then the epoch is over."""
    colptr, row, perm = csc()
    n = colptr.numel() - 1
    seeds = torch.arange(300)
    seeds[250] = n + 7  # in the third batch
    p = prefetcher(colptr, row, perm, seeds, 100, [1, 2, 3])
    assert p.next() and p.next()
    with pytest.raises(RuntimeError, match="'seed' holds ids"):
        p.next()
    assert p.next() == []


@pytest.mark.parametrize('change,match', [
    (dict(batch_size=0), 'batch_size'),
    (dict(depth=0), 'depth'),
    (dict(keys=[1]), 'keys'),           # 250 seeds, batches of 100: 2 or 3
    (dict(keys=[1, 2, 3, 4]), 'keys'),
    (dict(node_attrs=[torch.zeros(5, 2)]), 'node_attrs'),
    (dict(edge_attrs=[torch.zeros(7)]), 'edge_attrs'),
    (dict(seeds=torch.zeros(250, dtype=torch.int32)), 'seeds'),
    (dict(fanouts=[5, -3]), 'num_neighbors'),
    (dict(seed_time=torch.zeros(249, dtype=torch.long)), 'seed_time'),
])
def test_prefetcher_bad_arguments(change, match):
    colptr, row, perm = csc()
    kw = dict(seeds=torch.arange(250), batch_size=100, keys=[1, 2, 3])
    kw.update(change)
    with pytest.raises(RuntimeError, match=match):
        prefetcher(colptr, row, perm, **kw)
    kw.update(keys=[1, 2], batch_size=100)  # floor (drop_last) is accepted
    if 'keys' in change:
        prefetcher(colptr, row, perm, **kw).close()
