"""FusedNeighborLoader on HeteroData: against PyG's NeighborLoader (its
torch_sparse hetero sampler here) and a per-type BFS reference with -1
fan-outs; the per-edge-type contract with fan-outs (list, dict,
NumNeighbors), replace, disjoint, bidirectional, transform, repeatability,
workers, trim_to_layer and hetero models; bad arguments."""
import itertools
import warnings

import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample import FusedNeighborLoader
from torch_geometric.data import HeteroData
from torch_geometric.loader import NeighborLoader
from torch_geometric.sampler import NumNeighbors


def pyg_loader(*args, **kwargs):
    # PyG warns that its torch_sparse backend (no pyg-lib) is deprecated.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return NeighborLoader(*args, **kwargs)


# Graphs #####################################################################

def random_hetero(seed=0, features_everywhere=False):
    """Four node types (one without features, one without edges), five
    relations with edge attributes on two of them, one relation with no
    edges, a hub paper (0) and isolated papers (the last 5)."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data['paper'].x = torch.randn(80, 8, generator=g)
    data['paper'].y = torch.randint(3, (80, ), generator=g)
    data['paper'].train_mask = torch.rand(80, generator=g) < 0.5
    data['author'].x = torch.randn(50, 4, generator=g)
    data['inst'].num_nodes = 12
    data['venue'].x = torch.randn(5, 2, generator=g)
    if features_everywhere:
        data['inst'].x = torch.randn(12, 3, generator=g)

    def edges(num_src, num_dst, m):
        src = torch.randint(num_src, (m, ), generator=g)
        dst = torch.randint(num_dst, (m, ), generator=g)
        keys = torch.unique(src * num_dst + dst)
        keys = keys[torch.randperm(keys.numel(), generator=g)]
        return torch.stack([keys // num_dst, keys % num_dst])

    cites = edges(75, 75, 250)
    hub = torch.stack([torch.arange(1, 41), torch.zeros(40, dtype=torch.long)])
    cites = torch.cat([cites, hub], dim=1)
    keys = torch.unique(cites[0] * 80 + cites[1])
    cites = torch.stack([keys // 80, keys % 80])
    data['paper', 'cites', 'paper'].edge_index = cites
    data['paper', 'cites', 'paper'].edge_attr = torch.randn(
        cites.size(1), 3, generator=g)
    writes = edges(50, 75, 200)
    data['author', 'writes', 'paper'].edge_index = writes
    data['author', 'writes', 'paper'].edge_weight = torch.rand(
        writes.size(1), generator=g)
    data['paper', 'rev_writes', 'author'].edge_index = writes.flip(0)
    affil = edges(50, 12, 60)
    data['author', 'affil', 'inst'].edge_index = affil
    data['inst', 'rev_affil', 'author'].edge_index = affil.flip(0)
    data['venue', 'hosts', 'paper'].edge_index = torch.empty(
        2, 0, dtype=torch.long)
    return data


@pytest.fixture(scope='module')
def rand_graph():
    return random_hetero()


@pytest.fixture(scope='module')
def mag():
    """A tiny synthetic ogbn-mag (the real graph's types and degree skew:
    fields of study and institutions are hubs)."""
    from pyg_fusesample.datasets.mag_like import mag_like
    return mag_like(scale=0.001, seed=0)


@pytest.fixture(scope='module')
def cora_hetero(cora):
    """Real Cora as a one-relation HeteroData."""
    data = HeteroData()
    data['paper'].x = cora.x
    data['paper'].y = cora.y
    data['paper'].train_mask = cora.train_mask
    data['paper', 'cites', 'paper'].edge_index = cora.edge_index
    return data


# Reference ##################################################################

class HeteroRef:
    """In-edge lists per (node type, edge type) in plain Python."""
    def __init__(self, data):
        self.data = data
        self.in_edges = {}  # (edge type, target) -> [edge ids]
        self.ei = {}
        for et in data.edge_types:
            src, dst = data[et].edge_index.tolist()
            self.ei[et] = (src, dst)
            lists = [[] for _ in range(data[et[-1]].num_nodes)]
            for e, v in enumerate(dst):
                lists[v].append(e)
            self.in_edges[et] = lists

    def degree(self, et, v):
        return len(self.in_edges[et][v])

    def bfs(self, input_type, seeds, num_hops):
        """Per node type, the nodes first reached at each hop 0..num_hops
        along in-edges of every type; per edge type, the ids of the in-edges
        of the nodes of hops 0..num_hops-1."""
        types = self.data.node_types
        hops = {nt: [[] for _ in range(num_hops + 1)] for nt in types}
        seen = {nt: set() for nt in types}
        for v in seeds:
            hops[input_type][0].append(v)
            seen[input_type].add(v)
        edges = {et: set() for et in self.data.edge_types}
        for h in range(num_hops):
            for et in self.data.edge_types:
                s, _, d = et
                for t in hops[d][h]:
                    for e in self.in_edges[et][t]:
                        edges[et].add(e)
                        u = self.ei[et][0][e]
                        if u not in seen[s]:
                            seen[s].add(u)
                            hops[s][h + 1].append(u)
        return hops, edges


def bounds(counts):
    return [0] + list(itertools.accumulate(int(c) for c in counts))


def global_pairs(batch, et):
    s, _, d = et
    row, col = batch[et].edge_index
    return set(zip(batch[s].n_id[row].tolist(), batch[d].n_id[col].tolist()))


def assert_edges_valid(batch, data):
    """Every sampled edge of every type is the graph edge its e_id names."""
    for et in data.edge_types:
        s, _, d = et
        ei = batch[et].edge_index
        assert batch[et].e_id.numel() == ei.size(1), et
        glob = torch.stack([batch[s].n_id[ei[0]], batch[d].n_id[ei[1]]])
        assert torch.equal(data[et].edge_index[:, batch[et].e_id], glob), et


def assert_sliced(batch, data):
    """Every node and edge attribute of every type is sliced by n_id/e_id,
    every type is present."""
    assert set(batch.node_types) == set(data.node_types)
    assert set(batch.edge_types) == set(data.edge_types)
    for nt in data.node_types:
        assert batch[nt].num_nodes == batch[nt].n_id.numel(), nt
        for key, value in data[nt].items():
            if key == 'num_nodes':
                continue
            assert torch.equal(batch[nt][key],
                               value[batch[nt].n_id]), (nt, key)
    for et in data.edge_types:
        for key, value in data[et].items():
            if key == 'edge_index':
                continue
            assert torch.equal(batch[et][key],
                               value[batch[et].e_id]), (et, key)


def assert_common(batch, data, input_type, seeds, num_hops):
    """What every batch holds: seeds first with input_id and batch_size on
    the input type, unique n_id per type, the per-hop counts summing to the
    sizes, valid edges, every attribute sliced."""
    bs = seeds.numel()
    assert batch[input_type].batch_size == bs
    assert torch.equal(batch[input_type].n_id[:bs], seeds)
    assert batch[input_type].input_id.numel() == bs
    for nt in data.node_types:
        n_id = batch[nt].n_id
        assert n_id.unique().numel() == n_id.numel(), nt
        nsn = list(batch[nt].num_sampled_nodes)
        assert len(nsn) == num_hops + 1 and sum(nsn) == n_id.numel(), nt
        assert nsn[0] == (bs if nt == input_type else 0), nt
        if nt != input_type:
            assert 'batch_size' not in batch[nt]
            assert 'input_id' not in batch[nt]
    for et in data.edge_types:
        nse = list(batch[et].num_sampled_edges)
        assert len(nse) == num_hops and sum(nse) == batch[et].num_edges, et
    assert_edges_valid(batch, data)
    assert_sliced(batch, data)


# 1. num_neighbors=-1: equal to NeighborLoader and to the BFS #################

def check_full(ours, theirs, data, rg, input_type, num_hops):
    bs = ours[input_type].batch_size
    seeds = ours[input_type].n_id[:bs]
    assert torch.equal(ours[input_type].input_id, theirs[input_type].input_id)
    assert torch.equal(seeds, theirs[input_type].n_id[:bs])
    assert_common(ours, data, input_type, seeds, num_hops)
    assert_edges_valid(theirs, data)
    hops, edges = rg.bfs(input_type, seeds.tolist(), num_hops)
    for nt in data.node_types:
        counts = [len(h) for h in hops[nt]]
        assert list(ours[nt].num_sampled_nodes) == counts, nt
        b = bounds(counts)
        assert ours[nt].n_id.numel() == theirs[nt].n_id.numel() == b[-1], nt
        for h in range(num_hops + 1):
            exp = set(hops[nt][h])
            assert set(ours[nt].n_id[b[h]:b[h + 1]].tolist()) == exp, (nt, h)
            # PyG's n_id is grouped by hop per type too
            assert set(theirs[nt].n_id[b[h]:b[h + 1]].tolist()) == exp, (nt, h)
    for et in data.edge_types:
        assert global_pairs(ours, et) == global_pairs(theirs, et), et
        assert set(ours[et].e_id.tolist()) == edges[et], et
        assert ours[et].e_id.numel() == len(edges[et]), et  # no duplicate
        assert sorted(theirs[et].e_id.tolist()) == sorted(edges[et]), et
        # edges grouped by hop: block h targets hop-h nodes of the dst type
        eb = bounds(ours[et].num_sampled_edges)
        nb = bounds(ours[et[-1]].num_sampled_nodes)
        for h in range(num_hops):
            col = ours[et].edge_index[1, eb[h]:eb[h + 1]]
            assert bool(((col >= nb[h]) & (col < nb[h + 1])).all()), (et, h)
    # everything NeighborLoader yields is there (we add the hop counts)
    for store in theirs.node_types + theirs.edge_types:
        assert set(theirs[store].keys()) <= set(ours[store].keys()), store


@pytest.mark.parametrize('num_hops', [1, 2, 3])
def test_full_neighbourhood_matches_pyg_random(rand_graph, num_hops):
    data = rand_graph
    kwargs = dict(num_neighbors=[-1] * num_hops, batch_size=16,
                  input_nodes=('paper', torch.tensor(
                      [0, 79, 3, 40, 41, 7, 78, 12, 25, 60, 61, 5, 33, 2,
                       19, 50, 70, 74])))
    ours = list(FusedNeighborLoader(data, **kwargs))
    theirs = list(pyg_loader(data, **kwargs))
    assert len(ours) == len(theirs) == 2
    rg = HeteroRef(data)
    for a, b in zip(ours, theirs):
        check_full(a, b, data, rg, 'paper', num_hops)


@pytest.mark.parametrize('input_type', ['author', 'inst'])
def test_full_neighbourhood_matches_pyg_other_input_types(rand_graph,
                                                          input_type):
    data = rand_graph
    kwargs = dict(num_neighbors=[-1, -1], batch_size=5,
                  input_nodes=input_type)
    ours = list(FusedNeighborLoader(data, **kwargs))
    theirs = list(pyg_loader(data, **kwargs))
    assert len(ours) == len(theirs)
    rg = HeteroRef(data)
    for a, b in zip(ours, theirs):
        check_full(a, b, data, rg, input_type, 2)


@pytest.mark.parametrize('num_hops', [1, 2])
def test_full_neighbourhood_matches_pyg_mag(mag, num_hops):
    data = mag
    seeds = data['paper'].train_mask.nonzero().view(-1)[:48]
    kwargs = dict(num_neighbors=[-1] * num_hops, batch_size=24,
                  input_nodes=('paper', seeds))
    ours = list(FusedNeighborLoader(data, **kwargs))
    theirs = list(pyg_loader(data, **kwargs))
    rg = HeteroRef(data)
    for a, b in zip(ours, theirs):
        check_full(a, b, data, rg, 'paper', num_hops)


def test_full_neighbourhood_matches_pyg_cora(cora_hetero):
    data = cora_hetero
    kwargs = dict(num_neighbors=[-1, -1], batch_size=70,
                  input_nodes=('paper', data['paper'].train_mask))
    ours = list(FusedNeighborLoader(data, **kwargs))
    theirs = list(pyg_loader(data, **kwargs))
    assert len(ours) == len(theirs) == 2
    rg = HeteroRef(data)
    for a, b in zip(ours, theirs):
        check_full(a, b, data, rg, 'paper', 2)


# 2. Fan-outs: the per-edge-type contract #####################################

def check_fanouts(batch, data, rg, input_type, seeds, fanouts, replace):
    """fanouts: {edge type: [k per hop]}."""
    num_hops = len(next(iter(fanouts.values())))
    assert_common(batch, data, input_type, seeds, num_hops)
    for et in data.edge_types:
        s, _, d = et
        eb = bounds(batch[et].num_sampled_edges)
        nb_d = bounds(batch[d].num_sampled_nodes)
        nb_s = bounds(batch[s].num_sampled_nodes)
        n_id_d = batch[d].n_id.tolist()
        row, col = batch[et].edge_index.tolist()
        e_id = batch[et].e_id.tolist()
        for h, k in enumerate(fanouts[et]):
            per_target = {t: [] for t in range(nb_d[h], nb_d[h + 1])}
            for j in range(eb[h], eb[h + 1]):
                assert nb_d[h] <= col[j] < nb_d[h + 1], (et, h)
                assert row[j] < nb_s[h + 2], (et, h, 'source beyond hop h+1')
                per_target[col[j]].append(e_id[j])
            for t, eids in per_target.items():
                deg = rg.degree(et, n_id_d[t])
                if k < 0:
                    assert sorted(eids) == sorted(rg.in_edges[et][n_id_d[t]])
                elif replace:
                    assert len(eids) == (k if deg > 0 else 0), (et, h)
                else:
                    assert len(eids) == len(set(eids)), (et, h, 'duplicate')
                    assert len(eids) == min(deg, k), (et, h, deg, k)
    # The nodes of hop h + 1 of a type are the new sources of hop h's edges
    # of the relations leaving it.
    for nt in data.node_types:
        nb = bounds(batch[nt].num_sampled_nodes)
        n_id = batch[nt].n_id.tolist()
        for h in range(num_hops):
            new = set()
            for et in data.edge_types:
                if et[0] != nt:
                    continue
                eb = bounds(batch[et].num_sampled_edges)
                new |= {n_id[r] for r in
                        batch[et].edge_index[0, eb[h]:eb[h + 1]].tolist()}
            new -= set(n_id[:nb[h + 1]])
            assert set(n_id[nb[h + 1]:nb[h + 2]]) == new, (nt, h)


RAND_FANOUT_DICT = {
    ('paper', 'cites', 'paper'): [5, 3],
    ('author', 'writes', 'paper'): [2, -1],
    ('paper', 'rev_writes', 'author'): [0, 4],
    ('author', 'affil', 'inst'): [1, 1],
    ('inst', 'rev_affil', 'author'): [3, 0],
    ('venue', 'hosts', 'paper'): [2, 2],
}


@pytest.mark.parametrize('kind', ['list', 'dict', 'NumNeighbors-default',
                                  'three-hops'])
@pytest.mark.parametrize('replace', [False, True])
def test_fanouts_random(rand_graph, kind, replace):
    data = rand_graph
    if kind == 'list':
        num_neighbors = [4, 2]
        per_type = {et: [4, 2] for et in data.edge_types}
    elif kind == 'dict':
        num_neighbors = RAND_FANOUT_DICT
        per_type = RAND_FANOUT_DICT
    elif kind == 'NumNeighbors-default':
        num_neighbors = NumNeighbors({('paper', 'cites', 'paper'): [6, 1]},
                                     default=[2, 3])
        per_type = {et: [2, 3] for et in data.edge_types}
        per_type[('paper', 'cites', 'paper')] = [6, 1]
    else:
        num_neighbors = [3, 2, 2]
        per_type = {et: [3, 2, 2] for et in data.edge_types}
    seeds = torch.tensor([0, 79, 3, 40, 7, 12, 25, 60, 5, 33])
    loader = FusedNeighborLoader(data, num_neighbors, batch_size=5,
                                 input_nodes=('paper', seeds), replace=replace,
                                 seed=1)
    rg = HeteroRef(data)
    batches = list(loader)
    assert len(batches) == 2
    for i, batch in enumerate(batches):
        check_fanouts(batch, data, rg, 'paper', seeds[5 * i:5 * (i + 1)],
                      per_type, replace)
    if replace:  # some hub draws repeat an in-edge
        dup = any(b[et].e_id.unique().numel() < b[et].e_id.numel()
                  for b in batches for et in data.edge_types)
        assert dup


@pytest.mark.parametrize('num_neighbors', [[10, 5], [15, 10, 5]])
def test_fanouts_mag(mag, num_neighbors):
    data = mag
    seeds = data['paper'].train_mask.nonzero().view(-1)[:64]
    loader = FusedNeighborLoader(
        data, num_neighbors, batch_size=32,
        input_nodes=('paper', data['paper'].train_mask), seed=0)
    rg = HeteroRef(data)
    per_type = {et: num_neighbors for et in data.edge_types}
    for i, batch in zip(range(2), loader):
        check_fanouts(batch, data, rg, 'paper', seeds[32 * i:32 * (i + 1)],
                      per_type, False)


def test_fanouts_dict_like_pyg(rand_graph):
    """A per-edge-type dict gives the same batch layout as PyG's loader: the
    same keys per type, the seeds, and with -1/0 types the same edges."""
    data = rand_graph
    num_neighbors = {et: [-1, 0] for et in data.edge_types}
    num_neighbors[('paper', 'rev_writes', 'author')] = [0, -1]
    kwargs = dict(num_neighbors=num_neighbors, batch_size=8,
                  input_nodes=('paper', torch.arange(16)))
    for a, b in zip(FusedNeighborLoader(data, **kwargs),
                    pyg_loader(data, **kwargs)):
        for et in data.edge_types:
            assert global_pairs(a, et) == global_pairs(b, et), et
        for nt in data.node_types:
            assert set(a[nt].n_id.tolist()) == set(b[nt].n_id.tolist()), nt


def test_empty_input_nodes_and_isolated_seeds(rand_graph):
    data = rand_graph
    loader = FusedNeighborLoader(data, [3, 3], batch_size=4,
                                 input_nodes=('paper', torch.tensor(
                                     [], dtype=torch.long)))
    assert len(loader) == 0 and list(loader) == []
    # isolated papers and the edgeless node type: only the seeds come back
    for input_nodes in [('paper', torch.arange(75, 80)), 'venue']:
        batch = next(iter(FusedNeighborLoader(data, [3, 3], batch_size=5,
                                              input_nodes=input_nodes)))
        it = input_nodes if isinstance(input_nodes, str) else input_nodes[0]
        assert batch[it].n_id.numel() == 5
        assert all(batch[et].num_edges == 0 for et in data.edge_types)
        assert all(batch[nt].num_nodes == 0 for nt in data.node_types
                   if nt != it)
        assert_sliced(batch, data)


def test_zero_hops(rand_graph):
    """num_neighbors=[] (zero hops): the seeds alone, every node and edge
    type present, as PyG's loader gives."""
    data = rand_graph
    kwargs = dict(num_neighbors=[], batch_size=4,
                  input_nodes=('paper', torch.tensor([3, 0, 79, 3])))
    batch = next(iter(FusedNeighborLoader(data, **kwargs)))
    theirs = next(iter(pyg_loader(data, **kwargs)))
    assert torch.equal(batch['paper'].n_id, theirs['paper'].n_id)
    assert list(batch['paper'].num_sampled_nodes) == [4]
    for nt in data.node_types:
        assert batch[nt].num_nodes == theirs[nt].num_nodes, nt
    for et in data.edge_types:
        assert batch[et].num_edges == 0 and batch[et].num_sampled_edges == []
    assert_sliced(batch, data)


