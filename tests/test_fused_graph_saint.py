"""FusedGraphSAINTRandomWalkSampler against PyG's GraphSAINTRandomWalkSampler:
PyG's own test with the import swapped, the subgraph of a node set against
torch_sparse's saint_subgraph and PyG's collate, walk-length semantics, node
and edge inclusion frequencies and normalisation statistics against PyG's,
edge cases, argument checks, determinism and CPU/CUDA agreement."""
import warnings

import pytest
import torch
from torch_geometric.data import Data

from pyg_fusesample import FusedGraphSAINTRandomWalkSampler
from pyg_fusesample.loader import fused_graph_saint

try:  # PyG's sampler is the reference where torch_sparse is installed
    import torch_sparse  # noqa: F401
    from torch_geometric.loader import GraphSAINTRandomWalkSampler
    from torch_geometric.typing import SparseTensor
    WITH_TORCH_SPARSE = True
except ImportError:  # pragma: no cover
    WITH_TORCH_SPARSE = False

needs_torch_sparse = pytest.mark.skipif(
    not WITH_TORCH_SPARSE, reason="PyG's reference needs torch_sparse")

Sampler = FusedGraphSAINTRandomWalkSampler


def random_data(num_nodes=30, num_edges=90, seed=0, isolated=0,
                sinks=True, multi=False) -> Data:
    """A random directed graph with x, y, n_id, an edge attribute and a
    graph-level attribute; isolated nodes at the end; without sinks (every
    node but the isolated ones has an out-edge: torch_sparse's walk reads
    past a sink's empty row) when sinks=False."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - isolated
    src = torch.randint(active, (num_edges, ), generator=g)
    dst = torch.randint(active, (num_edges, ), generator=g)
    if not sinks:  # a cycle through every active node
        ring = torch.arange(active)
        src = torch.cat([src, ring])
        dst = torch.cat([dst, (ring + 1) % active])
    if not multi:
        key = torch.unique(src * num_nodes + dst)
        src, dst = key // num_nodes, key % num_nodes
    perm = torch.randperm(src.numel(), generator=g)
    edge_index = torch.stack([src[perm], dst[perm]])
    return Data(edge_index=edge_index, num_nodes=num_nodes,
                x=torch.randn(num_nodes, 3, generator=g),
                y=torch.randint(4, (num_nodes, ), generator=g),
                n_id=torch.arange(num_nodes),
                edge_id=torch.arange(edge_index.size(1)),
                edge_attr=torch.randn(edge_index.size(1), 2, generator=g),
                scale=2.0)


def pyg_saint(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return GraphSAINTRandomWalkSampler(*args, **kwargs)


def keys(seed, count=1):
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randint(2**62, (2, ), generator=g).tolist())
            for _ in range(count)]


# PyG's own test (test/loader/test_graph_saint.py), the import swapped ######
# Only its GraphSAINTRandomWalkSampler part: the node and edge samplers have
# no Fused counterparts. Its assertions are structural and kept unchanged.

def test_graph_saint():
    adj = torch.tensor([
        [+1, +2, +3, +0, +4, +0],
        [+5, +6, +0, +7, +0, +8],
        [+9, +0, 10, +0, 11, +0],
        [+0, 12, +0, 13, +0, 14],
        [15, +0, 16, +0, 17, +0],
        [+0, 18, +0, 19, +0, 20],
    ])

    edge_index = adj.nonzero(as_tuple=False).t()
    edge_id = adj[edge_index[0], edge_index[1]]
    x = torch.Tensor([[0, 0], [1, 1], [2, 2], [3, 3], [4, 4], [5, 5]])
    n_id = torch.arange(6)
    data = Data(edge_index=edge_index, x=x, n_id=n_id, edge_id=edge_id,
                num_nodes=6)

    loader = FusedGraphSAINTRandomWalkSampler(data, batch_size=2,
                                              walk_length=1, num_steps=4,
                                              sample_coverage=10, log=False)

    assert len(loader) == 4
    for sample in loader:
        assert sample.num_nodes <= data.num_nodes
        assert sample.n_id.min() >= 0 and sample.n_id.max() < 6
        assert sample.num_nodes == sample.n_id.numel()
        assert sample.x.tolist() == x[sample.n_id].tolist()
        assert sample.edge_index.min() >= 0
        assert sample.edge_index.max() < sample.num_nodes
        assert sample.edge_id.min() >= 1 and sample.edge_id.max() <= 21
        assert sample.edge_id.numel() == sample.num_edges
        assert sample.node_norm.numel() == sample.num_nodes
        assert sample.edge_norm.numel() == sample.num_edges


# The subgraph of a node set: exactly PyG's #################################

@needs_torch_sparse
@pytest.mark.parametrize('multi', [False, True])
def test_subgraph_matches_saint_subgraph(multi):
    data = random_data(seed=1, multi=multi, isolated=3)
    ours = Sampler(data, batch_size=4, walk_length=3, log=False)
    theirs = pyg_saint(data, batch_size=4, walk_length=3, log=False)
    adj = SparseTensor(row=data.edge_index[0], col=data.edge_index[1],
                       value=torch.arange(data.num_edges),
                       sparse_sizes=(data.num_nodes, data.num_nodes))
    for key in keys(0, 20):
        node_idx, edge_index, edge_idx = ours[key]
        assert torch.equal(node_idx, node_idx.unique())
        sub, _ = adj.saint_subgraph(node_idx)
        row, col, value = sub.coo()
        if not multi:
            assert torch.equal(edge_index, torch.stack([row, col]))
            assert torch.equal(edge_idx, value)
        else:  # parallel edges: equal up to their order among themselves
            assert torch.equal(edge_index, torch.stack([row, col]))
            assert sorted(zip(edge_index[0].tolist(), edge_idx.tolist())) \
                == sorted(zip(row.tolist(), value.tolist()))

        # The whole batch: PyG's collate of the same node set.
        a = ours._collate([ours[key]])
        b = theirs._collate([(node_idx, sub)])
        assert type(a) is type(b)
        assert a.num_nodes == b.num_nodes
        assert list(a.keys()) == list(b.keys())
        for k in ('edge_index', 'x', 'y', 'n_id'):
            assert torch.equal(a[k], b[k]), k
        if not multi:
            assert torch.equal(a.edge_attr, b.edge_attr)
            assert torch.equal(a.edge_id, b.edge_id)
        assert a.scale == data.scale


def test_subgraph_against_python_reference():
    data = random_data(num_nodes=50, num_edges=300, seed=2, isolated=5)
    loader = Sampler(data, batch_size=6, walk_length=4, num_steps=10,
                     log=False, seed=0)
    edges = list(zip(*data.edge_index.tolist()))
    for batch in loader:
        nodes = batch.n_id.tolist()
        assert nodes == sorted(set(nodes))
        local = {v: i for i, v in enumerate(nodes)}
        expected = sorted((local[s], local[t], e) for e, (s, t)
                          in enumerate(edges) if s in local and t in local)
        got = list(zip(*batch.edge_index.tolist(), batch.edge_id.tolist()))
        assert got == expected  # sorted by (source, target), as PyG's
        assert torch.equal(batch.edge_attr, data.edge_attr[batch.edge_id])


def test_walk_length_semantics():
    # A directed path 0 -> 1 -> ... -> 19: a walk of walk_length steps from
    # s visits s, ..., s + walk_length (walk_length + 1 nodes, as PyG's
    # adj.random_walk returns), and stays at the sink 19.
    n = 20
    path = torch.arange(n - 1)
    data = Data(edge_index=torch.stack([path, path + 1]), num_nodes=n,
                n_id=torch.arange(n))
    for walk_length in (0, 1, 3):
        loader = Sampler(data, batch_size=1, walk_length=walk_length,
                         num_steps=40, log=False, seed=walk_length)
        for batch in loader:
            s = batch.n_id[0].item()
            stop = min(s + walk_length, n - 1)
            assert batch.n_id.tolist() == list(range(s, stop + 1))
            assert batch.edge_index.tolist() == [
                list(range(stop - s)), list(range(1, stop - s + 1))]


# Statistics ################################################################

@pytest.mark.slow
@needs_torch_sparse
def test_inclusion_frequencies_match_pyg():
    # Same law as PyG's sampler: uniform starts, uniform walks (on a graph
    # without sinks, where torch_sparse's walk is well defined).
    data = random_data(num_nodes=25, num_edges=50, seed=3, sinks=False)
    steps = 3000

    def frequencies(loader):
        nodes = torch.zeros(data.num_nodes)
        edges = torch.zeros(data.num_edges)
        for batch in loader:
            nodes[batch.n_id] += 1
            edges[batch.edge_id] += 1
        return nodes / steps, edges / steps

    torch.manual_seed(0)
    theirs = frequencies(pyg_saint(data, batch_size=3, walk_length=3,
                                   num_steps=steps, log=False))
    ours = frequencies(Sampler(data, batch_size=3, walk_length=3,
                               num_steps=steps, log=False, seed=0))
    for a, b in zip(ours, theirs):
        p = (a + b) / 2
        std = (2 * p * (1 - p) / steps).sqrt().clamp(min=1e-3)
        assert bool(((a - b).abs() <= 5 * std).all())


@pytest.mark.slow
@needs_torch_sparse
def test_norms_match_pyg():
    data = random_data(num_nodes=25, num_edges=50, seed=4, sinks=False)
    kwargs = dict(batch_size=3, walk_length=2, num_steps=10,
                  sample_coverage=800, log=False)
    torch.manual_seed(0)
    theirs = pyg_saint(data, **kwargs)
    ours = Sampler(data, seed=0, **kwargs)
    assert ours.node_norm.dtype == theirs.node_norm.dtype == torch.float32
    assert ours.edge_norm.dtype == theirs.edge_norm.dtype == torch.float32
    # Two estimates: two PyG runs of other seeds differ by about 4% on
    # average and 20% at most here.
    for a, b in ((ours.node_norm, theirs.node_norm),
                 (ours.edge_norm, theirs.edge_norm)):
        rel = (a - b).abs() / b
        assert rel.mean() < 0.08 and rel.max() < 0.35
        assert abs(float((a / b).mean()) - 1) < 0.03  # no bias


@needs_torch_sparse
@pytest.mark.parametrize('num_steps,coverage', [(1, 5), (3, 5), (4, 1)])
def test_norms_exact_when_every_sample_covers_the_graph(num_steps, coverage):
    # Two nodes with edges both ways: every walk of one step holds both
    # nodes, so every sample is the whole graph. Samples are taken in rounds
    # of num_steps until they hold N * coverage nodes: node_norm = 1 / N,
    # edge_norm = 1, in both samplers.
    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)
    kwargs = dict(batch_size=2, walk_length=1, num_steps=num_steps,
                  sample_coverage=coverage, log=False)
    for loader in (Sampler(data, **kwargs), pyg_saint(data, **kwargs)):
        assert loader.node_norm.tolist() == [0.5, 0.5]
        assert loader.edge_norm.tolist() == [1.0, 1.0]


def test_norm_chunks(monkeypatch):
    # The normalisation pass takes many samples per call; cut into chunks of
    # one sample it gives the same kind of result (and every sample's nodes
    # are counted once per sample).
    data = random_data(num_nodes=30, num_edges=80, seed=5, isolated=4)
    monkeypatch.setattr(fused_graph_saint, 'NORM_CHUNK_NODES', 1)
    loader = Sampler(data, batch_size=4, walk_length=2, num_steps=3,
                     sample_coverage=20, log=False, seed=0)
    assert loader.node_norm.size() == (30, )
    assert loader.edge_norm.size() == (data.num_edges, )
    assert bool((loader.node_norm > 0).all())
    assert bool(((loader.edge_norm >= 0) & (loader.edge_norm <= 1e4)).all())


def test_save_dir(tmp_path, monkeypatch):
    data = random_data(seed=6)
    kwargs = dict(batch_size=3, walk_length=2, num_steps=2,
                  sample_coverage=5, save_dir=str(tmp_path), log=False)
    first = Sampler(data, **kwargs)
    path = tmp_path / first._filename
    assert path.exists()
    assert first._filename == \
        'fusedgraphsaintrandomwalksampler_2_5.pt'

    def fail(self):
        raise AssertionError('recomputed instead of loaded')
    monkeypatch.setattr(Sampler, '_compute_norm', fail)
    second = Sampler(data, **kwargs)
    assert torch.equal(first.node_norm, second.node_norm)
    assert torch.equal(first.edge_norm, second.edge_norm)


# Edge cases and arguments ##################################################

def test_isolated_nodes_and_large_batches():
    data = random_data(num_nodes=20, num_edges=40, seed=7, isolated=6)
    # A walk from an isolated node stays there: alone, no edges.
    loader = Sampler(data, batch_size=1, walk_length=5, num_steps=60,
                     log=False, seed=1)
    seen_isolated = False
    for batch in loader:
        if batch.n_id[0] >= 14:
            seen_isolated = True
            assert batch.n_id.tolist() == [batch.n_id[0].item()]
            assert batch.edge_index.size() == (2, 0)
            assert batch.edge_attr.size() == (0, 2)
    assert seen_isolated
    # batch_size far above N: (almost surely) every node.
    batch = next(iter(Sampler(data, batch_size=2000, walk_length=1,
                              log=False, seed=0)))
    assert batch.n_id.tolist() == list(range(20))
    order = torch.argsort(data.edge_index[0] * 20 + data.edge_index[1])
    assert torch.equal(batch.edge_id, data.edge_id[order])


def test_zero_dim_attribute_and_shuffle():
    # A 0-dim tensor passes through (PyG's collate crashes on its size(0));
    # 'shuffle' is accepted and ignored: steps are fresh samples.
    data = random_data(seed=16)
    data.temperature = torch.tensor(0.5)
    loader = Sampler(data, batch_size=3, walk_length=2, num_steps=2,
                     shuffle=True, log=False)
    for batch in loader:
        assert batch.temperature is data.temperature


def test_graph_without_edges():
    data = Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=4,
                x=torch.arange(4.))
    loader = Sampler(data, batch_size=3, walk_length=2, num_steps=3,
                     sample_coverage=2, log=False, seed=0)
    for batch in loader:
        assert batch.edge_index.size() == (2, 0)
        assert batch.edge_norm.numel() == 0
        assert 1 <= batch.num_nodes <= 3
        assert torch.equal(batch.x, batch.x.unique())


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(batch_size=0, walk_length=2), ValueError, "'batch_size'"),
    (dict(batch_size=2.0, walk_length=2), TypeError, "'batch_size'"),
    (dict(batch_size=2, walk_length=-1), ValueError, "'walk_length'"),
    (dict(batch_size=2, walk_length=2, num_steps=0), ValueError,
     "'num_steps'"),
    (dict(batch_size=2, walk_length=2, sample_coverage=-1), ValueError,
     "'sample_coverage'"),
    (dict(batch_size=2, walk_length=2, sampler=[0]), ValueError, 'sampler'),
    (dict(batch_size=2, walk_length=2, seed=0, generator=torch.Generator()),
     ValueError, 'either'),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        Sampler(random_data(seed=8), log=False, **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match='edge_index'):
        Sampler(Data(x=torch.randn(3, 2)), 2, 2)
    data = random_data(seed=9)
    data.node_norm = torch.ones(data.num_nodes)
    with pytest.raises(ValueError, match='node_norm'):
        Sampler(data, 2, 2)
    with pytest.raises(ValueError, match='no nodes'):
        Sampler(Data(edge_index=torch.empty(2, 0, dtype=torch.long),
                     num_nodes=0), 2, 2)
    with pytest.raises(ValueError, match='outside'):
        Sampler(Data(edge_index=torch.tensor([[0], [7]]), num_nodes=3), 2, 2)


# Determinism ###############################################################

def same(a, b):
    return all(torch.equal(x.edge_index, y.edge_index)
               and torch.equal(x.n_id, y.n_id) for x, y in zip(a, b))


def test_deterministic_under_seed():
    data = random_data(num_nodes=60, num_edges=200, seed=10)
    kwargs = dict(batch_size=5, walk_length=3, num_steps=6, log=False)
    torch.manual_seed(1)
    a = list(Sampler(data, **kwargs))
    torch.manual_seed(1)
    b = list(Sampler(data, **kwargs))
    assert same(a, b)
    c = list(Sampler(data, generator=torch.Generator().manual_seed(2),
                     **kwargs))
    d = list(Sampler(data, seed=2, **kwargs))
    assert same(c, d)
    assert not same(a, c)
    # With norms: the statistics are repeatable too.
    torch.manual_seed(3)
    e = Sampler(data, sample_coverage=4, **kwargs)
    torch.manual_seed(3)
    f = Sampler(data, sample_coverage=4, **kwargs)
    assert torch.equal(e.node_norm, f.node_norm)
    assert torch.equal(e.edge_norm, f.edge_norm)


def test_same_batches_with_workers():
    data = random_data(num_nodes=60, num_edges=200, seed=11)
    kwargs = dict(batch_size=5, walk_length=3, num_steps=6, log=False)
    a = list(Sampler(data, seed=4, **kwargs))
    b = list(Sampler(data, seed=4, num_workers=2, **kwargs))
    assert len(a) == len(b) == 6
    assert same(a, b)


def test_repr():
    loader = Sampler(random_data(seed=12), batch_size=5, walk_length=3,
                     num_steps=7, log=False)
    assert repr(loader) == ('FusedGraphSAINTRandomWalkSampler(batch_size=5, '
                            'walk_length=3, num_steps=7, sample_coverage=0, '
                            'device=cpu)')


# CUDA ######################################################################

@pytest.mark.cuda
def test_cuda_equals_cpu():
    data = random_data(num_nodes=400, num_edges=3000, seed=13, isolated=10)
    kwargs = dict(batch_size=50, walk_length=4, num_steps=5,
                  sample_coverage=10, log=False)
    cpu = Sampler(data, seed=5, **kwargs)
    gpu = Sampler(data.clone().to('cuda'), seed=5, **kwargs)
    assert gpu.device.type == 'cuda' and gpu.node_norm.is_cuda
    assert torch.equal(cpu.node_norm, gpu.node_norm.cpu())
    assert torch.equal(cpu.edge_norm, gpu.edge_norm.cpu())
    for a, b in zip(cpu, gpu):
        assert b.edge_index.is_cuda and b.x.is_cuda
        b = b.cpu()
        for k in ('edge_index', 'n_id', 'x', 'edge_attr', 'node_norm',
                  'edge_norm'):
            assert torch.equal(a[k], b[k]), k


@pytest.mark.cuda
@needs_torch_sparse
def test_cuda_subgraph_matches_saint_subgraph():
    data = random_data(seed=14)
    gpu = Sampler(data.clone().to('cuda'), batch_size=4, walk_length=3,
                  log=False)
    adj = SparseTensor(row=data.edge_index[0], col=data.edge_index[1],
                       value=torch.arange(data.num_edges),
                       sparse_sizes=(data.num_nodes, data.num_nodes))
    for key in keys(1, 10):
        node_idx, edge_index, edge_idx = (t.cpu() for t in gpu[key])
        row, col, value = adj.saint_subgraph(node_idx)[0].coo()
        assert torch.equal(edge_index, torch.stack([row, col]))
        assert torch.equal(edge_idx, value)


@pytest.mark.cuda
def test_cuda_checks():
    data = random_data(seed=15).to('cuda')
    with pytest.raises(ValueError, match='num_workers=0'):
        Sampler(data, 2, 2, num_workers=2, log=False)
    with pytest.warns(UserWarning, match='pin_memory'):
        loader = Sampler(data, 2, 2, log=False, pin_memory=True)
    assert next(iter(loader)).edge_index.is_cuda
    data.x = data.x.cpu()
    with pytest.warns(UserWarning, match='slow path'):
        loader = Sampler(data, 2, 2, log=False)
    batch = next(iter(loader))
    assert batch.x.device.type == 'cpu' and batch.edge_index.is_cuda


@pytest.mark.parametrize('device', ['cpu', pytest.param(
    'cuda', marks=pytest.mark.cuda)])
def test_prefetch_yields_the_same_batches(device):
    """prefetch=True assembles batches on a background thread: the same
    steps (keys drawn in the caller's thread) as without."""
    g = torch.Generator().manual_seed(0)
    data = Data(edge_index=torch.randint(30, (2, 120), generator=g),
                x=torch.randn(30, 4, generator=g), num_nodes=30).to(device)

    def epoch(**kwargs):
        loader = FusedGraphSAINTRandomWalkSampler(
            data, batch_size=5, walk_length=2, num_steps=4, log=False,
            seed=3, **kwargs)
        return [(b.x, b.edge_index) for b in loader]
    plain, ahead = epoch(prefetch=False), epoch(prefetch=True)
    assert len(plain) == len(ahead) == 4
    for a, b in zip(ahead, plain):
        for x, y in zip(a, b):
            assert torch.equal(x, y)
    with pytest.raises(ValueError, match="needs 'num_workers=0'"):
        FusedGraphSAINTRandomWalkSampler(data, batch_size=5, walk_length=2,
                                         prefetch=True, num_workers=1)
