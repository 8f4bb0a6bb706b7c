"""fusesample::neighbor_sample on typed CSCs (num_edge_types T > 1, the
heterogeneous sampler's layout): bitwise against the Python reference, T = 1
against the untyped call, the per-edge-type contract, uniformity per edge
type, bad inputs, opcheck and the async op. Parametrised over devices: with
a GPU the same cases compare CUDA (fused and per-phase) with the reference,
and so with the CPU kernel, bitwise."""
import itertools
import math

import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample.ops import (csc_from_coo, neighbor_sample,
                                neighbor_sample_async)

import reference as ref
from conftest import devices

scipy_stats = pytest.importorskip('scipy.stats')

FIELDS = ['node', 'row', 'col', 'edge', 'batch', 'num_sampled_nodes',
          'num_sampled_edges']


# Typed graphs ###############################################################

def typed_csc(num_nodes, edges):
    """The typed CSC of T per-type edge lists (``[2, E_t]`` in one global
    node id space): colptr [N*T+1] (segment v*T+t = v's in-edges of type t,
    in edge order), row (global sources) and edge_id (global edge ids: the
    types' edges end to end, type t's starting at sum(E_0..E_{t-1}))."""
    T = len(edges)
    ei = (torch.cat(edges, dim=1) if edges else
          torch.empty(2, 0, dtype=torch.long))
    etype = torch.cat([torch.full((e.size(1), ), t, dtype=torch.long)
                       for t, e in enumerate(edges)])
    return ref.csc_from_coo(torch.stack([ei[0], ei[1] * T + etype]),
                            num_nodes * T)


