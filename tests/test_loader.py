"""FusedNeighborLoader against PyG's NeighborLoader and a plain BFS reference:
batch contents, fan-out semantics, subgraph types, disjoint subtrees,
determinism, trim_to_layer models, argument checks, LinkNeighborLoader."""
import sys
import warnings
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyg_fusesample  # noqa: E402,F401
from pyg_fusesample import FusedNeighborLoader, FusedNeighborSampler  # noqa: E402
from pyg_fusesample.datasets import power_law_graph  # noqa: E402
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.loader import LinkNeighborLoader, NeighborLoader  # noqa: E402

import reference as ref  # noqa: E402


def pyg_loader(*args, **kwargs):
    # PyG warns that its torch_sparse backend (no pyg-lib) is deprecated.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return NeighborLoader(*args, **kwargs)


# Fixtures ###################################################################

@pytest.fixture(scope='session')
def plgraph():
    """A generated power-law graph (synthetic) with x, y and masks."""
    return power_law_graph(3000, 6, 16, 5, seed=0)


def hub_graph(num_nodes=400, num_edges=2000, seed=0, hubs=2, isolated=10):
    """A random graph with hub targets 0..hubs-1 and isolated nodes at the
    end, with x, y and a random edge_attr."""
    ei = ref.random_graph(num_nodes, num_edges, seed, hubs, isolated)
    g = torch.Generator().manual_seed(seed)
    return Data(edge_index=ei, num_nodes=num_nodes,
                x=torch.randn(num_nodes, 5, generator=g),
                y=torch.randint(4, (num_nodes, ), generator=g),
                edge_attr=torch.randn(ei.size(1), 3, generator=g))


# Reference ##################################################################

class RefGraph:
    """In-edge lists of a graph in plain Python."""
    def __init__(self, edge_index, num_nodes):
        self.src, self.dst = edge_index.tolist()
        self.in_edges = [[] for _ in range(num_nodes)]
        for e, v in enumerate(self.dst):
            self.in_edges[v].append(e)
        self.deg = [len(es) for es in self.in_edges]

    def bfs(self, seeds, num_hops):
        """Nodes first reached at exactly hop h (h = 0..num_hops) along
        in-edges, and the ids of all in-edges of the nodes of hops
        0..num_hops-1 (what num_neighbors=[-1] * num_hops samples)."""
        seen = set(seeds)
        hops, edges, frontier = [list(seeds)], set(), list(seeds)
        for _ in range(num_hops):
            new = []
            for t in frontier:
                for e in self.in_edges[t]:
                    edges.add(e)
                    u = self.src[e]
                    if u not in seen:
                        seen.add(u)
                        new.append(u)
            hops.append(new)
            frontier = new
        return hops, edges


def global_edges(batch):
    return set(map(tuple, batch.n_id[batch.edge_index].t().tolist()))


def hop_bounds(counts):
    bounds = [0]
    for c in counts:
        bounds.append(bounds[-1] + int(c))
    return bounds


def assert_edges_valid(batch, data):
    """Every sampled edge is the graph edge its e_id names."""
    assert batch.e_id.numel() == batch.edge_index.size(1)
    assert torch.equal(data.edge_index[:, batch.e_id],
                       batch.n_id[batch.edge_index])


def assert_sliced(batch, data, node_keys=('x', 'y'), edge_keys=()):
    for key in node_keys:
        assert torch.equal(batch[key], data[key][batch.n_id]), key
    for key in edge_keys:
        assert torch.equal(batch[key], data[key][batch.e_id]), key


def assert_batches_equal(a, b):
    assert sorted(a.keys()) == sorted(b.keys())
    for key in a.keys():
        va, vb = a[key], b[key]
        if isinstance(va, torch.Tensor):
            assert va.dtype == vb.dtype and torch.equal(va, vb), key
        else:
            assert va == vb, key