# 3. disjoint, bidirectional, induced ########################################

@pytest.mark.parametrize('num_neighbors', [[-1, -1], [3, 2]])
def test_disjoint(rand_graph, num_neighbors):
    data = rand_graph
    seeds = torch.tensor([0, 0, 79, 12, 40, 3])  # a repeated seed
    batch = next(iter(FusedNeighborLoader(
        data, num_neighbors, batch_size=6, input_nodes=('paper', seeds),
        disjoint=True, seed=4)))
    assert torch.equal(batch['paper'].batch[:6], torch.arange(6))
    assert torch.equal(batch['paper'].n_id[:6], seeds)
    for nt in data.node_types:
        b, n = batch[nt].batch, batch[nt].n_id
        assert b.numel() == n.numel(), nt
        keys = b * data[nt].num_nodes + n
        assert keys.unique().numel() == keys.numel(), nt  # unique per subtree
    assert_edges_valid(batch, data)
    assert_sliced(batch, data)
    for et in data.edge_types:  # edges never cross subtrees
        s, _, d = et
        row, col = batch[et].edge_index
        assert torch.equal(batch[s].batch[row], batch[d].batch[col]), et
    if num_neighbors == [-1, -1]:
        # every subtree is that seed's own full neighbourhood
        rg = HeteroRef(data)
        for i, v in enumerate(seeds.tolist()):
            hops, edges = rg.bfs('paper', [v], 2)
            for nt in data.node_types:
                mask = batch[nt].batch == i
                assert (set(batch[nt].n_id[mask].tolist())
                        == set(itertools.chain(*hops[nt]))), (i, nt)
            for et in data.edge_types:
                mask = batch[et[-1]].batch[batch[et].edge_index[1]] == i
                assert set(batch[et].e_id[mask].tolist()) == edges[et], (i, et)


