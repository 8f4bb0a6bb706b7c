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


def test_exact_layer_weights_are_values():
    ei = _graph()
    graph, value = _inputs(ei, 50)
    out = layer_sample(graph.colptr, graph.row, graph.edge_id,
                       torch.tensor([0, 1]), [-1], 1, value)
    slots = torch.cat([torch.arange(int(graph.colptr[v]), int(graph.colptr[v + 1]))
                       for v in (0, 1)])
    # Every in-edge of the targets, in slot order, weighted by its value.
    assert torch.equal(out.edge, graph.edge_id[slots])
    assert torch.equal(out.weight, value[slots])


def test_empty_batch_isolated_targets_and_deterministic():
    ei = torch.tensor([[1, 2], [0, 0]])
    graph = build_csc(ei, 4)
    out = layer_sample(graph.colptr, graph.row, graph.edge_id,
                       torch.empty(0, dtype=torch.long), [2, 2], 0)
    assert out.node.numel() == 0 and out.row.numel() == 0
    assert out.num_sampled_nodes.tolist() == [0, 0, 0]
    out = layer_sample(graph.colptr, graph.row, graph.edge_id,
                       torch.tensor([3]), [2], 0)   # 3 has no in-edges
    assert out.node.tolist() == [3] and out.num_sampled_edges.tolist() == [0]
    a = layer_sample(graph.colptr, graph.row, graph.edge_id,
                     torch.tensor([0]), [1], 7)
    b = layer_sample(graph.colptr, graph.row, graph.edge_id,
                     torch.tensor([0]), [1], 7)
    assert torch.equal(a.node, b.node)


def test_bad_inputs():
    ei = _graph()
    graph, value = _inputs(ei, 50)
    args = (graph.colptr, graph.row, graph.edge_id)
    with pytest.raises(RuntimeError, match="'seed' holds ids outside"):
        layer_sample(*args, torch.tensor([50]), [2], 0)
    with pytest.raises(RuntimeError, match=r"'num_samples\[0\]' is -2"):
        layer_sample(*args, torch.tensor([1]), [-2], 0)
    with pytest.raises(RuntimeError, match="'edge_value' must be Double"):
        layer_sample(*args, torch.tensor([1]), [2], 0, value.float())
    with pytest.raises(RuntimeError, match="'node_cumsum' needs one entry"):
        layer_sample(*args, torch.tensor([1]), [2], 0, None,
                     torch.ones(3, dtype=torch.float64))


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
