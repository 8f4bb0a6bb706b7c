"""fusesample::layer_sample (LADIES, FastGCN): exact agreement with the
Python reference, the importance laws checked statistically, and
LayerWiseLoader's batches."""
import pytest
import torch
from reference_layer import layer_sample as reference_layer_sample
from scipy.stats import chisquare

from conftest import devices
from pyg_fusesample.ops import layer_sample
from pyg_fusesample.sampler.graph_store import build_csc


def _graph(num_nodes=50, num_edges=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(num_nodes, (2, num_edges), generator=g)


def _inputs(ei, n, valued=True, seed=0):
    graph = build_csc(ei, n)
    g = torch.Generator().manual_seed(seed)
    value = torch.rand(graph.num_edges, generator=g, dtype=torch.float64) \
        if valued else None
    return graph, value


def _fastgcn_cumsum(graph, value):
    sq = value ** 2 if value is not None else torch.ones(graph.num_edges,
                                                         dtype=torch.float64)
    q = torch.zeros(graph.num_nodes, dtype=torch.float64)
    q.index_add_(0, graph.row.long(), sq)
    return torch.cumsum(q, 0)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('method', ['ladies', 'fastgcn'])
@pytest.mark.parametrize('num_samples', [[5, 5], [8, -1], [0, 3], [100]])
@pytest.mark.parametrize('valued', [False, True])
def test_matches_reference(device, method, num_samples, valued):
    ei = _graph()
    graph, value = _inputs(ei, 50, valued)
    cum = _fastgcn_cumsum(graph, value) if method == 'fastgcn' else None
    seed = torch.tensor([3, 17, 8, 41])
    move = lambda t: None if t is None else t.to(device)  # noqa: E731
    out = layer_sample(move(graph.colptr), move(graph.row),
                       move(graph.edge_id), seed.to(device), num_samples, 99,
                       move(value), move(cum))
    ref = reference_layer_sample(
        graph.colptr.tolist(), graph.row.tolist(), graph.edge_id.tolist(),
        None if value is None else value.tolist(),
        None if cum is None else cum.tolist(), seed.tolist(), num_samples, 99)
    node, row, col, edge, weight, nsn, nse = ref
    assert out.node.cpu().tolist() == node
    assert out.row.cpu().tolist() == row
    assert out.col.cpu().tolist() == col
    assert out.edge.cpu().tolist() == edge
    assert torch.allclose(out.weight.cpu(), torch.tensor(weight,
                                                         dtype=torch.float64))
    assert out.num_sampled_nodes.tolist() == nsn
    assert out.num_sampled_edges.tolist() == nse


def test_layer_targets_are_prefixes_and_edges_are_graph_edges():
    ei = _graph(200, 2000, seed=2)
    graph, value = _inputs(ei, 200)
    seed = torch.arange(0, 200, 10)
    out = layer_sample(graph.colptr, graph.row, graph.edge_id, seed,
                       [30, 30, 30], 5, value)
    assert torch.equal(out.node[:seed.numel()], seed)
    assert out.node.unique().numel() == out.node.numel()
    n = out.num_sampled_nodes.cumsum(0).tolist()
    start = 0
    for l, count in enumerate(out.num_sampled_edges.tolist()):
        row, col = out.row[start:start + count], out.col[start:start + count]
        assert bool((col < n[l]).all()) and bool((row < n[l + 1]).all())
        start += count
    assert torch.equal(ei[0, out.edge], out.node[out.row])
    assert torch.equal(ei[1, out.edge], out.node[out.col])
    # LADIES draws at most s new nodes per layer.
    assert all(c <= 30 for c in out.num_sampled_nodes[1:].tolist())


def test_ladies_importance_law():
    # Targets {0, 1}; candidates 2..5 with in-edge values giving q =
    # [1, 4, 9, 0.5 + 0.5] (one draw per batch: P(u) = q_u / sum q).
    ei = torch.tensor([[2, 3, 4, 5, 5], [0, 0, 1, 1, 0]])
    graph = build_csc(ei, 6)
    by_edge = torch.tensor([1.0, 2.0, 3.0, 0.5 ** 0.5, 0.5 ** 0.5],
                           dtype=torch.float64)
    value = by_edge[graph.edge_id]
    counts = torch.zeros(6, dtype=torch.float64)
    for key in range(6000):
        out = layer_sample(graph.colptr, graph.row, graph.edge_id,
                           torch.tensor([0, 1]), [1], key, value)
        counts[out.node[2:]] += 1
    q = torch.tensor([1, 4, 9, 1], dtype=torch.float64)
    assert chisquare(counts[2:], q / q.sum() * 6000).pvalue > 1e-3


def test_ladies_without_replacement():
    ei = _graph(100, 3000, seed=4)
    graph, value = _inputs(ei, 100)
    for key in range(20):
        out = layer_sample(graph.colptr, graph.row, graph.edge_id,
                           torch.tensor([1, 2, 3]), [10], key, value)
        drawn = out.node[3:]
        assert drawn.numel() <= 10 and drawn.unique().numel() == drawn.numel()


def test_fastgcn_importance_law():
    ei = torch.tensor([[1, 2, 3, 3], [0, 0, 0, 0]])
    graph = build_csc(ei, 4)
    cum = torch.tensor([0.0, 1.0, 3.0, 7.0], dtype=torch.float64)  # 0,1,2,4
    counts = torch.zeros(4, dtype=torch.float64)
    for key in range(3000):
        out = layer_sample(graph.colptr, graph.row, graph.edge_id,
                           torch.tensor([0]), [1], key, node_cumsum=cum)
        counts[out.node[1:]] += 1
    assert counts[0] == 0
    expected = torch.tensor([1, 2, 4], dtype=torch.float64) / 7 * 3000
    assert chisquare(counts[1:], expected).pvalue > 1e-3


@pytest.mark.parametrize('device', devices())
def test_exact_layer_weights_are_values(device):
    ei = _graph()
    graph, value = _inputs(ei, 50)
    out = layer_sample(graph.colptr.to(device), graph.row.to(device),
                       graph.edge_id.to(device),
                       torch.tensor([0, 1], device=device), [-1], 1,
                       value.to(device))
    slots = torch.cat([torch.arange(int(graph.colptr[v]), int(graph.colptr[v + 1]))
                       for v in (0, 1)])
    # Every in-edge of the targets, in slot order, weighted by its value.
    assert torch.equal(out.edge.cpu(), graph.edge_id[slots])
    assert torch.equal(out.weight.cpu(), value[slots])


@pytest.mark.parametrize('device', devices())
def test_empty_batch_isolated_targets_and_deterministic(device):
    ei = torch.tensor([[1, 2], [0, 0]])
    graph = build_csc(ei, 4)
    args = (graph.colptr.to(device), graph.row.to(device),
            graph.edge_id.to(device))
    ids = lambda *v: torch.tensor(v, dtype=torch.long, device=device)  # noqa
    out = layer_sample(*args, ids(), [2, 2], 0)
    assert out.node.numel() == 0 and out.row.numel() == 0
    assert out.num_sampled_nodes.tolist() == [0, 0, 0]
    out = layer_sample(*args, ids(3), [2], 0)   # 3 has no in-edges
    assert out.node.tolist() == [3] and out.num_sampled_edges.tolist() == [0]
    a = layer_sample(*args, ids(0), [1], 7)
    b = layer_sample(*args, ids(0), [1], 7)
    assert torch.equal(a.node, b.node)
    # FastGCN draws without targets too (its law does not depend on them).
    cum = torch.tensor([0.0, 1.0, 2.0, 2.0], dtype=torch.float64,
                       device=device)
    out = layer_sample(*args, ids(), [3, -1], 5, node_cumsum=cum)
    assert out.node.numel() == out.num_sampled_nodes.sum()
    assert set(out.node.tolist()) <= {1, 2}


@pytest.mark.parametrize('device', devices())
def test_bad_inputs(device):
    ei = _graph()
    graph, value = _inputs(ei, 50)
    args = (graph.colptr.to(device), graph.row.to(device),
            graph.edge_id.to(device))
    value = value.to(device)
    ids = lambda *v: torch.tensor(v, device=device)  # noqa: E731
    with pytest.raises(RuntimeError, match="'seed' holds ids outside"):
        layer_sample(*args, ids(50), [2], 0)
    with pytest.raises(RuntimeError, match="'seed' holds ids outside"):
        layer_sample(*args, ids(3, -1), [2], 0)
    with pytest.raises(RuntimeError, match=r"'num_samples\[0\]' is -2"):
        layer_sample(*args, ids(1), [-2], 0)
    with pytest.raises(RuntimeError, match="'edge_value' must be Double"):
        layer_sample(*args, ids(1), [2], 0, value.float())
    with pytest.raises(RuntimeError, match="'node_cumsum' needs one entry"):
        layer_sample(*args, ids(1), [2], 0, None,
                     torch.ones(3, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match="'seed' must be"):
        layer_sample(*args, ids(1.0), [2], 0)
    empty = torch.zeros(1, dtype=torch.long, device=device)  # no nodes
    none = torch.empty(0, dtype=torch.long, device=device)
    with pytest.raises(RuntimeError, match="cannot draw from a graph without"):
        layer_sample(empty, none, None, none, [2], 0, None,
                     torch.empty(0, dtype=torch.float64, device=device))


def _skewed_graph(num_nodes=3000, num_edges=40_000, seed=0):
    """A power-law-ish graph with two hubs: node 0 is the source of 4000
    edges, node 1 the target of 5000; a tail of isolated nodes."""
    g = torch.Generator().manual_seed(seed)
    w = torch.arange(1, num_nodes - 99, dtype=torch.float64) ** -0.8
    src = torch.multinomial(w, num_edges, True, generator=g)
    dst = torch.multinomial(w.flip(0), num_edges, True, generator=g)
    hub_out = torch.stack([torch.zeros(4000, dtype=torch.long),
                           torch.randint(num_nodes - 100, (4000,), generator=g)])
    hub_in = torch.stack([torch.randint(num_nodes - 100, (5000,), generator=g),
                          torch.ones(5000, dtype=torch.long)])
    return torch.cat([torch.stack([src, dst]), hub_out, hub_in], 1)


@pytest.mark.cuda
@pytest.mark.parametrize('method', ['ladies', 'fastgcn'])
@pytest.mark.parametrize('num_samples', [[64, 64, 64], [-1, 50], [0, 30],
                                         [5000, 10], [1, -1]])
@pytest.mark.parametrize('valued', [False, True])
@pytest.mark.parametrize('row_dtype', [torch.int64, torch.int32])
def test_cuda_matches_cpu(method, num_samples, valued, row_dtype):
    """The CUDA path (fused steps over a dense node map) returns the CPU
    path's samples: nodes, edges and their order exactly, weights up to
    the normalising sum's rounding; hubs, isolated seeds, s >= candidates."""
    n = 3000
    graph, value = _inputs(_skewed_graph(n), n, valued, seed=1)
    cum = _fastgcn_cumsum(graph, value) if method == 'fastgcn' else None
    row = graph.row.to(row_dtype)
    g = torch.Generator().manual_seed(3)
    for key in range(4):
        seed = torch.cat([torch.tensor([1, 0, n - 1, n - 50]),
                          torch.randperm(n - 100, generator=g)[:60] + 2]).unique()
        seed = seed[torch.randperm(seed.numel(), generator=g)]
        args = (graph.colptr, row, graph.edge_id, seed, num_samples, key,
                value, cum)
        ref = layer_sample(*args)
        out = layer_sample(*[a.cuda() if isinstance(a, torch.Tensor) else a
                             for a in args])
        for name in ('node', 'row', 'col', 'edge', 'num_sampled_nodes',
                     'num_sampled_edges'):
            assert torch.equal(getattr(out, name).cpu(), getattr(ref, name)), \
                (name, key)
        assert torch.allclose(out.weight.cpu(), ref.weight, rtol=1e-12,
                              atol=0)


def test_opcheck():
    ei = _graph()
    graph, value = _inputs(ei, 50)
    torch.library.opcheck(
        torch.ops.fusesample.layer_sample.default,
        (graph.colptr, graph.row, graph.edge_id, value, None,
         torch.tensor([1, 2, 3]), [4, 4], 3))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('method', ['ladies', 'fastgcn'])
@pytest.mark.parametrize('normalize', [False, True])
def test_layer_batch_is_layer_sample_and_the_batch_attributes(
        device, method, normalize):
    """layer_batch = layer_sample with the same key, edge_index stacked,
    each layer's weights into a target divided by their sum (a loop over
    targets here), e_id -1 past num_edges, the attributes' rows."""
    from pyg_fusesample.ops import layer_batch
    ei = _graph(60, 500)
    graph, value = _inputs(ei, 60)
    cum = _fastgcn_cumsum(graph, value) if method == 'fastgcn' else None
    dev = torch.device(device)
    args = (graph.colptr.to(dev), graph.row.to(dev), graph.edge_id.to(dev))
    seed = torch.tensor([3, 17, 5, 40], device=dev)
    x = torch.randn(60, 3, device=dev)
    y = torch.arange(60, device=dev)
    kw = dict(edge_value=value.to(dev),
              node_cumsum=None if cum is None else cum.to(dev))
    out = layer_batch(*args, seed, [6, 4], 11, num_edges=450,
                      normalize_weights=normalize, weight_dtype=torch.float16,
                      node_attrs=[x, y], **kw)
    ref = layer_sample(*args, seed, [6, 4], 11, **kw)
    assert torch.equal(out.node, ref.node)
    assert torch.equal(out.edge_index, torch.stack([ref.row, ref.col]))
    assert torch.equal(out.e_id, torch.where(ref.edge < 450, ref.edge, -1))
    assert torch.equal(out.num_sampled_nodes, ref.num_sampled_nodes)
    assert torch.equal(out.num_sampled_edges, ref.num_sampled_edges)
    assert torch.equal(out.node_attrs[0], x[ref.node]) and \
        torch.equal(out.node_attrs[1], y[ref.node])
    w = ref.weight.cpu().clone()
    if normalize:
        start = 0
        for e in ref.num_sampled_edges.tolist():
            col = ref.col.cpu()[start:start + e]
            for t in col.unique().tolist():
                into = start + (col == t).nonzero().view(-1)
                total = w[into].sum()
                w[into] = w[into] / total if total > 0 else 0.0
            start += e
    assert out.edge_weight.dtype == torch.float16
    assert torch.allclose(out.edge_weight.cpu().double(), w.half().double())
    # num_edges=-1 keeps every id, also those past the CSC's slot count
    big = args[2] + 10_000
    kept = layer_batch(args[0], args[1], big, seed, [6, 4], 11, **kw)
    assert torch.equal(kept.e_id, ref.edge + 10_000)
    with pytest.raises(RuntimeError, match="'weight_dtype' must be a floating"):
        layer_batch(*args, seed, [6], 1, weight_dtype=torch.long)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.float64, torch.float32,
                                   torch.bfloat16])