@pytest.mark.filterwarnings('ignore:Cannot convert to bidirectional')
@pytest.mark.parametrize('num_neighbors', [[-1, -1], [3, 2]])
def test_bidirectional(rand_graph, num_neighbors):
    data = rand_graph
    kwargs = dict(num_neighbors=num_neighbors, batch_size=8,
                  input_nodes=('paper', torch.arange(16)),
                  subgraph_type='bidirectional')
    ours = list(FusedNeighborLoader(data, seed=0, **kwargs))
    dirs = list(FusedNeighborLoader(data, seed=0, **{
        **kwargs, 'subgraph_type': 'directional'}))
    theirs = list(pyg_loader(data, **kwargs))
    for a, d, b in zip(ours, dirs, theirs):
        # the same nodes as the directional batch with the same key
        for nt in data.node_types:
            assert torch.equal(a[nt].n_id, d[nt].n_id), nt
        for et in data.edge_types:
            assert set(theirs[0][et].keys()) <= set(a[et].keys()) | {'e_id'}
            pairs = global_pairs(a, et)
            # PyG's to_bidirectional semantics: every edge of a type and the
            # reverse of every edge of its reverse type
            s, rel, dd = et
            rev = (dd, rel[4:] if rel.startswith('rev_') else f'rev_{rel}', s)
            exp = global_pairs(d, et)
            if rev in data.edge_types:
                exp |= {(v, u) for u, v in global_pairs(d, rev)}
            elif s == dd:
                exp |= {(v, u) for u, v in exp}
            assert pairs == exp, et
            if num_neighbors == [-1, -1]:
                assert pairs == global_pairs(b, et), et
            src, dst = a[et].edge_index
            assert bool((src < a[s].num_nodes).all())
            assert bool((dst < a[dd].num_nodes).all())


