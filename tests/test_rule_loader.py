"""Temporal, weighted and weighted temporal sampling through
FusedNeighborLoader and FusedLinkNeighborLoader: the contract on Data and
HeteroData (no edge later than its seed, zero weights never drawn, 'last'
takes the latest), CPU == CUDA batches, and the errors that name the
argument."""
import pytest
import torch
from torch_geometric.data import Data, HeteroData

from pyg_fusesample import FusedLinkNeighborLoader, FusedNeighborLoader

import reference as ref
from test_loader import assert_batches_equal


def graph(num_nodes=300, num_edges=6000, seed=0):
    edge_index = ref.random_graph(num_nodes, num_edges, seed=seed, hubs=1,
                                  isolated=4)
    g = torch.Generator().manual_seed(seed)
    data = Data(edge_index=edge_index, num_nodes=num_nodes,
                x=torch.randn(num_nodes, 4, generator=g))
    data.time = torch.randint(0, 100, (num_nodes,), generator=g)
    data.edge_time = torch.randint(0, 100, (edge_index.size(1),), generator=g)
    data.edge_weight = torch.rand(edge_index.size(1), generator=g)
    data.edge_weight[torch.rand(edge_index.size(1), generator=g) < 0.3] = 0.0
    return data


def hetero(seed=0):
    data = graph(seed=seed)
    h = HeteroData()
    h['a'].x, h['a'].time = data.x[:150], data.time[:150]
    h['b'].x, h['b'].time = data.x[150:], data.time[150:]
    ei = data.edge_index
    for src, s0 in (('a', 0), ('b', 150)):
        for dst, d0 in (('a', 0), ('b', 150)):
            m = (ei[0] >= s0) & (ei[0] < s0 + 150) & (ei[1] >= d0) & (ei[1] < d0 + 150)
            h[src, 'to', dst].edge_index = ei[:, m] - torch.tensor([[s0], [d0]])
            h[src, 'to', dst].edge_weight = data.edge_weight[m]
            h[src, 'to', dst].edge_time = data.edge_time[m]
    return h


def loader_devices():
    return ['cpu', pytest.param('cuda', marks=pytest.mark.cuda)]


@pytest.mark.parametrize('device', loader_devices())
def test_weighted_batches_never_hold_zero_weight_edges(device):
    data = graph().to(device)
    loader = FusedNeighborLoader(data, [4, 3], weight_attr='edge_weight',
                                 batch_size=32, seed=1)
    for batch in loader:
        assert (batch.edge_weight > 0).all()
        assert (data.edge_weight[batch.e_id] == batch.edge_weight).all()


@pytest.mark.parametrize('device', loader_devices())
@pytest.mark.parametrize('strategy', ['uniform', 'last'])
def test_node_time_bounds_every_subtree(device, strategy):
    data = graph().to(device)
    loader = FusedNeighborLoader(data, [5, 5], time_attr='time', batch_size=16,
                                 temporal_strategy=strategy, seed=2)
    for batch in loader:
        assert batch.batch is not None  # temporal subgraphs are disjoint
        seed_time = batch.time[:batch.batch_size]
        assert (batch.time <= seed_time[batch.batch]).all()


@pytest.mark.parametrize('device', loader_devices())
def test_input_time_and_edge_time(device):
    data = graph().to(device)
    seeds = torch.arange(0, 300, 7)
    input_time = torch.full((seeds.numel(),), 40)
    loader = FusedNeighborLoader(data, [-1, 4], time_attr='edge_time',
                                 input_nodes=seeds, input_time=input_time,
                                 batch_size=8, seed=3)
    for batch in loader:
        assert (batch.seed_time == 40).all()
        assert (batch.edge_time <= 40).all()
        # hop 0 takes every admissible in-edge of each seed (-1)
        e0 = int(batch.num_sampled_edges[0])
        for i in range(batch.batch_size):
            v = int(batch.n_id[i])
            want = ((data.edge_index[1] == v) & (data.edge_time <= 40)).sum()
            assert int((batch.edge_index[1, :e0] == i).sum()) == int(want)