class TypedGraph:
    """A random heterogeneous graph: node types of `sizes` laid end to end,
    one edge list per relation (src type, dst type). Node 0 of every target
    type is a hub (an in-edge from every active source of each relation into
    it); the last `isolated` nodes of every type have no edge at all."""
    def __init__(self, sizes, relations, num_edges, seed=0, isolated=2,
                 hubs=True):
        g = torch.Generator().manual_seed(seed)
        self.sizes, self.relations = sizes, relations
        self.node_offset = [0] + list(itertools.accumulate(sizes))
        self.num_nodes = self.node_offset[-1]
        self.T = len(relations)
        self.edges = []
        for (s, d), m in zip(relations, num_edges):
            if m == 0:
                self.edges.append(torch.empty(2, 0, dtype=torch.long))
                continue
            ns, nd = sizes[s] - isolated, sizes[d] - isolated
            src = torch.randint(ns, (m, ), generator=g)
            dst = torch.randint(nd, (m, ), generator=g)
            if hubs:
                src = torch.cat([src, torch.arange(ns)])
                dst = torch.cat([dst, torch.zeros(ns, dtype=torch.long)])
            keys = torch.unique(src * nd + dst)  # no multi-edges
            keys = keys[torch.randperm(keys.numel(), generator=g)]
            self.edges.append(torch.stack([keys // nd + self.node_offset[s],
                                           keys % nd + self.node_offset[d]]))
        self.edge_offset = [0] + list(itertools.accumulate(
            e.size(1) for e in self.edges))
        self.edge_index = torch.cat(self.edges, dim=1)
        self.colptr, self.row, self.edge_id = typed_csc(self.num_nodes,
                                                        self.edges)

    def degree(self):
        """[N, T] in-degree of every node per edge type."""
        return self.colptr.diff().view(self.num_nodes, self.T)

    def edge_type(self, edge):
        return torch.searchsorted(torch.tensor(self.edge_offset), edge,
                                  right=True) - 1

    def seeds(self):
        """Per node type: its hub, a middle node and an isolated node; and a
        repeated seed."""
        seeds = []
        for off, size in zip(self.node_offset, self.sizes):
            seeds += [off, off + size // 2, off + size - 1]
        return torch.tensor(seeds + [seeds[1]])


GRAPHS = {
    # two node types, a relation each way
    'T2': dict(sizes=[40, 30], relations=[(0, 1), (1, 0)],
               num_edges=[150, 120]),
    # three node types, one relation without edges
    'T3-empty-type': dict(sizes=[50, 30, 20],
                          relations=[(0, 0), (1, 2), (2, 0)],
                          num_edges=[200, 0, 60]),
    # five relations between two node types, two of them parallel
    'T5': dict(sizes=[60, 25],
               relations=[(0, 0), (0, 1), (1, 0), (1, 1), (0, 1)],
               num_edges=[250, 100, 100, 40, 80]),
}

_graph_cache = {}


def get_graph(name, seed=0):
    if (name, seed) not in _graph_cache:
        _graph_cache[(name, seed)] = TypedGraph(**GRAPHS[name], seed=seed)
    return _graph_cache[(name, seed)]


def fanouts(pattern, T):
    """Hop-major [L*T] fan-outs of a named pattern."""
    per_type = {
        'same': [[3, 2]] * T,
        'mixed': [[[2, 1], [-1, 3], [0, 2], [5, -1], [1, 0]][t % 5]
                  for t in range(T)],
        'all': [[-1, -1]] * T,
        'zero-first': [[0, 4]] * T,
        'big': [[40]] * T,   # k > 32 on the hubs (degree ~ 58): bitmap path
        'three-hops': [[2, 2, 1]] * T,
        'no-hops': [[]] * T,
    }[pattern]
    hops = len(per_type[0])
    return [per_type[t][h] for h in range(hops) for t in range(T)]


def on(device, *tensors):
    return [None if t is None else t.to(device) for t in tensors]


def fused_modes(device):
    # The CPU kernel ignores `fused`; CUDA has two launch modes to compare.
    return (True, False)


def assert_equal_outputs(out, expected, what=''):
    for name, a, b in zip(FIELDS, out, expected):
        if b is None:
            assert a is None, f'{what} {name}'
            continue
        assert torch.equal(a.cpu(), b), f'{what} {name} differs:\n{a}\n{b}'


# 1. Bitwise against the reference ###########################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('graph', list(GRAPHS))
@pytest.mark.parametrize('pattern', ['same', 'mixed', 'all', 'zero-first',
                                     'big', 'three-hops', 'no-hops'])
@pytest.mark.parametrize('replace,disjoint', [(False, False), (True, False),
                                              (False, True), (True, True)])
@pytest.mark.parametrize('row_dtype', [torch.long, torch.int])
def test_matches_reference(device, graph, pattern, replace, disjoint,
                           row_dtype):
    g = get_graph(graph)
    T = g.T
    fanout = fanouts(pattern, T)
    if pattern == 'all' and disjoint:
        fanout = fanout[:T]  # one hop: every subtree of a hub is the graph
    seed = g.seeds()
    row = g.row.to(row_dtype)
    for rng_seed, edge_id in [(0, g.edge_id), (987654321, None)]:
        expected = ref.neighbor_sample(g.colptr, row, edge_id, seed, fanout,
                                       replace, disjoint, rng_seed,
                                       num_edge_types=T)
        args = on(device, g.colptr, row, edge_id, seed)
        for fused in fused_modes(device):
            out = neighbor_sample(*args, fanout, replace, disjoint, rng_seed,
                                  fused=fused, num_edge_types=T)
            assert_equal_outputs(out, expected, f'fused={fused}')
            assert out.num_sampled_nodes.device.type == 'cpu'
            assert out.num_sampled_nodes.numel() == len(fanout) // T + 1


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('disjoint', [False, True])
def test_empty_batch_and_isolated_seeds(device, disjoint):
    g = get_graph('T3-empty-type')
    T = g.T
    args = on(device, g.colptr, g.row, g.edge_id)
    for fused in fused_modes(device):
        out = neighbor_sample(*args, torch.empty(0, dtype=torch.long,
                                                 device=device),
                              fanouts('same', T), disjoint=disjoint,
                              fused=fused, num_edge_types=T)
        assert out.node.numel() == 0 and out.row.numel() == 0
        assert out.edge.numel() == 0
        assert out.num_sampled_nodes.tolist() == [0, 0, 0]
        assert out.num_sampled_edges.tolist() == [0, 0]
        if disjoint:
            assert out.batch.numel() == 0
        # Isolated nodes of every node type: only the seeds come back.
        isolated = torch.tensor([off + size - 1 for off, size in
                                 zip(g.node_offset, g.sizes)], device=device)
        out = neighbor_sample(*args, isolated, fanouts('mixed', T),
                              replace=True, disjoint=disjoint, fused=fused,
                              num_edge_types=T)
        assert out.node.tolist() == isolated.tolist()
        assert out.edge.numel() == 0
        assert out.num_sampled_edges.tolist() == [0, 0]


@pytest.mark.parametrize('device', devices())
def test_graph_without_edges(device):
    # N nodes, T edge types, no edge at all.
    N, T = 7, 3
    colptr = torch.zeros(N * T + 1, dtype=torch.long)
    empty = torch.empty(0, dtype=torch.long)
    seed = torch.tensor([0, 6, 3])
    expected = ref.neighbor_sample(colptr, empty, None, seed, [2] * (2 * T),
                                   True, False, 1, num_edge_types=T)
    for fused in fused_modes(device):
        out = neighbor_sample(*on(device, colptr, empty, None, seed),
                              [2] * (2 * T), True, False, 1, fused=fused,
                              num_edge_types=T)
        assert_equal_outputs(out, expected)
        assert out.node.tolist() == [0, 6, 3]


# 2. T = 1 is the untyped op ##################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanout,replace,disjoint', [
    ([3, 2], False, False), ([4, 3], True, False), ([3, -1], False, True),
    ([0, 5], False, False), ([70], False, False), ([], False, False)])