def test_induced_and_undirected_are_the_same(rand_graph):
    # directed=False is subgraph_type='induced' (as in PyG); the edges are
    # checked against a reference in tests/test_hetero_induced.py.
    a, b = (next(iter(FusedNeighborLoader(rand_graph, [2], batch_size=8,
                                          input_nodes='paper', seed=3,
                                          **kwargs)))
            for kwargs in (dict(subgraph_type='induced'),
                           dict(directed=False)))
    for et in rand_graph.edge_types:
        assert torch.equal(a[et].edge_index, b[et].edge_index)
        assert torch.equal(a[et].e_id, b[et].e_id)
    assert sum(a[et].edge_index.size(1) for et in a.edge_types) > 0


# 4. transform, repeatability, workers #######################################

def test_transform(rand_graph):
    calls = []

    def transform(batch):
        assert isinstance(batch, HeteroData)
        calls.append(batch['paper'].batch_size)
        batch['paper'].seed_sum = int(batch['paper'].n_id[
            :batch['paper'].batch_size].sum())
        return batch

    batches = list(FusedNeighborLoader(rand_graph, [2, 2], batch_size=30,
                                       input_nodes='paper',
                                       transform=transform))
    assert calls == [30, 30, 20]
    for b in batches:
        bs = b['paper'].batch_size
        assert b['paper'].seed_sum == int(b['paper'].n_id[:bs].sum())


