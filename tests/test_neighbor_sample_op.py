"""fusesample::neighbor_sample against the Python reference, plus contract,
statistics, edge cases and bad inputs."""
import itertools
import math

import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample.ops import csc_from_coo, neighbor_sample

import reference as ref
from conftest import devices

scipy_stats = pytest.importorskip('scipy.stats')


def graph(num_nodes=60, num_edges=400, seed=0, hubs=1, isolated=3,
          dtype=torch.long):
    ei = ref.random_graph(num_nodes, num_edges, seed, hubs, isolated)
    colptr, row, perm = csc_from_coo(ei, num_nodes)
    return ei, colptr, row.to(dtype), perm


def assert_equal_outputs(out, expected):
    names = ['node', 'row', 'col', 'edge', 'batch', 'num_sampled_nodes',
             'num_sampled_edges']
    for name, a, b in zip(names, out, expected):
        if b is None:
            assert a is None, name
            continue
        assert torch.equal(a.cpu(), b), f'{name} differs:\n{a}\n{b}'


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanout,replace,disjoint', [
    ([3, 2], False, False),
    ([3, 2], True, False),
    ([-1, 2], False, False),
    ([0, 3], False, False),
    ([5, -1, 1], False, False),
    ([3, 2], False, True),
    ([2, 2], True, True),
    ([70], False, False),   # k > kFloydScanMax: the bitmap path on the hub
    ([], False, False),     # no hops: only the seeds
])
@pytest.mark.parametrize('row_dtype', [torch.long, torch.int])
def test_matches_reference(device, fanout, replace, disjoint, row_dtype):
    _, colptr, row, perm = graph(dtype=row_dtype)
    seed = torch.tensor([0, 5, 57, 12, 3])  # 0: a hub, 57: isolated
    for rng_seed, edge_id in [(0, perm), (12345, None)]:
        args = (colptr, row, edge_id, seed)
        out = neighbor_sample(*(None if a is None else a.to(device)
                                for a in args), fanout, replace, disjoint,
                              rng_seed)
        expected = ref.neighbor_sample(colptr, row, edge_id, seed, fanout,
                                       replace, disjoint, rng_seed)
        assert_equal_outputs(out, expected)


def test_structure_contract():
    """Every sampled edge exists; each target keeps min(deg, k) distinct
    in-edges; n_id unique with seeds first; hops grouped."""
    ei, colptr, row, perm = graph(num_nodes=2000, num_edges=30000, hubs=2,
                                  isolated=20, seed=1)
    deg = colptr.diff()
    seed = torch.randperm(2000, generator=torch.Generator().manual_seed(0))[:64]
    fanout = [10, 5, 3]
    out = neighbor_sample(colptr, row, perm, seed, fanout, rng_seed=7)
    node, r, c, e = out.node, out.row, out.col, out.edge
    assert torch.equal(node[:64], seed)
    assert node.unique().numel() == node.numel()
    # Edges exist: edge id e joins node[r] -> node[c].
    assert torch.equal(ei[0, e], node[r]) and torch.equal(ei[1, e], node[c])
    nsn = out.num_sampled_nodes.tolist()
    nse = out.num_sampled_edges.tolist()
    assert sum(nsn) == node.numel() and sum(nse) == e.numel()
    bounds = [0] + list(itertools.accumulate(nsn))
    ebounds = [0] + list(itertools.accumulate(nse))
    for hop, k in enumerate(fanout):
        targets = torch.arange(bounds[hop], bounds[hop + 1])
        cs, es = c[ebounds[hop]:ebounds[hop + 1]], e[ebounds[hop]:ebounds[hop + 1]]
        # targets of hop h are exactly the nodes first seen at hop h - 1
        assert cs.min() >= bounds[hop] and cs.max() < bounds[hop + 1]
        counts = torch.bincount(cs - bounds[hop], minlength=targets.numel())
        expect = deg[node[targets]].clamp(max=k)
        assert torch.equal(counts, expect)
        # distinct in-edges per target
        pairs = torch.unique(cs * ei.size(1) + es)
        assert pairs.numel() == es.numel()
        # new nodes of hop h+1 appear first as neighbours in hop h's edges
        rs = r[ebounds[hop]:ebounds[hop + 1]]
        new = (rs >= bounds[hop + 1]) & (rs < bounds[hop + 2])
        assert torch.equal(rs[new].unique(),
                           torch.arange(bounds[hop + 1], bounds[hop + 2]))