@pytest.mark.parametrize('row_dtype', [torch.long, torch.int])
def test_one_edge_type_equals_untyped(device, fanout, replace, disjoint,
                                      row_dtype):
    ei = ref.random_graph(80, 600, 5, 1, 3)
    colptr, row, perm = csc_from_coo(ei, 80)
    # The typed builder with one edge type is the plain CSC.
    for a, b in zip(typed_csc(80, [ei]), (colptr, row, perm)):
        assert torch.equal(a, b)
    row = row.to(row_dtype)
    seed = torch.tensor([0, 9, 79, 33, 9])
    args = on(device, colptr, row, perm, seed)
    for fused in fused_modes(device):
        plain = neighbor_sample(*args, fanout, replace, disjoint, 77,
                                fused=fused)
        typed = neighbor_sample(*args, fanout, replace, disjoint, 77,
                                fused=fused, num_edge_types=1)
        assert_equal_outputs(typed, [None if t is None else t.cpu()
                                     for t in plain])
        assert_equal_outputs(plain, ref.neighbor_sample(
            colptr, row, perm, seed, fanout, replace, disjoint, 77))


@pytest.mark.parametrize('device', devices())
def test_full_fanout_ignores_empty_edge_types(device):
    """-1 fan-outs draw nothing at random: a graph whose edges are all of
    type 0 of T = 3 samples what its untyped CSC samples (only the global
    edge ids, which here coincide, and the layout differ)."""
    ei = ref.random_graph(60, 300, 6, 1, 2)
    empty = torch.empty(2, 0, dtype=torch.long)
    colptr, row, perm = csc_from_coo(ei, 60)
    tcolptr, trow, tperm = typed_csc(60, [ei, empty, empty])
    seed = torch.tensor([0, 5, 59, 17])
    plain = neighbor_sample(*on(device, colptr, row, perm, seed), [-1, -1])
    for fused in fused_modes(device):
        typed = neighbor_sample(*on(device, tcolptr, trow, tperm, seed),
                                [-1, 2, 0, -1, 0, 5], fused=fused,
                                num_edge_types=3)
        assert_equal_outputs(typed, [t if t is None else t.cpu()
                                     for t in plain])


def test_typed_csc_matches_library_builder():
    """pyg_fusesample's TypedCSC of a HeteroData is this file's layout."""
    from torch_geometric.data import HeteroData
    from pyg_fusesample.sampler.typed_graph import build_typed_csc
    g = get_graph('T5')
    data = HeteroData()
    names = ['a', 'b']
    for name, size in zip(names, g.sizes):
        data[name].num_nodes = size
    for t, ((s, d), e) in enumerate(zip(g.relations, g.edges)):
        local = e - torch.tensor([[g.node_offset[s]], [g.node_offset[d]]])
        data[names[s], f'r{t}', names[d]].edge_index = local
    typed = build_typed_csc(data)
    assert typed.node_offset == g.node_offset
    assert typed.edge_offset == g.edge_offset
    assert typed.num_edge_types == g.T
    assert torch.equal(typed.graph.colptr, g.colptr)
    assert torch.equal(typed.graph.row.long(), g.row)
    assert torch.equal(typed.graph.edge_id, g.edge_id)