@pytest.mark.parametrize('device', loader_devices())
def test_hetero_temporal_and_weighted(device):
    data = hetero().to(device)
    loader = FusedNeighborLoader(data, [3, 3], time_attr='time',
                                 input_nodes='a', batch_size=16, seed=4)
    for batch in loader:
        seed_time = batch['a'].time[:batch['a'].batch_size]
        for nt in ('a', 'b'):
            assert (batch[nt].time <= seed_time[batch[nt].batch]).all()
    loader = FusedNeighborLoader(data, [3, 3], weight_attr='edge_weight',
                                 input_nodes='b', batch_size=16, seed=4)
    for batch in loader:
        for et in batch.edge_types:
            assert (batch[et].edge_weight > 0).all()


@pytest.mark.parametrize('device', loader_devices())
@pytest.mark.parametrize('time_attr', ['time', 'edge_time'])
@pytest.mark.parametrize('strategy', ['uniform', 'last'])
def test_weighted_temporal_batches(device, time_attr, strategy):
    # Both rules at once, homogeneous and heterogeneous: no edge later than
    # its seed, none weightless; 'last' without replacement.
    data = graph().to(device)
    seeds = torch.arange(0, 300, 5)
    loader = FusedNeighborLoader(
        data, [4, 3], time_attr=time_attr, weight_attr='edge_weight',
        temporal_strategy=strategy, input_nodes=seeds,
        input_time=torch.full((seeds.numel(), ), 60), batch_size=16, seed=6)
    for batch in loader:
        assert (batch.edge_weight > 0).all()
        if time_attr == 'edge_time':
            assert (batch.edge_time <= 60).all()
        else:
            assert (batch.time[batch.edge_index[0]] <= 60).all()
    h = hetero().to(device)
    loader = FusedNeighborLoader(h, [3, 3], time_attr='time',
                                 weight_attr='edge_weight', input_nodes='a',
                                 temporal_strategy=strategy, batch_size=16,
                                 seed=4)
    for batch in loader:
        seed_time = batch['a'].time[:batch['a'].batch_size]
        for nt in ('a', 'b'):
            assert (batch[nt].time <= seed_time[batch[nt].batch]).all()
        for et in batch.edge_types:
            assert (batch[et].edge_weight > 0).all()


@pytest.mark.cuda
def test_cuda_batches_equal_cpu_batches():
    for kwargs in (dict(weight_attr='edge_weight'),
                   dict(time_attr='time', temporal_strategy='last'),
                   dict(time_attr='time', weight_attr='edge_weight'),
                   dict(time_attr='time', weight_attr='edge_weight',
                        replace=True)):
        out = []
        for device in ('cpu', 'cuda'):
            loader = FusedNeighborLoader(graph().to(device), [4, 3],
                                         batch_size=32, seed=5, **kwargs)
            out.append([(b.n_id.cpu(), b.e_id.cpu()) for b in loader])
        for (n1, e1), (n2, e2) in zip(*out):
            assert torch.equal(n1, n2) and torch.equal(e1, e2)


def prefetch_modes(device):
    # Every way the loader can hand out batches on `device`; 'thread' runs
    # the native BatchPrefetcher for these plain Data batches.
    return [False, 'thread'] + ([True] if device == 'cuda' else [])


@pytest.mark.parametrize('device', loader_devices())
@pytest.mark.parametrize('kwargs', [
    dict(weight_attr='edge_weight'),
    dict(time_attr='time', temporal_strategy='last'),
    dict(time_attr='edge_time', input_time=torch.arange(0, 100, 2)),
])
def test_every_prefetch_mode_gives_the_same_batches(device, kwargs):
    data = graph().to(device)
    kwargs = dict(kwargs)
    if 'input_time' in kwargs:
        kwargs['input_nodes'] = torch.arange(50)
    batches = []
    for prefetch in prefetch_modes(device):
        loader = FusedNeighborLoader(data, [4, 3], batch_size=16, seed=7,
                                     shuffle=True, prefetch=prefetch, **kwargs)
        assert (loader.prefetch == 'thread') == (prefetch == 'thread')
        batches.append(list(loader))
    for other in batches[1:]:
        assert len(other) == len(batches[0])
        for a, b in zip(batches[0], other):
            assert_batches_equal(a, b)
    if 'input_time' in kwargs:
        for batch in batches[-1]:
            assert batch.seed_time.device.type == device
            assert torch.equal(batch.seed_time.cpu(),
                               kwargs['input_time'][batch.input_id])