def test_uniform_subsets_chi_square():
    """Without replacement every k-subset of the in-edges is equally likely."""
    d, k, trials = 8, 3, 20000
    ei = torch.stack([torch.arange(1, d + 1), torch.zeros(d, dtype=torch.long)])
    colptr, row, perm = csc_from_coo(ei, d + 1)
    counts = {}
    for s in range(trials):
        out = neighbor_sample(colptr, row, perm, torch.tensor([0]), [k],
                              rng_seed=s)
        subset = tuple(sorted(out.edge.tolist()))
        assert len(subset) == k and len(set(subset)) == k
        counts[subset] = counts.get(subset, 0) + 1
    assert len(counts) == math.comb(d, k)
    p = scipy_stats.chisquare(list(counts.values())).pvalue
    assert p > 1e-3, f'subset frequencies not uniform (p={p:.2e})'


def test_uniform_with_replacement_chi_square():
    d, k, trials = 10, 5, 4000
    ei = torch.stack([torch.arange(1, d + 1), torch.zeros(d, dtype=torch.long)])
    colptr, row, perm = csc_from_coo(ei, d + 1)
    picks = torch.cat([neighbor_sample(colptr, row, perm, torch.tensor([0]),
                                       [k], replace=True, rng_seed=s).edge
                       for s in range(trials)])
    freq = torch.bincount(picks, minlength=d)
    assert picks.numel() == k * trials
    p = scipy_stats.chisquare(freq.tolist()).pvalue
    assert p > 1e-3, f'draws not uniform (p={p:.2e})'


def test_determinism_and_thread_invariance():
    _, colptr, row, perm = graph(num_nodes=3000, num_edges=60000, seed=2)
    seed = torch.arange(0, 3000, 7)
    args = (colptr, row, perm, seed, [15, 10])
    a = neighbor_sample(*args, rng_seed=99)
    b = neighbor_sample(*args, rng_seed=99)
    c = neighbor_sample(*args, rng_seed=100)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        d = neighbor_sample(*args, rng_seed=99)
    finally:
        torch.set_num_threads(threads)
    assert a.batch is None
    for x, y, z in zip(a[:4] + a[5:], b[:4] + b[5:], d[:4] + d[5:]):
        assert torch.equal(x, y) and torch.equal(x, z)
    assert not torch.equal(a.edge, c.edge)


def test_disjoint_subtrees():
    _, colptr, row, perm = graph(num_nodes=200, num_edges=3000, seed=3)
    seed = torch.tensor([4, 4, 9])  # a repeated seed gets two subtrees
    out = neighbor_sample(colptr, row, perm, seed, [4, 3], disjoint=True,
                          rng_seed=1)
    assert out.batch.numel() == out.node.numel()
    assert torch.equal(out.batch[:3], torch.arange(3))
    # unique within each subtree, and edges never cross subtrees
    keys = out.batch * 200 + out.node
    assert keys.unique().numel() == keys.numel()
    assert torch.equal(out.batch[out.row], out.batch[out.col])


def test_edge_cases():
    _, colptr, row, perm = graph()
    empty = torch.empty(0, dtype=torch.long)
    out = neighbor_sample(colptr, row, perm, empty, [5, 5])
    assert out.node.numel() == 0 and out.row.numel() == 0
    assert out.num_sampled_nodes.tolist() == [0, 0, 0]
    out = neighbor_sample(colptr, row, perm, torch.tensor([59, 58]), [5, 5])
    assert out.node.tolist() == [59, 58] and out.edge.numel() == 0
    out = neighbor_sample(colptr, row, perm, torch.tensor([1]), [0, 5])
    assert out.node.tolist() == [1] and out.num_sampled_edges.tolist() == [0, 0]
    # a graph with nodes but no edges
    colptr0 = torch.zeros(6, dtype=torch.long)  # 5 nodes
    out = neighbor_sample(colptr0, empty, None, torch.tensor([0, 4]), [3],
                          replace=True)
    assert out.node.tolist() == [0, 4] and out.edge.numel() == 0