# 3. The contract per target and edge type ###################################

def check_contract(g, out, seed, fanout, replace):
    T = g.T
    node, r, c, e = out.node, out.row, out.col, out.edge
    deg = g.degree()
    assert torch.equal(node[:seed.numel()], seed)
    assert node.unique().numel() == node.numel()
    # Every sampled edge exists: edge id e joins node[r] -> node[c].
    assert torch.equal(g.edge_index[0, e], node[r])
    assert torch.equal(g.edge_index[1, e], node[c])
    et = g.edge_type(e)
    nsn, nse = out.num_sampled_nodes.tolist(), out.num_sampled_edges.tolist()
    assert sum(nsn) == node.numel() and sum(nse) == e.numel()
    nb = [0] + list(itertools.accumulate(nsn))
    eb = [0] + list(itertools.accumulate(nse))
    for hop in range(len(fanout) // T):
        lo, hi = eb[hop], eb[hop + 1]
        cs, es, ts = c[lo:hi], e[lo:hi], et[lo:hi]
        if cs.numel():
            assert cs.min() >= nb[hop] and cs.max() < nb[hop + 1]
            # targets in node order, a target's segments in type order
            key = cs * T + ts
            assert bool((key[1:] >= key[:-1]).all())
        targets = node[nb[hop]:nb[hop + 1]]
        counts = torch.zeros(targets.numel(), T, dtype=torch.long)
        counts.index_put_((cs - nb[hop], ts), torch.ones_like(cs),
                          accumulate=True)
        for t in range(T):
            k = fanout[hop * T + t]
            d = deg[targets, t]
            if k < 0:
                expect = d
            elif replace:
                expect = torch.where(d > 0, k, 0)
            else:
                expect = d.clamp(max=k)
            assert torch.equal(counts[:, t], expect), (hop, t)
        if not replace:  # distinct in-edges per target
            pairs = torch.unique(cs * g.edge_index.size(1) + es)
            assert pairs.numel() == es.numel()
        # the nodes of hop h+1 are the new sources of hop h, in order
        rs = r[lo:hi]
        new = rs[rs >= nb[hop + 1]]
        assert torch.equal(new.unique(),
                           torch.arange(nb[hop + 1], nb[hop + 2]))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('replace', [False, True])
def test_contract_per_edge_type(device, replace):
    g = TypedGraph(sizes=[600, 400, 300],
                   relations=[(0, 0), (1, 0), (0, 1), (2, 1), (1, 2)],
                   num_edges=[4000, 2500, 2500, 1500, 0], seed=3, isolated=5)
    T = g.T
    perm = torch.randperm(g.num_nodes,
                          generator=torch.Generator().manual_seed(0))
    fixed = [0, 600, 1000, 599]  # hubs of each node type, an isolated node
    rest = [v for v in perm.tolist() if v not in fixed][:60]
    seed = torch.tensor(fixed + rest)
    fanout = [10, 5, -1, 3, 4,   # hop 0, per edge type
              4, 0, 6, 2, 3,     # hop 1
              2, 2, 2, 35, 1]    # hop 2 (35 > 32 on the hubs)
    for fused in fused_modes(device):
        out = neighbor_sample(*on(device, g.colptr, g.row, g.edge_id, seed),
                              fanout, replace, rng_seed=11, fused=fused,
                              num_edge_types=T)
        out = type(out)(*[None if t is None else t.cpu() for t in out])
        check_contract(g, out, seed, fanout, replace)


@pytest.mark.parametrize('device', devices())
def test_disjoint_contract(device):
    g = get_graph('T5')
    seed = torch.tensor([0, 0, 60, 30])
    out = neighbor_sample(*on(device, g.colptr, g.row, g.edge_id, seed),
                          fanouts('mixed', g.T), disjoint=True, rng_seed=3,
                          num_edge_types=g.T)
    batch, node = out.batch.cpu(), out.node.cpu()
    assert torch.equal(batch[:4], torch.arange(4))
    keys = batch * g.num_nodes + node
    assert keys.unique().numel() == keys.numel()
    assert torch.equal(batch[out.row.cpu()], batch[out.col.cpu()])
    e = out.edge.cpu()
    assert torch.equal(g.edge_index[0, e], node[out.row.cpu()])
    assert torch.equal(g.edge_index[1, e], node[out.col.cpu()])


def test_determinism_and_draws_differ_by_type():
    g = get_graph('T5')
    seed = g.seeds()
    args = (g.colptr, g.row, g.edge_id, seed, fanouts('same', g.T))
    a = neighbor_sample(*args, rng_seed=5, num_edge_types=g.T)
    b = neighbor_sample(*args, rng_seed=5, num_edge_types=g.T)
    c = neighbor_sample(*args, rng_seed=6, num_edge_types=g.T)
    for x, y in zip(a[:4], b[:4]):
        assert torch.equal(x, y)
    assert not torch.equal(a.edge, c.edge)


# 4. Uniformity per edge type #################################################

def star(degrees):
    """Node 0 with degrees[t] in-edges of type t, from distinct sources."""
    edges, nxt = [], 1
    for d in degrees:
        edges.append(torch.stack([torch.arange(nxt, nxt + d),
                                  torch.zeros(d, dtype=torch.long)]))
        nxt += d
    offsets = [0] + list(itertools.accumulate(degrees))
    return nxt, edges, offsets


@pytest.mark.parametrize('device', devices())
def test_uniform_subsets_per_edge_type_chi_square(device):
    """20,000 disjoint copies of one seed, one launch: type 0 keeps 3 of 8
    in-edges, type 1 2 of 6, type 2 (none) nothing; every subset of each
    type equally likely, and the two types' draws independent."""
    degrees, ks, trials = [8, 6, 0], [3, 2, 2], 20000
    n, edges, off = star(degrees)
    colptr, row, eid = typed_csc(n, edges)
    seed = torch.zeros(trials, dtype=torch.long)
    out = neighbor_sample(*on(device, colptr, row, eid, seed), ks,
                          disjoint=True, rng_seed=3, num_edge_types=3)
    edge = out.edge.cpu().view(trials, 5)
    assert bool((edge[:, :3] < off[1]).all())
    assert bool((edge[:, 3:] >= off[1]).all())
    codes = []
    for t, (lo, hi) in enumerate([(0, 3), (3, 5)]):
        e = (edge[:, lo:hi] - off[t]).sort(dim=1).values
        assert bool((e[:, 1:] != e[:, :-1]).all())
        code = (1 << e).sum(dim=1)
        counts = torch.unique(code, return_counts=True)[1]
        assert counts.numel() == math.comb(degrees[t], ks[t])
        p = scipy_stats.chisquare(counts.tolist()).pvalue
        assert p > 1e-3, f'type {t} subsets not uniform (p={p:.2e})'
        codes.append(torch.unique(code, return_inverse=True)[1])
    # independence of the types' draws: a 56 x 15 contingency table
    table = torch.zeros(56, 15, dtype=torch.long)
    table.index_put_((codes[0], codes[1]),
                     torch.ones(trials, dtype=torch.long), accumulate=True)
    p = scipy_stats.chi2_contingency(table.numpy()).pvalue
    assert p > 1e-3, f'edge types drawn dependently (p={p:.2e})'


@pytest.mark.parametrize('device', devices())
def test_uniform_with_replacement_per_edge_type_chi_square(device):
    degrees, ks, trials = [10, 4], [5, 3], 8000
    n, edges, off = star(degrees)
    colptr, row, eid = typed_csc(n, edges)
    seed = torch.zeros(trials, dtype=torch.long)
    out = neighbor_sample(*on(device, colptr, row, eid, seed), ks,
                          replace=True, disjoint=True, rng_seed=8,
                          num_edge_types=2)
    edge = out.edge.cpu().view(trials, 8)
    for t, (lo, hi) in enumerate([(0, 5), (5, 8)]):
        picks = edge[:, lo:hi].reshape(-1) - off[t]
        assert picks.min() >= 0 and picks.max() < degrees[t]
        freq = torch.bincount(picks, minlength=degrees[t])
        p = scipy_stats.chisquare(freq.tolist()).pvalue
        assert p > 1e-3, f'type {t} draws not uniform (p={p:.2e})'


# 5. Bad inputs ##############################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('bad,match', [
    (dict(num_edge_types=0), "'num_edge_types' must be >= 1"),
    (dict(num_edge_types=-2), "'num_edge_types' must be >= 1"),
    (dict(colptr='one-more'), "'colptr' has .* entries, which is not "
                              r"num_nodes \* num_edge_types"),
    (dict(num_neighbors=[2, 2, 2]), "'num_neighbors' has 3 entries"),
    (dict(num_neighbors=[2, 2, 2, 2, 2]), "'num_neighbors' has 5 entries"),
    (dict(num_neighbors=[2, 2, 2, -3]), r"num_neighbors\[3\]"),
    (dict(seed='N'), "'seed' holds ids"),          # in range if untyped
    (dict(seed='N*T-1'), "'seed' holds ids"),
    (dict(seed=[-1]), "'seed' holds ids"),
])
def test_bad_inputs(device, bad, match):
    g = get_graph('T2')
    N, T = g.num_nodes, g.T
    args = dict(colptr=g.colptr, row=g.row, edge_id=g.edge_id,
                seed=torch.tensor([0, 5]), num_neighbors=[3, 2, 2, 1],
                num_edge_types=T)
    for key, value in bad.items():
        if value == 'one-more':
            value = torch.cat([g.colptr, g.colptr[-1:]])
        elif value == 'N':
            value = torch.tensor([0, N])
        elif value == 'N*T-1':
            value = torch.tensor([N * T - 1])
        elif key == 'seed':
            value = torch.tensor(value)
        args[key] = value
    tensors = on(device, args['colptr'], args['row'], args['edge_id'],
                 args['seed'])
    for fused in fused_modes(device):
        with pytest.raises(RuntimeError, match=match):
            neighbor_sample(*tensors, args['num_neighbors'], fused=fused,
                            num_edge_types=args['num_edge_types'])
    with pytest.raises(RuntimeError, match=match):
        neighbor_sample_async(*tensors, args['num_neighbors'],
                              num_edge_types=args['num_edge_types']).wait()