def batches_equal(a, b):
    try:
        assert_batches_equal(a, b)
    except AssertionError:
        return False
    return True


# 1. num_neighbors=-1: equal to NeighborLoader ################################

def check_full_neighbourhood(ours, theirs, data, rg, num_hops):
    bs = ours.batch_size
    assert bs == theirs.batch_size
    assert torch.equal(ours.input_id, theirs.input_id)
    seeds = ours.n_id[:bs]
    assert torch.equal(seeds, theirs.n_id[:bs])
    assert ours.n_id.unique().numel() == ours.n_id.numel()

    hops, edges = rg.bfs(seeds.tolist(), num_hops)
    # Hop sets: ours by num_sampled_nodes, PyG's by position (its n_id is
    # grouped by hop too); both equal the BFS reference.
    assert list(ours.num_sampled_nodes) == [len(h) for h in hops]
    assert len(ours.num_sampled_edges) == num_hops
    assert sum(ours.num_sampled_edges) == ours.edge_index.size(1)
    bounds = hop_bounds(len(h) for h in hops)
    assert ours.n_id.numel() == theirs.n_id.numel() == bounds[-1]
    for h in range(num_hops + 1):
        exp = set(hops[h])
        lo, hi = bounds[h], bounds[h + 1]
        assert set(ours.n_id[lo:hi].tolist()) == exp, f'hop {h}'
        assert set(theirs.n_id[lo:hi].tolist()) == exp, f'PyG hop {h}'

    # Edges: same global edges and edge ids as PyG and as the reference.
    assert_edges_valid(ours, data)
    assert_edges_valid(theirs, data)
    assert global_edges(ours) == global_edges(theirs)
    assert sorted(ours.e_id.tolist()) == sorted(theirs.e_id.tolist())
    assert set(ours.e_id.tolist()) == edges
    assert ours.e_id.numel() == len(edges)  # no duplicates
    # Edges are grouped by hop: block h holds the in-edges of hop-h nodes.
    ebounds = hop_bounds(ours.num_sampled_edges)
    for h in range(num_hops):
        col = ours.edge_index[1, ebounds[h]:ebounds[h + 1]]
        assert bool(((col >= bounds[h]) & (col < bounds[h + 1])).all())

    assert_sliced(ours, data, [k for k in ('x', 'y', 'train_mask', 'val_mask',
                                           'test_mask') if k in data])
    # Everything NeighborLoader yields is there (we add the hop counts).
    assert set(theirs.keys()) <= set(ours.keys())