@pytest.mark.parametrize('bad,match', [
    (dict(num_neighbors=[2, -2]), r"num_neighbors\[1\]"),
    (dict(seed=torch.tensor([0, 60])), "'seed' holds ids"),
    (dict(seed=torch.tensor([-1])), "'seed' holds ids"),
    (dict(seed=torch.tensor([0.0])), "'seed' must be Long"),
    (dict(seed=torch.tensor([[0]])), "'seed' must be 1-dimensional"),
    (dict(colptr='int32'), "'colptr' must be Long"),
    (dict(row='float'), "'row' must be int64 or int32"),
    (dict(edge_id='short'), "'edge_id' has"),
    (dict(colptr='bumped'), "colptr\\[-1\\]"),
])
def test_bad_inputs(bad, match):
    _, colptr, row, perm = graph()
    args = dict(colptr=colptr, row=row, edge_id=perm, seed=torch.tensor([0]),
                num_neighbors=[2])
    fix = {'int32': lambda t: t.int(), 'float': lambda t: t.float(),
           'short': lambda t: t[:-1],
           'bumped': lambda t: torch.cat([t[:-1], t[-1:] + 1])}
    for key, value in bad.items():
        args[key] = fix[value](args[key]) if isinstance(value, str) else value
    with pytest.raises(RuntimeError, match=match):
        neighbor_sample(args['colptr'], args['row'], args['edge_id'],
                        args['seed'], args['num_neighbors'])


def test_opcheck():
    _, colptr, row, perm = graph()
    seed = torch.tensor([0, 5, 12])
    for replace, disjoint in [(False, False), (True, True)]:
        torch.library.opcheck(
            torch.ops.fusesample.neighbor_sample.default,
            (colptr, row, perm, seed, [3, 2], replace, disjoint, 5),
            test_utils=('test_schema', 'test_faketensor'))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('fanout,replace,disjoint,num_seeds', [
    ([3, 2], False, False, 5),
    ([4, 3, 2], True, True, 5),
    ([-1, 2], False, False, 5),   # unbounded: CUDA samples per hop, in the call
    ([3, 2], False, False, 0),    # empty batch
])
def test_async_equals_sync(device, fanout, replace, disjoint, num_seeds):
    """neighbor_sample_async's wait() gives the synchronous op's output, and
    its meta is [n, m, num_sampled_nodes, num_sampled_edges, error]."""
    from pyg_fusesample.ops import neighbor_sample_async
    _, colptr, row, perm = graph()
    seed = torch.tensor([0, 5, 57, 12, 3])[:num_seeds]
    args = [t.to(device) for t in (colptr, row, perm, seed)]
    expected = neighbor_sample(*args, fanout, replace, disjoint, 7)
    raw = torch.ops.fusesample.neighbor_sample_async(*args, fanout, replace,
                                                     disjoint, 7)
    pending = neighbor_sample_async(*args, fanout, replace, disjoint, 7)
    out = pending.wait()
    assert pending.wait() is out  # finished once
    assert_equal_outputs(out, [None if t is None else t.cpu()
                               for t in expected])
    meta = raw[-1]  # filled: the stream has passed pending's later launch
    hops = len(fanout)
    assert meta.device.type == 'cpu' and meta.numel() == 4 + 2 * hops
    assert meta.tolist() == [out.node.numel(), out.row.numel(),
                             *out.num_sampled_nodes.tolist(),
                             *out.num_sampled_edges.tolist(), 0]
    for buffer, length in zip(raw[:4], [out.node.numel()] + 3 * [out.row.numel()]):
        assert buffer.numel() >= length


@pytest.mark.parametrize('device', devices())
def test_async_bad_seed_raises(device):
    """An out-of-range seed is an error on either path: raised by the call on
    the CPU, by wait() on CUDA (where the device finds it)."""
    from pyg_fusesample.ops import neighbor_sample_async
    _, colptr, row, perm = graph()
    args = [t.to(device) for t in (colptr, row, perm, torch.tensor([0, 60]))]
    with pytest.raises(RuntimeError, match="'seed' holds ids"):
        neighbor_sample_async(*args, [2, 2]).wait()


def test_async_opcheck():
    _, colptr, row, perm = graph()
    seed = torch.tensor([0, 5, 12])
    for replace, disjoint in [(False, False), (True, True)]:
        torch.library.opcheck(
            torch.ops.fusesample.neighbor_sample_async.default,
            (colptr, row, perm, seed, [3, 2], replace, disjoint, 5),
            test_utils=('test_schema', 'test_faketensor'))