def test_transform_sampler_output(rand_graph):
    def drop_cites(out):
        et = ('paper', 'cites', 'paper')
        out.row[et], out.col[et] = out.row[et][:0], out.col[et][:0]
        out.edge[et] = out.edge[et][:0]
        out.num_sampled_edges[et] = [0] * len(out.num_sampled_edges[et])
        return out

    batch = next(iter(FusedNeighborLoader(
        rand_graph, [3, 2], batch_size=16, input_nodes='paper',
        transform_sampler_output=drop_cites)))
    assert batch['paper', 'cites', 'paper'].num_edges == 0
    assert batch['author', 'writes', 'paper'].num_edges > 0


def assert_batches_equal(a, b):
    for sa, sb in zip(a.node_stores + a.edge_stores,
                      b.node_stores + b.edge_stores):
        assert sorted(sa.keys()) == sorted(sb.keys())
        for key in sa.keys():
            va, vb = sa[key], sb[key]
            if isinstance(va, torch.Tensor):
                assert torch.equal(va, vb), key
            else:
                assert va == vb, key


def epoch(data, **kwargs):
    kwargs = {**dict(num_neighbors=[3, 2], batch_size=16,
                     input_nodes='paper', shuffle=True), **kwargs}
    return list(FusedNeighborLoader(data, **kwargs))