@pytest.mark.parametrize('num_hops', [1, 2, 3])
@pytest.mark.parametrize('batch_size', [32, 64])
def test_full_neighbourhood_matches_pyg_cora(cora, num_hops, batch_size):
    kwargs = dict(num_neighbors=[-1] * num_hops, input_nodes=cora.train_mask,
                  batch_size=batch_size, shuffle=False)
    ours = list(FusedNeighborLoader(cora, **kwargs))
    theirs = list(pyg_loader(cora, **kwargs))
    assert len(ours) == len(theirs) == -(-140 // batch_size)
    rg = RefGraph(cora.edge_index, cora.num_nodes)
    for a, b in zip(ours, theirs):
        check_full_neighbourhood(a, b, cora, rg, num_hops)


@pytest.mark.parametrize('num_hops', [1, 2, 3])
def test_full_neighbourhood_matches_pyg_generated(plgraph, num_hops):
    seeds = plgraph.train_mask.nonzero().view(-1)[:192]
    kwargs = dict(num_neighbors=[-1] * num_hops, input_nodes=seeds,
                  batch_size=64, shuffle=False)
    ours = list(FusedNeighborLoader(plgraph, **kwargs))
    theirs = list(pyg_loader(plgraph, **kwargs))
    assert len(ours) == len(theirs) == 3
    rg = RefGraph(plgraph.edge_index, plgraph.num_nodes)
    for a, b in zip(ours, theirs):
        check_full_neighbourhood(a, b, plgraph, rg, num_hops)


def test_repeated_seeds_match_pyg():
    # A seed given twice stays twice in n_id[:batch_size] (as in PyG), and
    # every copy is expanded: the same multiset of edges as PyG's.
    data = hub_graph(50, 200, seed=4, hubs=0, isolated=0)
    kwargs = dict(num_neighbors=[-1, -1], batch_size=6,
                  input_nodes=torch.tensor([3, 3, 4, 3, 9, 4]))
    a = next(iter(FusedNeighborLoader(data, **kwargs)))
    b = next(iter(pyg_loader(data, **kwargs)))
    assert torch.equal(a.n_id[:6], b.n_id[:6])
    assert set(a.n_id.tolist()) == set(b.n_id.tolist())
    assert a.n_id.numel() == b.n_id.numel()
    assert sorted(a.e_id.tolist()) == sorted(b.e_id.tolist())
    assert_edges_valid(a, data)
    assert sum(a.num_sampled_nodes) == a.num_nodes


# 2./3. Fan-outs, with and without replacement ###############################

def check_fanouts(batch, data, rg, fanouts, replace, seeds):
    bs = batch.batch_size
    assert torch.equal(batch.n_id[:bs], seeds)
    assert batch.n_id.unique().numel() == batch.n_id.numel()
    assert_edges_valid(batch, data)
    assert_sliced(batch, data, ('x', 'y'), ('edge_attr', ))
    nsn, nse = list(batch.num_sampled_nodes), list(batch.num_sampled_edges)
    assert len(nsn) == len(fanouts) + 1 and len(nse) == len(fanouts)
    assert nsn[0] == bs
    assert sum(nsn) == batch.n_id.numel() == batch.num_nodes
    assert sum(nse) == batch.edge_index.size(1)

    nb, eb = hop_bounds(nsn), hop_bounds(nse)
    n_id, row, col = batch.n_id.tolist(), *batch.edge_index.tolist()
    e_id = batch.e_id.tolist()
    num_dups = 0
    for h, k in enumerate(fanouts):
        k = k if k >= 0 else 1 << 62  # -1: all in-edges
        per_target = {t: [] for t in range(nb[h], nb[h + 1])}
        for j in range(eb[h], eb[h + 1]):
            assert nb[h] <= col[j] < nb[h + 1], 'edge of hop h targets hop h'
            assert row[j] < nb[h + 2], 'source beyond hop h + 1'
            per_target[col[j]].append(e_id[j])
        for t, eids in per_target.items():
            d = rg.deg[n_id[t]]
            if replace:
                assert len(eids) == (k if d > 0 else 0), (h, n_id[t], d)
                num_dups += len(eids) - len(set(eids))
            else:
                assert len(eids) == len(set(eids)), 'duplicate in-edge'
                assert len(eids) == min(d, k), (h, n_id[t], d)
        # The nodes of hop h + 1 are exactly the new sources of hop h.
        new = {n_id[row[j]] for j in range(eb[h], eb[h + 1])}
        new -= set(n_id[:nb[h + 1]])
        assert set(n_id[nb[h + 1]:nb[h + 2]]) == new
    return num_dups


@pytest.mark.parametrize('fanouts', [[5, 3], [10, 5, 2], [0, 4], [2, -1]])
def test_fanouts(fanouts):
    data = hub_graph()
    rg = RefGraph(data.edge_index, data.num_nodes)
    assert max(rg.deg) > 100 and rg.deg[-1] == 0  # hubs and isolated nodes
    # Seeds include both hubs (0, 1) and isolated nodes (>= 390).
    input_nodes = torch.cat([torch.arange(0, 60), torch.arange(380, 400)])
    loader = FusedNeighborLoader(data, fanouts, input_nodes=input_nodes,
                                 batch_size=40)
    batches = list(loader)
    assert len(batches) == 2
    for i, batch in enumerate(batches):
        seeds = input_nodes[40 * i:40 * (i + 1)]
        assert torch.equal(batch.input_id, torch.arange(40 * i, 40 * i + 40))
        check_fanouts(batch, data, rg, fanouts, False, seeds)


def test_fanout_subsets_vary():
    # Without replacement the hub's k in-edges are a random subset, not a
    # fixed prefix of its in-edge list.
    data = hub_graph()
    loader = FusedNeighborLoader(data, [5], input_nodes=torch.tensor([0]),
                                 seed=0)
    picked = set()
    for _ in range(10):
        batch = next(iter(loader))
        assert batch.e_id.numel() == 5
        picked |= set(batch.e_id.tolist())
    assert len(picked) > 25


@pytest.mark.parametrize('fanouts', [[4, 3], [6]])
def test_replace(fanouts):
    data = hub_graph(seed=1)
    rg = RefGraph(data.edge_index, data.num_nodes)
    input_nodes = torch.cat([torch.arange(0, 60), torch.arange(380, 400)])
    loader = FusedNeighborLoader(data, fanouts, input_nodes=input_nodes,
                                 batch_size=40, replace=True)
    num_dups = 0
    for i, batch in enumerate(loader):
        seeds = input_nodes[40 * i:40 * (i + 1)]
        num_dups += check_fanouts(batch, data, rg, fanouts, True, seeds)
    # Drawing with replacement repeats edges (also where deg >= k).
    assert num_dups > 0


# 4. Subgraph types ##########################################################

@pytest.mark.parametrize('subgraph_type', ['bidirectional', 'induced'])
def test_subgraph_type_matches_pyg(subgraph_type):
    data = hub_graph(60, 300, seed=2, hubs=1, isolated=3)
    kwargs = dict(num_neighbors=[-1, -1], subgraph_type=subgraph_type,
                  input_nodes=torch.tensor([5, 7, 57, 1, 20, 33]),
                  batch_size=3)
    ours = list(FusedNeighborLoader(data, **kwargs))
    theirs = list(pyg_loader(data, **kwargs))
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        assert torch.equal(a.n_id[:3], b.n_id[:3])
        assert set(a.n_id.tolist()) == set(b.n_id.tolist())
        assert global_edges(a) == global_edges(b)
        assert sorted(a.e_id.tolist()) == sorted(b.e_id.tolist())
        assert a.edge_index.size(1) == b.edge_index.size(1)
        assert_sliced(a, data, ('x', 'y'), ('edge_attr', ))
    if subgraph_type == 'bidirectional':
        # More edges than the directional sample, and symmetric.
        directional = list(FusedNeighborLoader(
            data, [-1, -1], input_nodes=kwargs['input_nodes'], batch_size=3))
        for a, d in zip(ours, directional):
            e = global_edges(a)
            assert e == {(v, u) for u, v in e}
            assert global_edges(d) < e


@pytest.mark.parametrize('fanouts', [[3, 2], [5, 3, 1]])
def test_induced_with_fanouts(fanouts):
    data = hub_graph()
    loader = FusedNeighborLoader(data, fanouts, subgraph_type='induced',
                                 batch_size=25, input_nodes=torch.arange(100))
    src, dst = data.edge_index
    for batch in loader:
        assert_edges_valid(batch, data)
        assert_sliced(batch, data, ('x', ), ('edge_attr', ))
        inside = torch.zeros(data.num_nodes, dtype=torch.bool)
        inside[batch.n_id] = True
        expected = (inside[src] & inside[dst]).nonzero().view(-1)
        assert sorted(batch.e_id.tolist()) == expected.tolist()


# 5. Disjoint ################################################################

@pytest.mark.parametrize('fanouts', [[-1, -1], [3, 2], [4, 2, 2]])
def test_disjoint(fanouts):
    data = hub_graph(120, 600, seed=3, hubs=1, isolated=4)
    rg = RefGraph(data.edge_index, data.num_nodes)
    input_nodes = torch.tensor([0, 3, 3, 117, 50, 8, 9, 10])  # repeat: 3
    loader = FusedNeighborLoader(data, fanouts, input_nodes=input_nodes,
                                 batch_size=8, disjoint=True)
    batch = next(iter(loader))
    bs = batch.batch_size
    assert 'batch' in batch
    assert torch.equal(batch.batch[:bs], torch.arange(bs))
    assert torch.equal(batch.n_id[:bs], input_nodes)
    assert batch.batch.numel() == batch.n_id.numel()
    row, col = batch.edge_index
    assert torch.equal(batch.batch[row], batch.batch[col])
    assert_edges_valid(batch, data)
    assert_sliced(batch, data, ('x', 'y'), ('edge_attr', ))
    pairs = set(zip(batch.batch.tolist(), batch.n_id.tolist()))
    assert len(pairs) == batch.n_id.numel()  # unique within each subtree
    sub = {i: {v for b, v in pairs if b == i} for i in range(bs)}
    # The two copies of seed 3 get equally large subtrees of their own.
    if -1 in fanouts:
        assert sub[1] == sub[2]
    if fanouts == [-1, -1]:
        for i, s in enumerate(input_nodes.tolist()):
            hops, edges = rg.bfs([s], 2)
            assert sub[i] == set().union(*map(set, hops))
            eids = batch.e_id[batch.batch[col] == i].tolist()
            assert sorted(eids) == sorted(edges)
    else:
        # Per subtree, each expanded target keeps min(deg, k) in-edges.
        nb, eb = (hop_bounds(batch.num_sampled_nodes),
                  hop_bounds(batch.num_sampled_edges))
        for h, k in enumerate(fanouts):
            c = col[eb[h]:eb[h + 1]]
            counts = torch.bincount(c, minlength=batch.n_id.numel())
            for t in range(nb[h], nb[h + 1]):
                assert int(counts[t]) == min(rg.deg[int(batch.n_id[t])], k)


# 6. Determinism #############################################################

def epochs(loader, n=2):
    return [list(loader) for _ in range(n)]


def flat(runs):
    return [b for run in runs for b in run]


def test_seed_determinism(plgraph):
    kwargs = dict(num_neighbors=[5, 3], input_nodes=torch.arange(320),
                  batch_size=64, shuffle=True)
    a = flat(epochs(FusedNeighborLoader(plgraph, seed=0, **kwargs)))
    b = flat(epochs(FusedNeighborLoader(plgraph, seed=0, **kwargs)))
    assert len(a) == len(b) == 10
    for x, y in zip(a, b):
        assert_batches_equal(x, y)
    # Epoch 2 is reshuffled and resampled.
    assert not batches_equal(a[0], a[5])
    c = flat(epochs(FusedNeighborLoader(plgraph, seed=1, **kwargs)))
    assert not any(batches_equal(x, y) for x, y in zip(a, c))
    g = torch.Generator().manual_seed(0)
    d = flat(epochs(FusedNeighborLoader(plgraph, generator=g, **kwargs)))
    for x, y in zip(a, d):
        assert_batches_equal(x, y)


def test_sampling_keys_differ_without_shuffle(plgraph):
    # Same seeds in the same order, but a new sample every epoch.
    loader = FusedNeighborLoader(plgraph, [3], input_nodes=torch.arange(64),
                                 batch_size=64, seed=0)
    (a, ), (b, ) = epochs(loader)
    assert torch.equal(a.n_id[:64], b.n_id[:64])
    assert not torch.equal(a.e_id, b.e_id)


def test_num_workers_determinism(plgraph):
    kwargs = dict(num_neighbors=[5, 3], input_nodes=torch.arange(256),
                  batch_size=64, shuffle=True, seed=0)
    a = list(FusedNeighborLoader(plgraph, **kwargs))
    b = list(FusedNeighborLoader(plgraph, num_workers=2, **kwargs))
    assert len(a) == len(b) == 4
    for x, y in zip(a, b):
        assert_batches_equal(x, y)


def test_global_seed_determinism(plgraph):
    kwargs = dict(num_neighbors=[5, 3], input_nodes=torch.arange(256),
                  batch_size=64, shuffle=True)

    def run(s):
        torch.manual_seed(s)
        return flat(epochs(FusedNeighborLoader(plgraph, **kwargs)))

    a, b, c = run(3), run(3), run(4)
    for x, y in zip(a, b):
        assert_batches_equal(x, y)
    assert not any(batches_equal(x, y) for x, y in zip(a, c))


# 7. Models with trim_to_layer ###############################################

def untrimmed_and_trimmed(model, batch):
    """Seed outputs of one batch without and with trim_to_layer."""
    bs = batch.batch_size
    out = model(batch.x, batch.edge_index)[:bs]
    trimmed = model(batch.x, batch.edge_index,
                    num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                    num_sampled_edges_per_hop=batch.num_sampled_edges)
    return out, trimmed


def test_graphsage_trim_to_layer_full_neighbourhood(cora):
    from torch_geometric.nn.models import GraphSAGE
    torch.manual_seed(0)
    model = GraphSAGE(cora.num_features, 16, num_layers=2).eval()
    with torch.no_grad():
        full = model(cora.x, cora.edge_index)
        loader = FusedNeighborLoader(cora, [-1, -1], batch_size=64,
                                     input_nodes=cora.train_mask)
        for batch in loader:
            bs = batch.batch_size
            out, trimmed = untrimmed_and_trimmed(model, batch)
            assert trimmed.size(0) < batch.num_nodes  # trimming happened
            # The full 2-hop neighbourhood gives the full-graph output.
            assert torch.allclose(out, full[batch.n_id[:bs]], atol=1e-5)
            assert torch.allclose(trimmed[:bs], out, atol=1e-5)


@pytest.mark.parametrize('fanouts', [[5, 3], [4, 3, 2]])
def test_graphsage_trim_to_layer_sampled(plgraph, fanouts):
    from torch_geometric.nn.models import GraphSAGE
    torch.manual_seed(0)
    model = GraphSAGE(plgraph.num_features, 16,
                      num_layers=len(fanouts)).eval()
    loader = FusedNeighborLoader(plgraph, fanouts, batch_size=64,
                                 input_nodes=torch.arange(128), seed=0)
    with torch.no_grad():
        for batch in loader:
            bs = batch.batch_size
            out, trimmed = untrimmed_and_trimmed(model, batch)
            assert trimmed.size(0) < batch.num_nodes
            assert torch.allclose(trimmed[:bs], out, atol=1e-5)


# 8. Argument checks, empty inputs, lengths ##################################

def small_data():
    return hub_graph(50, 200, seed=4, hubs=0, isolated=0)


@pytest.mark.parametrize('kwargs,exc,match', [
    (dict(num_neighbors=[5, -2]), ValueError, 'num_neighbors'),
    (dict(num_neighbors=[5, 2.5]), TypeError, 'num_neighbors'),
    (dict(num_neighbors=[5], input_nodes=torch.tensor([0, 50])), ValueError,
     'input_nodes'),
    (dict(num_neighbors=[5], input_nodes=torch.tensor([-1, 3])), ValueError,
     'input_nodes'),
    (dict(num_neighbors=[5], batch_size=0), ValueError, 'batch_size'),
    (dict(num_neighbors=[5], batch_size=-3), ValueError, 'batch_size'),
    (dict(num_neighbors=[5], seed=0, generator=torch.Generator()),
     ValueError, 'generator'),
    (dict(num_neighbors=[5], time_attr='t'), ValueError,
     "'time_attr' 't' of the nodes must be an integer tensor"),
    (dict(num_neighbors=[5], weight_attr='nope'), ValueError,
     "'weight_attr' 'nope' is not an attribute"),
    (dict(num_neighbors=[5], input_time=torch.zeros(50)),
     ValueError, "'input_time' is set while 'time_attr' is not set"),
    (dict(num_neighbors=[5], time_attr='time', weight_attr='w',
          temporal_strategy='last', replace=True),
     NotImplementedError, "with replacement under temporal_strategy='last'"),
    (dict(num_neighbors=[5], prefetch='threads'), ValueError, 'prefetch'),
    (dict(num_neighbors=[5], prefetch=1), ValueError, 'prefetch'),
    # lookahead overlaps GPU work: CPU data is refused; both modes prepare
    # batches in the training process
    (dict(num_neighbors=[5], prefetch=True), ValueError, 'CUDA'),
    (dict(num_neighbors=[5], prefetch='thread', num_workers=2), ValueError,
     'num_workers'),
    (dict(num_neighbors=[5], prefetch=True, num_workers=2), ValueError,
     'num_workers'),
])
def test_bad_arguments(kwargs, exc, match):
    data = small_data()
    data.t = torch.zeros(50)
    data.w = torch.ones(data.num_edges)
    with pytest.raises(exc, match=match):
        FusedNeighborLoader(data, **kwargs)


@pytest.mark.parametrize('edge_index', [
    'float', 'transposed', 'three_rows', 'one_dim'])
def test_bad_edge_index(edge_index):
    data = small_data()
    ei = data.edge_index
    data.edge_index = {
        'float': ei.float(),
        'transposed': ei.t().contiguous(),
        'three_rows': torch.cat([ei, ei[:1]]),
        'one_dim': ei.reshape(-1),
    }[edge_index]
    with pytest.raises(ValueError, match='edge_index'):
        FusedNeighborLoader(data, [5], batch_size=4)


@pytest.mark.parametrize('pos,value', [((0, 0), 50), ((1, 0), 50),
                                       ((1, 3), -1)])
def test_edge_index_out_of_range(pos, value):
    data = small_data()
    data.edge_index = data.edge_index.clone()
    data.edge_index[pos] = value
    with pytest.raises((ValueError, RuntimeError), match='row|col|edge_index'):
        next(iter(FusedNeighborLoader(data, [5], batch_size=4)))


def test_hetero_induced_on_a_tiny_graph():
    # (tests/test_hetero_induced.py has the full cases)
    data = HeteroData()
    data['paper'].x = torch.randn(4, 2)
    data['paper', 'cites', 'paper'].edge_index = torch.tensor([[0, 1],
                                                               [1, 2]])
    batch = next(iter(FusedNeighborLoader(data, [5], batch_size=4,
                                          input_nodes=('paper', None),
                                          subgraph_type='induced')))
    assert batch['paper'].n_id.tolist()[:4] == [0, 1, 2, 3]
    assert batch['paper', 'cites', 'paper'].edge_index.tolist() == [[0, 1],
                                                                    [1, 2]]


@pytest.mark.parametrize('input_nodes', [
    torch.tensor([], dtype=torch.long), torch.zeros(50, dtype=torch.bool)])
def test_empty_input_nodes(input_nodes):
    data = small_data()
    loader = FusedNeighborLoader(data, [5], input_nodes=input_nodes,
                                 batch_size=4, shuffle=True)
    assert len(loader) == 0
    assert list(loader) == []
    assert len(loader) == len(pyg_loader(data, [5], input_nodes=input_nodes,
                                         batch_size=4))


@pytest.mark.parametrize('num_inputs,batch_size', [(50, 7), (48, 8), (5, 8),
                                                   (1, 1)])
@pytest.mark.parametrize('drop_last', [False, True])
def test_len_and_drop_last(num_inputs, batch_size, drop_last):
    data = small_data()
    input_nodes = torch.arange(num_inputs)
    kwargs = dict(num_neighbors=[3], input_nodes=input_nodes,
                  batch_size=batch_size, drop_last=drop_last, shuffle=True)
    ours = FusedNeighborLoader(data, seed=0, **kwargs)
    theirs = pyg_loader(data, **kwargs)
    assert len(ours) == len(theirs)
    batches = list(ours)
    assert len(batches) == len(ours) == len(list(theirs))
    sizes = [b.batch_size for b in batches]
    if drop_last:
        assert sizes == [batch_size] * (num_inputs // batch_size)
    else:
        assert sum(sizes) == num_inputs
        # Every seed exactly once per epoch.
        seeds = torch.cat([b.n_id[:b.batch_size] for b in batches])
        assert sorted(seeds.tolist()) == list(range(num_inputs))
    for b in batches:
        assert torch.equal(b.n_id[:b.batch_size], input_nodes[b.input_id])


# 9. transform and LinkNeighborLoader ########################################

def test_transform():
    data = small_data()
    calls = []

    def transform(batch):
        calls.append(batch.batch_size)
        batch.seed_sum = int(batch.n_id[:batch.batch_size].sum())
        return batch

    loader = FusedNeighborLoader(data, [3, 2], batch_size=16,
                                 transform=transform)
    batches = list(loader)
    assert calls == [16, 16, 16, 2]
    for b in batches:
        assert b.seed_sum == int(b.n_id[:b.batch_size].sum())


def test_transform_sampler_output():
    data = small_data()

    def drop_edges(out):
        out.row, out.col = out.row[:0], out.col[:0]
        out.edge = out.edge[:0]
        out.num_sampled_edges = [0] * len(out.num_sampled_edges)
        return out

    batch = next(iter(FusedNeighborLoader(
        data, [3, 2], batch_size=16, transform_sampler_output=drop_edges)))
    assert batch.edge_index.size(1) == 0 and batch.num_nodes > 16


@pytest.mark.parametrize('neg_sampling_ratio', [None, 1.0])
def test_link_neighbor_loader(neg_sampling_ratio):
    data = small_data()
    label_index = data.edge_index[:, :10]
    sampler = FusedNeighborSampler(data, [5, 5])
    loader = LinkNeighborLoader(data, [5, 5], edge_label_index=label_index,
                                batch_size=4, neighbor_sampler=sampler,
                                neg_sampling_ratio=neg_sampling_ratio)
    batches = list(loader)
    assert len(batches) == 3
    for batch in batches:
        n = batch.input_id.numel()
        assert 'edge_label_index' in batch
        assert_edges_valid(batch, data)
        assert_sliced(batch, data, ('x', 'y'), ('edge_attr', ))
        assert batch.n_id.unique().numel() == batch.n_id.numel()
        # The positive label edges map back to the requested ones.
        pos = batch.n_id[batch.edge_label_index[:, :n]]
        assert torch.equal(pos, label_index[:, batch.input_id])
        assert sum(batch.num_sampled_nodes) == batch.num_nodes
        assert sum(batch.num_sampled_edges) == batch.edge_index.size(1)
        if neg_sampling_ratio:
            assert batch.edge_label_index.size(1) == 2 * n
            assert torch.equal(batch.edge_label,
                               torch.tensor([1.] * n + [0.] * n))


@pytest.mark.parametrize('bad,match', [
    (torch.tensor([[1, 2]]), '1-dimensional'),
    (torch.tensor([1.7, 2.0]), 'integer node indices'),
    (torch.zeros(10, dtype=torch.bool), 'boolean mask of length 10'),
])
def test_bad_input_nodes_shapes(bad, match):
    data = Data(x=torch.randn(50, 2), edge_index=torch.randint(0, 50, (2, 100)))
    with pytest.raises(ValueError, match=match):
        FusedNeighborLoader(data, [2], input_nodes=bad)
