"""FusedShaDowKHopSampler against PyG's ShaDowKHopSampler (torch_sparse's
ego_k_hop_sample_adj): PyG's own test with the import swapped, exact
comparison where sampling is exhaustive, node inclusion frequencies where it
is random, a plain-Python reference of the per-root induced subgraph, edge
cases, argument checks, determinism and CPU/CUDA agreement."""
import warnings

import pytest
import torch
from torch_geometric.data import Data

from pyg_fusesample import FusedShaDowKHopSampler
from pyg_fusesample.loader import fused_shadow
from pyg_fusesample.loader.fused_shadow import grouped_induced_edges
from pyg_fusesample.sparse import WalkGraph

from test_loader import assert_batches_equal

try:  # PyG's sampler is the reference where torch_sparse is installed
    import torch_sparse  # noqa: F401
    from torch_geometric.loader import ShaDowKHopSampler
    from torch_geometric.typing import SparseTensor
    WITH_TORCH_SPARSE = True
except ImportError:  # pragma: no cover
    WITH_TORCH_SPARSE = False

needs_torch_sparse = pytest.mark.skipif(
    not WITH_TORCH_SPARSE, reason="PyG's reference needs torch_sparse")


def random_data(num_nodes=40, num_edges=150, seed=0, isolated=3,
                self_loops=True, multi=False) -> Data:
    """A random directed graph with x, y, an edge attribute, isolated nodes
    at the end (ids >= num_nodes - isolated) and optionally self-loops and
    parallel edges."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - isolated
    src = torch.randint(active, (num_edges, ), generator=g)
    dst = torch.randint(active, (num_edges, ), generator=g)
    if not multi:
        key = torch.unique(src * num_nodes + dst)
        src, dst = key // num_nodes, key % num_nodes
        perm = torch.randperm(src.numel(), generator=g)
        src, dst = src[perm], dst[perm]
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    edge_index = torch.stack([src, dst])
    return Data(edge_index=edge_index, num_nodes=num_nodes,
                x=torch.randn(num_nodes, 4, generator=g),
                y=torch.randint(5, (num_nodes, ), generator=g),
                edge_attr=torch.randn(edge_index.size(1), 2, generator=g),
                note='kept as is')


def max_in_degree(data) -> int:
    return int(torch.bincount(data.edge_index[1],
                              minlength=data.num_nodes).max())


def pyg_shadow(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return ShaDowKHopSampler(*args, **kwargs)


def assert_same_batch(ours, theirs, check_edge_order=True):
    assert type(ours) is type(theirs)  # PyG's DataBatch
    assert ours.num_graphs == theirs.num_graphs
    for key in ('batch', 'ptr', 'root_n_id', 'x', 'y'):
        assert torch.equal(ours[key], theirs[key]), key
    assert ours.note == theirs.note
    if check_edge_order:
        assert torch.equal(ours.edge_index, theirs.edge_index)
        assert torch.equal(ours.edge_attr, theirs.edge_attr)
    else:  # parallel edges: equal as multisets of (source, target, attr)
        def rows(b):
            return sorted(zip(b.edge_index[0].tolist(),
                              b.edge_index[1].tolist(),
                              map(tuple, b.edge_attr.tolist())))
        assert rows(ours) == rows(theirs)


# PyG's own test (test/loader/test_shadow.py), the import swapped ###########
# Every root's in-degree is <= 3 = num_neighbors, so the sample is exhaustive
# and PyG's exact numbers hold unchanged.

def test_shadow_k_hop_sampler():
    row = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4, 5, 5])
    col = torch.tensor([1, 2, 3, 0, 2, 0, 1, 4, 5, 0, 2, 5, 2, 4])
    edge_index = torch.stack([row, col], dim=0)
    edge_weight = torch.arange(row.size(0))
    x = torch.randn(6, 16)
    y = torch.randint(3, (6, ), dtype=torch.long)
    data = Data(edge_index=edge_index, edge_weight=edge_weight, x=x, y=y)

    train_mask = torch.tensor([1, 1, 0, 0, 0, 0], dtype=torch.bool)
    loader = FusedShaDowKHopSampler(data, depth=1, num_neighbors=3,
                                    node_idx=train_mask, batch_size=2)
    assert len(loader) == 1

    batch1 = next(iter(loader))
    assert batch1.num_graphs == len(batch1) == 2

    assert batch1.batch.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert batch1.ptr.tolist() == [0, 4, 7]
    assert batch1.root_n_id.tolist() == [0, 5]
    assert batch1.x.tolist() == x[torch.tensor([0, 1, 2, 3, 0, 1, 2])].tolist()
    assert batch1.y.tolist() == y[train_mask].tolist()
    row, col = batch1.edge_index
    assert row.tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6, 6]
    assert col.tolist() == [1, 2, 3, 0, 2, 0, 1, 0, 5, 6, 4, 6, 4, 5]
    e_id = torch.tensor([0, 1, 2, 3, 4, 5, 6, 9, 0, 1, 3, 4, 5, 6])
    assert batch1.edge_weight.tolist() == edge_weight[e_id].tolist()

    if not WITH_TORCH_SPARSE:  # pragma: no cover
        return
    adj_t = SparseTensor(row=edge_index[0], col=edge_index[1],
                         value=edge_weight).t()
    data = Data(adj_t=adj_t, x=x, y=y)

    loader = FusedShaDowKHopSampler(data, depth=1, num_neighbors=3,
                                    node_idx=train_mask, batch_size=2)
    assert len(loader) == 1

    batch2 = next(iter(loader))
    assert batch2.num_graphs == len(batch2) == 2

    assert batch1.batch.tolist() == batch2.batch.tolist()
    assert batch1.ptr.tolist() == batch2.ptr.tolist()
    assert batch1.root_n_id.tolist() == batch2.root_n_id.tolist()
    assert batch1.x.tolist() == batch2.x.tolist()
    assert batch1.y.tolist() == batch2.y.tolist()
    row, col, value = batch2.adj_t.t().coo()
    assert batch1.edge_index[0].tolist() == row.tolist()
    assert batch1.edge_index[1].tolist() == col.tolist()
    assert batch1.edge_weight.tolist() == value.tolist()


# Exact comparison with PyG: exhaustive sampling ############################

@needs_torch_sparse
@pytest.mark.parametrize('depth', [0, 1, 2, 3])
@pytest.mark.parametrize('seed', [0, 1])
def test_matches_pyg_exhaustive(depth, seed):
    data = random_data(seed=seed)
    k = max_in_degree(data)
    node_idx = torch.randperm(data.num_nodes,
                              generator=torch.Generator().manual_seed(seed))
    theirs = pyg_shadow(data, depth=depth, num_neighbors=k,
                        node_idx=node_idx, batch_size=7)
    for num_neighbors in (k, k + 5, -1):
        ours = FusedShaDowKHopSampler(data, depth=depth,
                                      num_neighbors=num_neighbors,
                                      node_idx=node_idx, batch_size=7)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same_batch(a, b)


@needs_torch_sparse
def test_matches_pyg_parallel_edges_and_bool_mask():
    data = random_data(num_nodes=25, num_edges=120, seed=3, multi=True)
    k = max_in_degree(data)
    mask = torch.zeros(data.num_nodes, dtype=torch.bool)
    mask[::3] = True
    theirs = list(pyg_shadow(data, depth=2, num_neighbors=k, node_idx=mask,
                             batch_size=4))
    ours = list(FusedShaDowKHopSampler(data, depth=2, num_neighbors=-1,
                                       node_idx=mask, batch_size=4))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert_same_batch(a, b, check_edge_order=False)
        # Sorted by (source, target) as PyG's; parallel edges side by side.
        key = a.edge_index[0] * a.num_nodes + a.edge_index[1]
        assert bool((key[1:] >= key[:-1]).all())


@needs_torch_sparse
@pytest.mark.parametrize('union_min_set,hub_factor', [(64, 4), (1, 0),
                                                      (10**9, 0)])
def test_matches_pyg_adj_t(union_min_set, hub_factor, monkeypatch):
    monkeypatch.setattr(fused_shadow, 'UNION_MIN_SET', union_min_set)
    monkeypatch.setattr(fused_shadow, 'HUB_FACTOR', hub_factor)
    data = random_data(seed=4)
    k = max_in_degree(data)
    adj_t = SparseTensor(row=data.edge_index[0], col=data.edge_index[1],
                         value=data.edge_attr[:, 0],
                         sparse_sizes=(data.num_nodes, data.num_nodes)).t()
    sparse = Data(adj_t=adj_t, x=data.x, y=data.y)
    theirs = list(pyg_shadow(sparse, depth=2, num_neighbors=k, batch_size=5))
    ours = list(FusedShaDowKHopSampler(sparse, depth=2, num_neighbors=k,
                                       batch_size=5))
    for a, b in zip(ours, theirs):
        for key in ('batch', 'ptr', 'root_n_id', 'x', 'y'):
            assert torch.equal(a[key], b[key])
        ra, ca, va = a.adj_t.coo()
        rb, cb, vb = b.adj_t.coo()
        assert torch.equal(ra, rb) and torch.equal(ca, cb)
        assert torch.equal(va, vb)


# Random sampling ###########################################################

def reference_subgraphs(data, batch):
    """Per graph of a batch: its global node set and the multiset of global
    edges (source, target, edge attr) among them, from plain Python."""
    src, dst = data.edge_index.tolist()
    attrs = [tuple(r) for r in data.edge_attr.tolist()]
    out = []
    for g in range(batch.num_graphs):
        lo, hi = batch.ptr[g].item(), batch.ptr[g + 1].item()
        nodes = batch.n_id_global[lo:hi].tolist()
        node_set = set(nodes)
        edges = sorted((s, t, a) for s, t, a in zip(src, dst, attrs)
                       if s in node_set and t in node_set)
        out.append((nodes, edges))
    return out


@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('depth,k', [(1, 2), (2, 2), (3, 1)])
def test_random_sample_structure(replace, depth, k):
    # Random regime: every graph of the batch is the *induced* subgraph of a
    # node set that holds its root, is sorted, and lies within depth in-hops.
    data = random_data(num_nodes=60, num_edges=300, seed=5)
    data.gid = torch.arange(data.num_nodes)  # global ids ride along
    loader = FusedShaDowKHopSampler(data, depth=depth, num_neighbors=k,
                                    replace=replace, batch_size=9,
                                    shuffle=True, seed=0)
    in_nbrs = [set() for _ in range(data.num_nodes)]
    for s, t in data.edge_index.t().tolist():
        in_nbrs[t].add(s)
    for batch in loader:
        batch.n_id_global = batch.gid
        roots = batch.gid[batch.root_n_id].tolist()
        assert batch.y.tolist() == data.y[roots].tolist()
        for g, (nodes, edges) in enumerate(reference_subgraphs(data, batch)):
            assert nodes == sorted(set(nodes))
            assert roots[g] in nodes
            assert batch.ptr[g] + nodes.index(roots[g]) == batch.root_n_id[g]
            # within depth in-hops of the root
            ball, frontier = {roots[g]}, {roots[g]}
            for _ in range(depth):
                frontier = set().union(*(in_nbrs[v] for v in frontier))
                ball |= frontier
            assert set(nodes) <= ball
            # the batch's edges of graph g are exactly the induced ones
            lo, hi = batch.ptr[g].item(), batch.ptr[g + 1].item()
            mine = (batch.batch[batch.edge_index[0]] == g)
            assert bool((batch.batch[batch.edge_index[1]][mine] == g).all())
            got = sorted((batch.gid[s].item(), batch.gid[t].item(), tuple(a))
                         for s, t, a in zip(batch.edge_index[0][mine].tolist(),
                                            batch.edge_index[1][mine].tolist(),
                                            batch.edge_attr[mine].tolist()))
            assert got == edges
            assert all(lo <= s < hi for s in batch.edge_index[:, mine]
                       .view(-1).tolist())
        key = batch.edge_index[0] * batch.num_nodes + batch.edge_index[1]
        assert bool((key[1:] >= key[:-1]).all())


def test_fanout_without_replacement():
    # A root keeps min(deg, k) distinct in-neighbours: a star with 10
    # in-neighbours sampled with k = 4 (depth 1) gives 5 nodes every time.
    src = torch.arange(1, 11)
    hub = torch.zeros(10, dtype=torch.long)
    data = Data(edge_index=torch.stack([src, hub]), num_nodes=11)
    loader = FusedShaDowKHopSampler(data, depth=1, num_neighbors=4,
                                    node_idx=torch.zeros(50, dtype=torch.long),
                                    batch_size=50, seed=1)
    batch = next(iter(loader))
    assert batch.ptr.diff().tolist() == [5] * 50
    assert batch.edge_index.size(1) == 50 * 4


@pytest.mark.slow
@needs_torch_sparse
@pytest.mark.parametrize('replace', [False, True])
def test_inclusion_frequencies(replace):
    # A directed tree, edges child -> parent, sampled from the root along
    # in-edges; every node has more children than k, so PyG samples (rather
    # than takes all) everywhere. Our frequencies must match the exact
    # inclusion probabilities. PyG's differ, in two known ways, each checked
    # against its own exact value instead:
    # * without replacement, torch_sparse's ego_k_hop_sample_adj runs
    #   Floyd's algorithm with uniform_randint(j) drawing from [0, j) instead
    #   of [0, j], which favours the first in-neighbours of every node (the
    #   root's first two children come out with 0.75 instead of 3/5);
    # * with replacement, a child drawn m times is expanded m times (PyG's
    #   frontier keeps repeats), so a grandchild is kept with
    #   1 - E[(3/4)^(3m)], m ~ Binomial(3, 1/5), not p1 * (1 - (3/4)^3).
    fanout = [5, 4]
    parent, nodes, level = [], [0], [0]
    for f in fanout:
        nxt = []
        for v in level:
            for _ in range(f):
                parent.append(v)
                nodes.append(len(nodes))
                nxt.append(nodes[-1])
        level = nxt
    child = torch.arange(1, len(nodes))
    data = Data(edge_index=torch.stack([child, torch.tensor(parent)]),
                num_nodes=len(nodes))
    data.gid = torch.arange(data.num_nodes)
    roots = torch.zeros(4000, dtype=torch.long)
    k = 3

    def frequencies(loader):
        count = torch.zeros(data.num_nodes)
        for batch in loader:
            count += torch.bincount(batch.gid, minlength=data.num_nodes)
        return count / roots.numel()

    torch.manual_seed(0)
    theirs = frequencies(pyg_shadow(data, depth=2, num_neighbors=k,
                                    node_idx=roots, replace=replace,
                                    batch_size=500))
    ours = frequencies(FusedShaDowKHopSampler(
        data, depth=2, num_neighbors=k, node_idx=roots, replace=replace,
        batch_size=500, seed=0))
    # A child of the root is kept with p1 (3 of 5 without replacement, in
    # one of 3 draws with), a grandchild with p1 * p2 (3 of 4).
    p1 = 3 / 5 if not replace else 1 - (4 / 5)**3
    p2 = p1 * (3 / 4 if not replace else 1 - (3 / 4)**3)
    expected = torch.tensor([1.0] + [p1] * 5 + [p2] * 20)
    std = (expected * (1 - expected) / roots.numel()).sqrt().clamp(min=1e-3)
    assert bool(((ours - expected).abs() <= 5 * std).all())
    if replace:
        pyg_p2 = 1 - (4 / 5 + 1 / 5 * (3 / 4)**3)**3
        pyg_expected = torch.tensor([1.0] + [p1] * 5 + [pyg_p2] * 20)
        assert bool(((theirs - pyg_expected).abs() <= 5 * std).all())
        assert pyg_p2 - p2 > 0.02  # the difference is real, not noise
    else:
        assert bool(((theirs[1:3] - expected[1:3]) > 10 * std[1:3]).all())


# Edge cases and arguments ##################################################

def test_isolated_roots_and_batch_larger_than_graph():
    data = random_data(num_nodes=12, num_edges=30, seed=6, isolated=4)
    loader = FusedShaDowKHopSampler(data, depth=2, num_neighbors=-1,
                                    batch_size=100)
    assert len(loader) == 1
    batch = next(iter(loader))
    assert batch.num_graphs == 12
    for v in range(8, 12):  # isolated: the root alone, no edges
        assert batch.ptr[v + 1] - batch.ptr[v] == 1
        assert batch.root_n_id[v] == batch.ptr[v]
        assert not bool((batch.batch[batch.edge_index[0]] == v).any())
    assert torch.equal(batch.y, data.y)


def test_empty_node_idx():
    data = random_data(seed=7)
    loader = FusedShaDowKHopSampler(
        data, depth=2, num_neighbors=3,
        node_idx=torch.empty(0, dtype=torch.long), batch_size=4)
    assert len(loader) == 0
    assert list(loader) == []
    batch = loader.sample(torch.empty(0, dtype=torch.long))
    assert batch.num_graphs == 0 and batch.edge_index.size(1) == 0
    assert batch.x.size() == (0, 4)


def test_graph_without_edges_and_depth_zero():
    data = Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=5,
                x=torch.arange(5.).view(-1, 1))
    batch = next(iter(FusedShaDowKHopSampler(data, depth=2, num_neighbors=2,
                                             batch_size=5)))
    assert batch.ptr.tolist() == [0, 1, 2, 3, 4, 5]
    assert batch.edge_index.size() == (2, 0)
    assert batch.x.view(-1).tolist() == [0., 1., 2., 3., 4.]
    data = random_data(seed=8)
    batch = next(iter(FusedShaDowKHopSampler(data, depth=0, num_neighbors=2,
                                             batch_size=6)))
    assert batch.ptr.tolist() == list(range(7))
    # only self-loops survive a one-node subgraph
    assert bool((batch.edge_index[0] == batch.edge_index[1]).all())


def test_zero_dim_attribute():
    # A 0-dim tensor passes through (PyG's loop calls size(0) on it).
    data = random_data(seed=19)
    data.temperature = torch.tensor(0.5)
    batch = next(iter(FusedShaDowKHopSampler(data, 1, 2, batch_size=4)))
    assert batch.temperature is data.temperature
    assert batch.note == 'kept as is'


def test_duplicate_roots_get_their_own_graphs():
    data = random_data(seed=9)
    batch = next(iter(FusedShaDowKHopSampler(
        data, depth=2, num_neighbors=-1, node_idx=torch.tensor([3, 3, 3]),
        batch_size=3)))
    sizes = batch.ptr.diff().tolist()
    assert sizes[0] == sizes[1] == sizes[2]
    assert batch.y.tolist() == [data.y[3].item()] * 3


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(depth=-1, num_neighbors=2), ValueError, "'depth'"),
    (dict(depth=1.5, num_neighbors=2), TypeError, "'depth'"),
    (dict(depth=1, num_neighbors=-2), ValueError, "'num_neighbors'"),
    (dict(depth=1, num_neighbors=[2, 2]), TypeError, "'num_neighbors'"),
    (dict(depth=1, num_neighbors=2, node_idx=torch.tensor([0, 99])),
     ValueError, 'outside'),
    (dict(depth=1, num_neighbors=2, node_idx=torch.tensor([-1])),
     ValueError, 'outside'),
    (dict(depth=1, num_neighbors=2, node_idx=torch.ones(3, dtype=torch.bool)),
     ValueError, 'mask'),
    (dict(depth=1, num_neighbors=2, node_idx=torch.tensor([0.5])),
     ValueError, 'integer'),
    (dict(depth=1, num_neighbors=2, batch_size=0), ValueError, 'batch_size'),
    (dict(depth=1, num_neighbors=2, shuffle=True,
          sampler=torch.utils.data.SequentialSampler(range(3))),
     ValueError, 'mutually exclusive'),
    (dict(depth=1, num_neighbors=2, seed=0, generator=torch.Generator()),
     ValueError, 'either'),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        FusedShaDowKHopSampler(random_data(seed=10), **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match='edge_index'):
        FusedShaDowKHopSampler(Data(x=torch.randn(3, 2)), 1, 2)
    with pytest.raises(TypeError, match='Data'):
        FusedShaDowKHopSampler({'edge_index': torch.zeros(2, 1)}, 1, 2)
    # (build_csc's message; the CPU op raises it as a RuntimeError)
    with pytest.raises((ValueError, RuntimeError), match='outside|must lie'):
        FusedShaDowKHopSampler(Data(edge_index=torch.tensor([[0], [5]]),
                                    num_nodes=3), 1, 2)


# Determinism ###############################################################

def batches_equal(a, b):
    return (torch.equal(a.ptr, b.ptr) and torch.equal(a.edge_index,
                                                      b.edge_index)
            and torch.equal(a.x, b.x) and torch.equal(a.root_n_id,
                                                      b.root_n_id))


def test_deterministic_under_seed():
    data = random_data(num_nodes=80, num_edges=500, seed=11)

    def epoch(**kwargs):
        return list(FusedShaDowKHopSampler(data, depth=2, num_neighbors=2,
                                           batch_size=16, shuffle=True,
                                           **kwargs))

    torch.manual_seed(5)
    a = epoch()
    torch.manual_seed(5)
    b = epoch()
    assert all(batches_equal(x, y) for x, y in zip(a, b))
    c = epoch(generator=torch.Generator().manual_seed(3))
    d = epoch(generator=torch.Generator().manual_seed(3))
    assert all(batches_equal(x, y) for x, y in zip(c, d))
    e = epoch(seed=3)
    assert all(batches_equal(x, y) for x, y in zip(c, e))
    f = epoch(seed=4)
    assert not all(batches_equal(x, y) for x, y in zip(c, f))


def test_same_batches_with_workers():
    data = random_data(num_nodes=80, num_edges=500, seed=12)
    kwargs = dict(depth=2, num_neighbors=2, batch_size=16, shuffle=True)
    a = list(FusedShaDowKHopSampler(data, seed=1, **kwargs))
    b = list(FusedShaDowKHopSampler(data, seed=1, num_workers=2, **kwargs))
    assert len(a) == len(b) == 5
    assert all(batches_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize('multi', [False, True])
@pytest.mark.parametrize('hub_factor', [0, 4, 10**9])
def test_grouped_induced_edges(multi, hub_factor, monkeypatch):
    # Against plain Python, for scanned lists (hub_factor large), searched
    # ones (0: every list is a "hub") and a mix, with parallel edges, and
    # in chunks (a budget below one list's length) equal to one pass.
    monkeypatch.setattr(fused_shadow, 'HUB_FACTOR', hub_factor)
    data = random_data(num_nodes=50, num_edges=600, seed=13, multi=multi)
    N = data.num_nodes
    csr = WalkGraph.from_edge_index(data.edge_index.flip(0), N)  # in-lists
    gen = torch.Generator().manual_seed(0)
    group = torch.randint(6, (120, ), generator=gen)
    node = torch.randint(N, (120, ), generator=gen)
    key = torch.unique(group * N + node)
    group, node = key // N, key % N

    src, dst = data.edge_index.tolist()
    expected = []
    for i, (gi, v) in enumerate(zip(group.tolist(), node.tolist())):
        for e in sorted(range(len(src)), key=lambda e: (src[e], e)):
            if dst[e] == v:
                at = torch.nonzero(key == gi * N + src[e]).view(-1)
                if at.numel():
                    expected.append((at.item(), i, e))
    full = grouped_induced_edges(csr.rowptr, csr.col, csr.edge_id, node,
                                 group, key, N, parallel_edges=multi)
    got = list(zip(*[t.tolist() for t in full]))
    if multi:  # parallel edges come out together, in either order
        assert sorted(got) == sorted(expected)
        assert [g[:2] for g in got] == [e[:2] for e in expected]
    else:
        assert got == expected
    assert len(expected) > 50
    for budget in (1, 7, 100):
        part = grouped_induced_edges(csr.rowptr, csr.col, csr.edge_id, node,
                                     group, key, N, parallel_edges=multi,
                                     budget=budget)
        assert all(torch.equal(x, y) for x, y in zip(full, part))


@needs_torch_sparse
@pytest.mark.parametrize('union_min_set', [1, 10**9])
@pytest.mark.parametrize('hub_factor', [0, 4])
def test_matches_pyg_on_every_path(union_min_set, hub_factor, monkeypatch):
    # The induced_subgraph-restricted pass (large sets) and the direct one,
    # with and without hub searches, give PyG's batches.
    monkeypatch.setattr(fused_shadow, 'UNION_MIN_SET', union_min_set)
    monkeypatch.setattr(fused_shadow, 'HUB_FACTOR', hub_factor)
    for multi in (False, True):
        data = random_data(num_nodes=60, num_edges=400, seed=18, multi=multi)
        k = max_in_degree(data)
        theirs = list(pyg_shadow(data, depth=2, num_neighbors=k,
                                 batch_size=9))
        ours = list(FusedShaDowKHopSampler(data, depth=2, num_neighbors=-1,
                                           batch_size=9))
        for a, b in zip(ours, theirs):
            assert_same_batch(a, b, check_edge_order=not multi)


def test_repr():
    loader = FusedShaDowKHopSampler(random_data(seed=14), depth=2,
                                    num_neighbors=5, batch_size=8)
    assert repr(loader) == ('FusedShaDowKHopSampler(depth=2, num_neighbors=5, '
                            'replace=False, num_roots=40, batch_size=8, '
                            'device=cpu)')


# CUDA ######################################################################

@pytest.mark.cuda
@pytest.mark.parametrize('replace', [False, True])
def test_cuda_equals_cpu(replace):
    data = random_data(num_nodes=300, num_edges=3000, seed=15)
    kwargs = dict(depth=2, num_neighbors=4, replace=replace, batch_size=32,
                  shuffle=True)
    cpu = list(FusedShaDowKHopSampler(data, seed=2, **kwargs))
    gpu = list(FusedShaDowKHopSampler(data.to('cuda'), seed=2, **kwargs))
    assert len(cpu) == len(gpu)
    for a, b in zip(cpu, gpu):
        assert b.edge_index.is_cuda and b.x.is_cuda
        assert batches_equal(a, b.cpu())
        assert torch.equal(a.edge_attr, b.edge_attr.cpu())
        assert torch.equal(a.y, b.y.cpu())


@pytest.mark.cuda
@needs_torch_sparse
def test_cuda_matches_pyg_exhaustive():
    data = random_data(seed=16)
    k = max_in_degree(data)
    theirs = list(pyg_shadow(data, depth=2, num_neighbors=k, batch_size=6))
    ours = list(FusedShaDowKHopSampler(data.to('cuda'), depth=2,
                                       num_neighbors=-1, batch_size=6))
    for a, b in zip(ours, theirs):
        assert_same_batch(a.cpu(), b)


@pytest.mark.cuda
def test_cuda_checks():
    data = random_data(seed=17).to('cuda')
    with pytest.raises(ValueError, match='num_workers=0'):
        FusedShaDowKHopSampler(data, 1, 2, num_workers=2)
    with pytest.warns(UserWarning, match='pin_memory'):
        loader = FusedShaDowKHopSampler(data, 1, 2, batch_size=4, pin_memory=True)
    assert next(iter(loader)).edge_index.is_cuda
    data.x = data.x.cpu()
    with pytest.warns(UserWarning, match='slow path'):
        loader = FusedShaDowKHopSampler(data, 1, 2, batch_size=4)
    batch = next(iter(loader))
    assert batch.x.device.type == 'cpu' and batch.edge_index.is_cuda


@pytest.mark.parametrize('device', ['cpu', pytest.param(
    'cuda', marks=pytest.mark.cuda)])
def test_prefetch_yields_the_same_batches(device):
    """prefetch=True assembles batches on a background thread: the same
    batches (roots, keys) as without, in order, for a shuffled epoch drawn
    from the global RNG too; it excludes worker processes."""
    data = random_data().to(device)

    def epoch(**kwargs):
        torch.manual_seed(5)  # (the roots' order and keys, no generator)
        loader = FusedShaDowKHopSampler(data, depth=2, num_neighbors=3,
                                        batch_size=6, shuffle=True, **kwargs)
        return [(b.x, b.edge_index, b.root_n_id, b.batch) for b in loader]
    plain, ahead = epoch(prefetch=False), epoch(prefetch=True)
    assert len(plain) == len(ahead) > 1
    for a, b in zip(ahead, plain):
        for x, y in zip(a, b):
            assert torch.equal(x, y)
    with pytest.raises(ValueError, match="needs 'num_workers=0'"):
        FusedShaDowKHopSampler(data, depth=1, num_neighbors=2, prefetch=True,
                               num_workers=1)


@pytest.mark.parametrize('device', ['cpu', pytest.param(
    'cuda', marks=pytest.mark.cuda)])
@pytest.mark.parametrize('threads', [1, 3])
@pytest.mark.parametrize('drop_last', [False, True])
def test_native_prefetch_threads_keep_the_order(device, threads, drop_last,
                                                monkeypatch):
    """The native threads (fusesample.ShadowBatchPrefetcher) make every
    W-th batch each; the batches come in the epoch's order with every
    attribute equal to plain iteration's: x by the nodes, y by the roots,
    edge_attr by the edges, a non-tensor as it is."""
    monkeypatch.setattr(fused_shadow._NativeIterator, 'threads',
                        {device: threads})
    data = random_data(num_nodes=70, num_edges=300, seed=21).to(device)

    def epoch(prefetch):
        loader = FusedShaDowKHopSampler(data, depth=2, num_neighbors=3,
                                        batch_size=8, shuffle=True, seed=3,
                                        drop_last=drop_last,
                                        prefetch=prefetch)
        it = iter(loader)
        return len(it), list(it)
    (n_plain, plain), (n_ahead, ahead) = epoch(False), epoch(True)
    assert n_plain == n_ahead == len(plain) == len(ahead) == \
        (8 if drop_last else 9)
    for a, b in zip(ahead, plain):
        assert a.keys() == b.keys()
        assert_batches_equal(a, b)
    it = iter(FusedShaDowKHopSampler(data, depth=2, num_neighbors=3,
                                     batch_size=8, prefetch=True))
    next(it)
    it.close()  # an epoch left half-way: its threads stop, nothing follows
    with pytest.raises(StopIteration):
        next(it)


def test_native_prefetch_reraises_the_ops_error():
    data = random_data()
    for prefetch in (False, True):
        loader = FusedShaDowKHopSampler(data, depth=2, num_neighbors=3,
                                        batch_size=8, prefetch=prefetch)
        loader.num_neighbors = -5  # neighbor_sample's own check
        with pytest.raises(RuntimeError, match='-5'):
            next(iter(loader))


def test_attributes_off_the_graph_device_are_taken_here():
    """An attribute not on the graph's device is sliced by the loader (its
    ids copied there), not by the op."""
    from pyg_fusesample.loader.subgraph_common import BatchIndex
    data = random_data()
    plan = fused_shadow._Attributes(data, torch.device('meta'))
    assert plan.node == plan.root == plan.edge == []
    node, edge = torch.tensor([4, 1, 7]), torch.tensor([0, 5])
    calls = []

    def root():  # the loader's lazy root ids: made once, on first use
        calls.append(1)
        return node[:1]
    for roots in (node[:1], root):
        index = BatchIndex(node, edge, roots)
        got = dict(plan.attributes([], index))
        assert torch.equal(got['x'], data.x[node])
        assert torch.equal(got['y'], data.y[node[:1]])
        assert index.take(data.y, 'root').tolist() == got['y'].tolist()
        assert torch.equal(got['edge_attr'], data.edge_attr[edge])
        assert got['note'] == 'kept as is'
    assert calls == [1]


@pytest.mark.cuda
def test_native_prefetch_waits_for_the_callers_stream():
    """The threads' streams start after what the caller's stream enqueued
    before the epoch (a write to x behind ~50 ms of GPU time that nothing
    on the host waits for); the caller's stream waits for each batch."""
    data = random_data().to('cuda')

    def loader(prefetch):
        return FusedShaDowKHopSampler(data, depth=2, num_neighbors=3,
                                      batch_size=8, seed=1, prefetch=prefetch)
    plain = [b.x for b in loader(False)]
    ahead = loader(True)
    torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)
    data.x.mul_(2)
    got = [b.x * 1 for b in ahead]
    assert len(got) == len(plain)
    assert all(torch.equal(a, 2 * p) for a, p in zip(got, plain))