def test_normalize_by_target(device, dtype):
    """Each layer's runs of equal targets divided by their sums (0 where a
    sum is 0), the same bits on every device; a target's id repeating
    across a layer's end starts a new run."""
    g = torch.Generator().manual_seed(0)
    nse = torch.tensor([7, 0, 5, 6])
    col = torch.tensor([0, 0, 1, 3, 3, 3, 4] + [4, 4, 5, 5, 5] +
                       [0, 1, 1, 2, 2, 2])
    w = torch.rand(18, generator=g, dtype=torch.float64)
    w[15:] = 0.0                                   # a run summing to 0
    ref = torch.empty(18, dtype=torch.float64)
    start = 0
    for e in nse.tolist():
        c, x = col[start:start + e], w[start:start + e]
        for t in c.unique().tolist():
            into = (c == t).nonzero().view(-1) + start
            total = w[into].sum()
            ref[into] = w[into] / total if total > 0 else 0.0
        start += e
    op = torch.ops.fusesample.normalize_by_target
    out = op(w.to(device), col.to(device), nse, dtype)
    assert out.dtype == dtype and out.device.type == device
    assert torch.allclose(out.cpu().double(), ref.to(dtype).double())
    assert torch.equal(out.cpu(), op(w, col, nse, dtype))
    assert torch.equal(out[15:].cpu(), torch.zeros(3, dtype=dtype))
    with pytest.raises(RuntimeError, match="summing to the number"):
        op(w.to(device), col.to(device), torch.tensor([7, 5]), dtype)
    with pytest.raises(RuntimeError, match="'weight' must be Double"):
        op(w.float().to(device), col.to(device), nse, dtype)
    if device == 'cpu':
        torch.library.opcheck(op.default, (w, col, nse, dtype))
    else:
        with pytest.raises(RuntimeError, match="must be a CPU tensor"):
            op(w.to(device), col.to(device), nse.to(device), dtype)
    with pytest.raises(RuntimeError, match="'dtype' must be a floating"):
        op(w.to(device), col.to(device), nse, torch.long)


@pytest.mark.cuda
@pytest.mark.parametrize('s', [1, 8, 300, 2000, 2048, 2049, 4000])
def test_cuda_ladies_draw_over_many_candidates(s):
    """LADIES' s smallest keys on a GPU: rounds of block sorts for s <=
    2048 (~20K candidates: several chunks compete, in several rounds), a
    device-wide sort above; the CPU's draws either way."""
    n = 30_000
    graph, value = _inputs(_skewed_graph(n, 300_000), n, True, seed=2)
    seed = torch.randperm(n - 100, generator=torch.Generator().manual_seed(s))[:6000]
    args = (graph.colptr, graph.row, graph.edge_id, seed, [s, s], 17, value)
    ref = layer_sample(*args)
    out = layer_sample(*[a.cuda() if isinstance(a, torch.Tensor) else a
                         for a in args])
    assert torch.equal(out.node.cpu(), ref.node)
    assert torch.equal(out.edge.cpu(), ref.edge)
    assert torch.equal(out.num_sampled_nodes, ref.num_sampled_nodes)
    assert torch.allclose(out.weight.cpu(), ref.weight, rtol=1e-12, atol=0)