# 6. opcheck and the async op ################################################

@pytest.mark.parametrize('device', devices())
def test_opcheck_typed(device):
    g = get_graph('T3-empty-type')
    args = on(device, g.colptr, g.row, g.edge_id, torch.tensor([0, 5, 52]))
    for replace, disjoint in [(False, False), (True, True)]:
        for fused in fused_modes(device):
            torch.library.opcheck(
                torch.ops.fusesample.neighbor_sample.default,
                (*args, fanouts('mixed', g.T), replace, disjoint, 5, fused,
                 g.T),
                test_utils=('test_schema', 'test_faketensor'))
        torch.library.opcheck(
            torch.ops.fusesample.neighbor_sample_async.default,
            (*args, fanouts('mixed', g.T), replace, disjoint, 5, g.T),
            test_utils=('test_schema', 'test_faketensor'))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('pattern,replace,disjoint,num_seeds', [
    ('same', False, False, 10),
    ('three-hops', True, True, 10),
    ('mixed', False, False, 10),    # -1 for some types: CUDA per hop
    ('same', False, False, 0),      # empty batch
])
def test_async_equals_sync_typed(device, pattern, replace, disjoint,
                                 num_seeds):
    g = get_graph('T5')
    T = g.T
    fanout = fanouts(pattern, T)
    seed = g.seeds()[:num_seeds]
    args = on(device, g.colptr, g.row, g.edge_id, seed)
    expected = ref.neighbor_sample(g.colptr, g.row, g.edge_id, seed, fanout,
                                   replace, disjoint, 7, num_edge_types=T)
    raw = torch.ops.fusesample.neighbor_sample_async(
        *args, fanout, replace, disjoint, 7, T)
    pending = neighbor_sample_async(*args, fanout, replace, disjoint, 7,
                                    num_edge_types=T)
    out = pending.wait()
    assert_equal_outputs(out, expected)
    hops = len(fanout) // T
    meta = raw[-1]  # filled: the stream has passed pending's later launch
    assert meta.device.type == 'cpu' and meta.numel() == 4 + 2 * hops
    assert meta.tolist() == [out.node.numel(), out.row.numel(),
                             *out.num_sampled_nodes.tolist(),
                             *out.num_sampled_edges.tolist(), 0]