@pytest.mark.parametrize('device', loader_devices())
def test_temporal_link_loader(device):
    data = graph().to(device)
    label_index = data.edge_index[:, :200]
    label_time = data.time[label_index[1]]
    loader = FusedLinkNeighborLoader(data, [3, 3], edge_label_index=label_index,
                                     edge_label_time=label_time,
                                     time_attr='time', batch_size=20,
                                     neg_sampling_ratio=1.0, seed=6)
    for batch in loader:
        # Each sampled node's root is its seed edge (PyG maps both endpoints
        # and the negatives to it); the seed nodes themselves are not bounded.
        hop = int(batch.num_sampled_nodes[0])
        bound = batch.edge_label_time[batch.batch[hop:]]
        assert (batch.time[hop:] <= bound).all()


@pytest.mark.parametrize('change,exc,match', [
    (dict(edge_weight=-1.0), ValueError, 'finite and non-negative, found -1'),
    (dict(edge_weight=float('nan')), ValueError, 'finite and non-negative'),
    (dict(edge_weight='short'), ValueError, 'one weight per edge'),
    (dict(edge_weight='int'), ValueError, 'floating-point'),
])
def test_bad_weights_name_the_argument(change, exc, match):
    data = graph()
    value = change['edge_weight']
    if value == 'short':
        data.edge_weight = data.edge_weight[:-1]
    elif value == 'int':
        data.edge_weight = torch.ones(data.num_edges, dtype=torch.long)
    else:
        data.edge_weight[3] = value
    with pytest.raises(exc, match=match):
        FusedNeighborLoader(data, [2], weight_attr='edge_weight', batch_size=4)


def test_bad_times_name_the_argument():
    data = graph()
    data.ftime = data.time.float()
    with pytest.raises(ValueError, match="'time_attr' 'ftime' .* integer"):
        FusedNeighborLoader(data, [2], time_attr='ftime', batch_size=4)
    with pytest.raises(ValueError, match="'input_time' must hold one time"):
        FusedNeighborLoader(data, [2], time_attr='time', batch_size=4,
                            input_nodes=torch.arange(10),
                            input_time=torch.zeros(9, dtype=torch.long))
    # Edge-level time needs the seeds' times.
    with pytest.raises(ValueError, match="needs the seeds' times"):
        next(iter(FusedNeighborLoader(data, [2], time_attr='edge_time',
                                      batch_size=4)))
    h = hetero()
    del h['b', 'to', 'a'].edge_time
    with pytest.raises(ValueError, match=r"'time_attr' 'edge_time' is missing "
                                         r"on edge type\(s\) \[\('b', 'to', 'a'\)\]"):
        FusedNeighborLoader(h, [2], time_attr='edge_time', input_nodes='a',
                            batch_size=4)
    h = hetero()
    del h['a'].time  # node-level time on 'b' only: 'a' seeds need input_time
    with pytest.raises(ValueError, match=r"node type\(s\) \['a'\] have no 'time'"):
        next(iter(FusedNeighborLoader(h, [2], time_attr='time',
                                      input_nodes='a', batch_size=4)))
    batch = next(iter(FusedNeighborLoader(
        h, [2], time_attr='time', input_nodes='a', batch_size=4,
        input_time=torch.full((150,), 50))))
    assert (batch['b'].time <= 50).all()
    h = hetero()
    h['a', 'to', 'a'].time = torch.zeros(h['a', 'to', 'a'].num_edges,
                                         dtype=torch.long)
    with pytest.raises(ValueError, match='both node-level and edge-level'):
        FusedNeighborLoader(h, [2], time_attr='time', input_nodes='a',
                            batch_size=4)