def test_seed_repeatability(rand_graph):
    a, b = epoch(rand_graph, seed=7), epoch(rand_graph, seed=7)
    c = epoch(rand_graph, seed=8)
    for x, y in zip(a, b):
        assert_batches_equal(x, y)
    assert any(not torch.equal(x['paper'].n_id, y['paper'].n_id)
               for x, y in zip(a, c))
    g1 = torch.Generator().manual_seed(3)
    g2 = torch.Generator().manual_seed(3)
    for x, y in zip(epoch(rand_graph, generator=g1),
                    epoch(rand_graph, generator=g2)):
        assert_batches_equal(x, y)
    torch.manual_seed(11)
    d = epoch(rand_graph)
    torch.manual_seed(11)
    for x, y in zip(d, epoch(rand_graph)):
        assert_batches_equal(x, y)
    with pytest.raises(ValueError, match='seed'):
        epoch(rand_graph, seed=1, generator=g1)


def test_num_workers(rand_graph):
    a = epoch(rand_graph, seed=5)
    b = epoch(rand_graph, seed=5, num_workers=2)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert_batches_equal(x, y)


# 5. Models ##################################################################

def test_trim_to_layer_hetero(mag):
    """A hetero model that trims its input per layer with PyG's
    trim_to_layer (dicts of num_sampled_nodes/edges) gives the seeds the
    outputs of the untrimmed model: nodes and edges are grouped by hop per
    type."""
    from torch_geometric.nn import HeteroConv, SAGEConv
    from torch_geometric.utils import trim_to_layer

    data = mag
    torch.manual_seed(0)
    emb = {nt: torch.randn(data[nt].num_nodes, 16) for nt in data.node_types}
    emb['paper'] = data['paper'].x[:, :16]

    class Net(torch.nn.Module):
        def __init__(self, num_layers):
            super().__init__()
            self.convs = torch.nn.ModuleList(
                HeteroConv({et: SAGEConv((16, 16), 16)
                            for et in data.edge_types}, aggr='sum')
                for _ in range(num_layers))

        def forward(self, x, edge_index, nsn=None, nse=None):
            for i, conv in enumerate(self.convs):
                if nsn is not None:
                    x, edge_index, _ = trim_to_layer(i, nsn, nse, x,
                                                     edge_index)
                out = conv(x, edge_index)
                x = {nt: out.get(nt, x[nt][:0].new_zeros(x[nt].size()))
                     for nt in x}
            return x

    for num_neighbors in ([5, 3], [4, 3, 2]):
        model = Net(len(num_neighbors)).eval()
        loader = FusedNeighborLoader(data, num_neighbors, batch_size=32,
                                     input_nodes=('paper', torch.arange(64)),
                                     seed=0)
        for batch in loader:
            x = {nt: emb[nt][batch[nt].n_id] for nt in data.node_types}
            nsn = batch.collect('num_sampled_nodes')
            nse = batch.collect('num_sampled_edges')
            bs = batch['paper'].batch_size
            assert sum(c[-1] for c in nsn.values()) > 0  # trimming drops nodes
            with torch.no_grad():
                full = model(x, batch.edge_index_dict)['paper'][:bs]
                trimmed = model(x, batch.edge_index_dict, nsn,
                                nse)['paper'][:bs]
            assert torch.allclose(full, trimmed, atol=1e-5)