def test_induced_subgraph_and_csc_match_reference_and_opcheck():
    from pyg_fusesample.ops import induced_subgraph
    ei, colptr, row, perm = graph(num_nodes=80, num_edges=600, seed=4)
    ref_csc = ref.csc_from_coo(ei, 80)
    for a, b in zip((colptr, row, perm), ref_csc):
        assert torch.equal(a, b)
    node = torch.randperm(80, generator=torch.Generator().manual_seed(0))[:30]
    for edge_id in (perm, None):
        out = induced_subgraph(colptr, row, edge_id, node)
        for a, b in zip(out, ref.induced_subgraph(colptr, row, edge_id, node)):
            assert torch.equal(a, b)
    with pytest.raises(RuntimeError, match="'node' must hold unique ids"):
        induced_subgraph(colptr, row, perm, torch.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="'col' holds ids"):
        csc_from_coo(torch.tensor([[0, 1], [1, 9]]), 5)
    torch.library.opcheck(torch.ops.fusesample.induced_subgraph.default,
                          (colptr, row, perm, node),
                          test_utils=('test_schema', 'test_faketensor'))
    torch.library.opcheck(torch.ops.fusesample.csc_from_coo.default,
                          (ei[0], ei[1], 80),
                          test_utils=('test_schema', 'test_faketensor'))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype,shape', [
    (torch.float32, (50, 100)), (torch.float16, (50, 3)),
    (torch.bfloat16, (50, 8)), (torch.int64, (50, )), (torch.bool, (50, )),
    (torch.uint8, (50, 7)), (torch.float32, (50, 2, 3)),
])
def test_gather_rows_matches_index_select(device, dtype, shape):
    from pyg_fusesample.ops import gather_rows
    g = torch.Generator().manual_seed(0)
    src = (torch.randn(shape, generator=g) * 10).to(dtype).to(device)
    index = torch.randint(0, 50, (77, ), generator=g).to(device)
    for s in (src, src[1:]):  # [1:] is a storage offset: misaligned rows
        idx = index.clamp(max=s.size(0) - 1)
        assert torch.equal(gather_rows(s, idx), s.index_select(0, idx))
        assert torch.equal(gather_rows(s, idx, check_index=False),
                           s.index_select(0, idx))
    empty = index[:0]
    assert gather_rows(src, empty).shape == (0, *shape[1:])
    with pytest.raises(RuntimeError, match="'index' holds ids"):
        gather_rows(src, torch.tensor([0, 50], device=device))
    with pytest.raises(RuntimeError, match="'index' must be Long"):
        gather_rows(src, index.int())
    torch.library.opcheck(torch.ops.fusesample.gather_rows.default,
                          (src, index, True),
                          test_utils=('test_schema', 'test_faketensor'))


@pytest.mark.parametrize('device', devices())
def test_gather_rows_list_matches_gather_rows(device):
    """One call for several attributes: each result equals gather_rows of
    that tensor, whatever its dtype and row shape; errors are gather_rows'."""
    from pyg_fusesample.ops import gather_rows, gather_rows_list
    g = torch.Generator().manual_seed(0)
    srcs = [torch.randn(50, 100, generator=g), torch.randint(0, 9, (50, )),
            torch.rand(50, generator=g) > 0.5,
            torch.randn(50, 3, 2, generator=g).half()]
    srcs = [s.to(device) for s in srcs]
    index = torch.randint(0, 50, (40, ), generator=g).to(device)
    for check_index in (True, False):
        out = gather_rows_list(srcs, index, check_index=check_index)
        assert len(out) == len(srcs)
        for s, o in zip(srcs, out):
            assert torch.equal(o, gather_rows(s, index))
    assert gather_rows_list([], index) == []
    with pytest.raises(RuntimeError, match="'index' holds ids"):
        gather_rows_list(srcs, torch.tensor([0, 50], device=device))
    torch.library.opcheck(torch.ops.fusesample.gather_rows_list.default,
                          (srcs, index, True),
                          test_utils=('test_schema', 'test_faketensor'))


@pytest.mark.parametrize('device', devices())
def test_induced_subgraph_small_and_large_node_sets(device):
    # The CPU kernel maps ids through a dense table when the node set's
    # in-edges are many next to the graph's nodes, else through a hash map:
    # both against the reference (and CUDA's kernel), duplicates refused.
    from pyg_fusesample.ops import induced_subgraph
    ei, colptr, row, perm = graph(num_nodes=5000, num_edges=20000, seed=6)
    gen = torch.Generator().manual_seed(1)
    for size in (3, 8, 4000):  # (hash map, hash map, dense table on CPU)
        node = torch.randperm(5000, generator=gen)[:size]
        want = ref.induced_subgraph(colptr, row, perm, node)
        got = induced_subgraph(colptr.to(device), row.to(device),
                               perm.to(device), node.to(device))
        for a, b in zip(got, want):
            assert torch.equal(a.cpu(), b)
    for node in (torch.tensor([7, 7]), torch.arange(4000).repeat(2)):
        with pytest.raises(RuntimeError, match="'node' must hold unique ids"):
            induced_subgraph(colptr, row, perm, node)