# 8. Per-type counts and per-type buffer bounds ###############################

def typing_of(g):
    return dict(node_type_offsets=g.node_offset,
                edge_type_offsets=g.edge_offset,
                edge_type_nodes=[i for rel in g.relations for i in rel])


def reference_type_counts(g, out, hops):
    """Nodes per (node type, hop), then edges per (edge type, hop)."""
    NT = len(g.sizes)
    counts = torch.zeros(NT * (hops + 1) + g.T * hops, dtype=torch.long)
    node_hop = torch.repeat_interleave(torch.arange(hops + 1),
                                       out.num_sampled_nodes.cpu())
    ntype = torch.searchsorted(torch.tensor(g.node_offset), out.node.cpu(),
                               right=True) - 1
    counts.index_add_(0, ntype * (hops + 1) + node_hop,
                      torch.ones_like(ntype))
    edge_hop = torch.repeat_interleave(torch.arange(hops),
                                       out.num_sampled_edges.cpu())
    etype = g.edge_type(out.edge.cpu())
    counts.index_add_(0, NT * (hops + 1) + etype * hops + edge_hop,
                      torch.ones_like(etype))
    return counts


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('graph', list(GRAPHS))
@pytest.mark.parametrize('pattern', ['same', 'mixed', 'three-hops', 'no-hops'])
@pytest.mark.parametrize('disjoint', [False, True])
def test_type_counts(device, graph, pattern, disjoint):
    g = get_graph(graph)
    fan = fanouts(pattern, g.T)
    hops = len(fan) // g.T
    seed = g.seeds()
    for fused in fused_modes(device):
        out = neighbor_sample(*on(device, g.colptr, g.row, g.edge_id, seed),
                              fan, False, disjoint, 5, fused, g.T,
                              **typing_of(g))
        assert out.type_counts.device.type == 'cpu'
        assert torch.equal(out.type_counts, reference_type_counts(g, out, hops))
        # The typing changes nothing else of the sample.
        plain = neighbor_sample(*on(device, g.colptr, g.row, g.edge_id, seed),
                                fan, False, disjoint, 5, fused, g.T)
        assert plain.type_counts.numel() == 0
        assert_equal_outputs(out, [None if t is None else t.cpu()
                                   for t in plain])
    pending = neighbor_sample_async(
        *on(device, g.colptr, g.row, g.edge_id, seed), fan, False, disjoint,
        5, g.T, **typing_of(g))
    assert torch.equal(pending.wait().type_counts, out.type_counts)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('bad,match', [
    (dict(node_type_offsets=[0, 10]), 'node_type_offsets'),
    (dict(edge_type_offsets=[0, 1]), 'edge_type_offsets'),
    (dict(edge_type_nodes=[0, 1]), 'edge_type_nodes'),
    (dict(edge_type_nodes=[0, 7, 1, 0]), 'edge_type_nodes'),
])
def test_bad_typing(device, bad, match):
    g = get_graph('T2')
    typing = {**typing_of(g), **bad}
    with pytest.raises(RuntimeError, match=match):
        neighbor_sample(*on(device, g.colptr, g.row, g.edge_id, g.seeds()),
                        fanouts('same', g.T), num_edge_types=g.T, **typing)


@pytest.mark.cuda
def test_cuda_buffers_sized_per_type_and_guarded():
    # With the true relations the fused launch sizes its buffers per node
    # type and samples as the reference. With wrong ones (every relation
    # claims to start and end at a one-node type, so the bound allows 4
    # slots at hop 0, fewer than the seeds draw) the buffers are too small
    # for the real graph, and the batch fails with a clear error instead of
    # writing past them.
    g = get_graph('T2')
    fan = fanouts('three-hops', g.T)
    seed = g.seeds()
    args = on('cuda', g.colptr, g.row, g.edge_id, seed)
    out = neighbor_sample(*args, fan, False, False, 5, True, g.T, **typing_of(g))
    expected = ref.neighbor_sample(g.colptr, g.row, g.edge_id, seed, fan,
                                   False, False, 5, num_edge_types=g.T)
    assert_equal_outputs(out, expected)
    wrong = {**typing_of(g), 'node_type_offsets': [0, 1, g.num_nodes],
             'edge_type_nodes': [0, 0, 0, 0]}
    with pytest.raises(RuntimeError, match='edge_type_nodes'):
        neighbor_sample(*args, fan, False, False, 5, True, g.T, **wrong)