def test_to_hetero_graphsage_and_heteroconv_train():
    from torch_geometric.nn import (GATConv, GraphSAGE, HeteroConv, Linear,
                                    SAGEConv, to_hetero)
    data = random_hetero(features_everywhere=True)
    # to_hetero needs every node type to receive messages: drop the
    # edgeless 'venue' (its relation has no edges)
    del data['venue', 'hosts', 'paper']
    del data['venue']
    loader = FusedNeighborLoader(data, [4, 3], batch_size=20,
                                 input_nodes=('paper', torch.arange(40)),
                                 seed=0)
    sage = to_hetero(GraphSAGE((-1, -1), 16, num_layers=2, out_channels=3),
                     data.metadata(), aggr='sum')

    class HConv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = HeteroConv({
                et: (GATConv((-1, -1), 16, add_self_loops=False)
                     if et[0] != et[-1] else SAGEConv(-1, 16))
                for et in data.edge_types}, aggr='sum')
            self.conv2 = HeteroConv({et: SAGEConv((-1, -1), 16)
                                     for et in data.edge_types}, aggr='mean')
            self.lin = Linear(-1, 3)

        def forward(self, x, edge_index):
            h = self.conv1(x, edge_index)
            h = {nt: h.get(nt, torch.zeros(x[nt].size(0), 16)).relu()
                 for nt in x}
            return self.lin(self.conv2(h, edge_index)['paper'])

    hconv = HConv()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # node types without incoming edges
        for model, get in ((sage, lambda out: out['paper']),
                           (hconv, lambda out: out)):
            batch = next(iter(loader))
            model(batch.x_dict, batch.edge_index_dict)  # lazy init
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            for batch in loader:
                opt.zero_grad()
                bs = batch['paper'].batch_size
                out = get(model(batch.x_dict, batch.edge_index_dict))[:bs]
                loss = torch.nn.functional.cross_entropy(out,
                                                         batch['paper'].y[:bs])
                loss.backward()
                grads = [p.grad for p in model.parameters()
                         if p.grad is not None]
                assert grads and all(torch.isfinite(g).all() for g in grads)
                opt.step()


# 6. Bad arguments ###########################################################

@pytest.mark.parametrize('kwargs,exc,match', [
    (dict(input_nodes='journal'), ValueError, "node type 'journal'"),
    (dict(input_nodes=('journal', torch.arange(3))), ValueError,
     "node type 'journal'"),
    (dict(input_nodes=torch.arange(3)), ValueError, 'must name the node type'),
    (dict(input_nodes=None), ValueError, 'must name the node type'),
    (dict(input_nodes=('paper', torch.tensor([0, 80]))), ValueError,
     r'outside \[0, 80\)'),
    (dict(input_nodes=('paper', torch.tensor([-1, 3]))), ValueError,
     r'outside \[0, 80\)'),
    (dict(input_nodes=('paper', torch.ones(50, dtype=torch.bool))),
     ValueError, 'boolean mask of length 50'),
    (dict(input_nodes=('author', torch.ones(80, dtype=torch.bool))),
     ValueError, 'boolean mask of length 80'),
    (dict(num_neighbors={('paper', 'cites', 'paper'): [2, 2]}), ValueError,
     'Missing number of neighbors for edge type'),
    (dict(num_neighbors={**{et: [2] for et in random_hetero().edge_types},
                         ('paper', 'likes', 'paper'): [2]}), ValueError,
     "Not all edge types specified in 'num_neighbors' exist"),
    (dict(num_neighbors={**{et: [2] for et in random_hetero().edge_types},
                         ('paper', 'cites', 'paper'): [2, 2]}), ValueError,
     'Number of hops must be the same'),
    (dict(num_neighbors=[2, -2]), ValueError, r"num_neighbors\[1\]"),
    (dict(input_time=torch.zeros(80)), ValueError, "'time_attr' is not set"),
    (dict(time_attr='time'), ValueError,
     "'time' is neither a node-level nor an edge-level"),
    (dict(weight_attr='edge_weight'), ValueError,
     "'weight_attr' 'edge_weight' is missing on edge type"),
])
def test_bad_arguments(rand_graph, kwargs, exc, match):
    kwargs = {**dict(num_neighbors=[2, 2], input_nodes='paper',
                     batch_size=4), **kwargs}
    with pytest.raises(exc, match=match):
        next(iter(FusedNeighborLoader(rand_graph, **kwargs)))


def test_pyg_raises_alike_for_fanout_dicts(rand_graph):
    """The fan-out dict errors are PyG's own (NumNeighbors)."""
    for num_neighbors in ({('paper', 'cites', 'paper'): [2, 2]},
                          {**{et: [2] for et in rand_graph.edge_types},
                           ('paper', 'likes', 'paper'): [2]}):
        msgs = []
        for make in (FusedNeighborLoader, pyg_loader):
            with pytest.raises(ValueError) as info:
                next(iter(make(rand_graph, num_neighbors, input_nodes='paper',
                               batch_size=4)))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]
