"""LayerWiseLoader: batches in PyG's layer-by-layer layout, exact layers
equal full propagation, and a model trains on them."""
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GraphConv

from conftest import devices
from pyg_fusesample.loader.layer_wise_loader import LayerWiseLoader


def _data(n=120, e=900, seed=0, features=8, classes=3):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(n, (2, e), generator=g)
    x = torch.randn(n, features, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    mask = torch.rand(n, generator=g) < 0.5
    return Data(x=x, y=y % classes, edge_index=ei, train_mask=mask)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('method', ['ladies', 'fastgcn'])
def test_batch_layout(device, method):
    data = _data().to(device)
    loader = LayerWiseLoader(data, [20, 20], method=method, batch_size=16,
                             input_nodes=data.train_mask, shuffle=True, seed=1)
    seeds = data.train_mask.nonzero().view(-1)
    seen = []
    for batch in loader:
        b = batch.batch_size
        assert torch.equal(batch.n_id[:b], seeds[batch.input_id])
        assert torch.equal(batch.x, data.x[batch.n_id])
        assert torch.equal(batch.y, data.y[batch.n_id])
        assert batch.edge_index.device == data.x.device
        assert len(batch.adjs) == 2
        (ei1, w1, size1), (ei0, w0, size0) = batch.adjs
        n = torch.tensor(batch.num_sampled_nodes).cumsum(0).tolist()
        assert size0 == (n[1], n[0]) and size1 == (n[2], n[1])
        for ei, w, (num_src, num_dst) in batch.adjs:
            assert bool((ei[0] < num_src).all()) and bool((ei[1] < num_dst).all())
            total = torch.zeros(num_dst, device=w.device).index_add_(0, ei[1], w)
            has_edges = torch.bincount(ei[1], minlength=num_dst) > 0
            assert torch.allclose(total[has_edges],
                                  torch.ones_like(total[has_edges]))
        real = batch.e_id >= 0
        assert torch.equal(data.edge_index[:, batch.e_id[real]],
                           batch.n_id[batch.edge_index[:, real]])
        # The storage filled in one update is the Data that setting the
        # attributes one by one makes.
        assert set(batch.keys()) == {
            'x', 'y', 'train_mask', 'edge_index', 'edge_weight', 'e_id',
            'n_id', 'input_id', 'batch_size', 'num_sampled_nodes',
            'num_sampled_edges', 'adjs', 'num_nodes'}
        assert batch.num_nodes == batch.n_id.numel() == batch.x.size(0)
        assert batch.num_edges == batch.edge_index.size(1)
        assert batch.is_node_attr('x') and batch.is_edge_attr('e_id')
        seen.append(batch.input_id)
    assert torch.equal(torch.cat(seen).sort().values,
                       torch.arange(seeds.numel(), device=device))


def test_exact_layer_is_full_propagation():
    # num_samples = -1 takes every in-neighbour: A-hat X on the batch rows.
    data = _data()
    loader = LayerWiseLoader(data, [-1], batch_size=30, normalization='sym',
                             normalize_weights=False)
    n = data.num_nodes
    a = torch.zeros(n, n, dtype=torch.float64)
    ei = torch.cat([data.edge_index, torch.arange(n).expand(2, n)], dim=1)
    a.index_put_((ei[1], ei[0]), torch.ones(ei.size(1), dtype=torch.float64),
                 accumulate=True)
    deg = a.sum(1)
    a_hat = deg.rsqrt()[:, None] * a * deg.rsqrt()[None, :]
    full = a_hat @ data.x.double()
    for batch in loader:
        (ei_b, w, (num_src, num_dst)), = batch.adjs
        out = torch.zeros(num_dst, data.x.size(1), dtype=torch.float64)
        out.index_add_(0, ei_b[1], w.double()[:, None] * batch.x.double()[ei_b[0]])
        assert torch.allclose(out, full[batch.n_id[:num_dst]], atol=1e-5)


def test_deterministic_under_seed():
    data = _data()

    def run():
        loader = LayerWiseLoader(data, [10, 10], batch_size=20, shuffle=True,
                                 seed=3)
        return [b.n_id for b in loader]
    assert all(torch.equal(a, b) for a, b in zip(run(), run()))


def test_model_trains_layer_by_layer():
    torch.manual_seed(0)
    data = _data(n=300, e=3000)
    loader = LayerWiseLoader(data, [64, 64], batch_size=64, shuffle=True,
                             seed=0)
    convs = torch.nn.ModuleList([GraphConv(8, 32), GraphConv(32, 3)])
    opt = torch.optim.Adam(convs.parameters(), lr=0.01)
    losses = []
    for _ in range(15):
        for batch in loader:
            x = batch.x
            for i, (conv, (ei, w, size)) in enumerate(zip(convs, batch.adjs)):
                x = conv((x, x[:size[1]]), ei, w)
                if i == 0:
                    x = x.relu()
            loss = F.cross_entropy(x, batch.y[:batch.batch_size])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5


def test_bad_arguments():
    data = _data()
    with pytest.raises(ValueError, match="'method' must be one of"):
        LayerWiseLoader(data, [5], method='graphsaint')
    with pytest.raises(ValueError, match="'normalization' must be one of"):
        LayerWiseLoader(data, [5], normalization='col')
    with pytest.raises(ValueError, match="'num_samples' must be"):
        LayerWiseLoader(data, [])
    with pytest.raises(ValueError, match="'input_nodes' holds ids outside"):
        LayerWiseLoader(data, [5], input_nodes=torch.tensor([1000]))
    with pytest.raises(ValueError, match="does not take 'collate_fn'"):
        LayerWiseLoader(data, [5], collate_fn=list)
    # FastGCN on a graph whose every importance is 0 (no edges, no loops)
    edgeless = Data(x=torch.randn(4, 2), edge_index=torch.empty(
        2, 0, dtype=torch.long), num_nodes=4)
    with pytest.raises(ValueError, match="every node's is 0"):
        LayerWiseLoader(edgeless, [2], method='fastgcn', add_self_loops=False)
    # ... which draws nothing when asked for nothing, and with loops is fine
    LayerWiseLoader(edgeless, [0], method='fastgcn', add_self_loops=False)
    assert len(next(iter(LayerWiseLoader(edgeless, [2], method='fastgcn',
                                         batch_size=2))).n_id) >= 2


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('method', ['ladies', 'fastgcn'])
def test_prefetch_yields_the_same_batches(device, method):
    """prefetch=True assembles the batches on a background thread: the same
    batches (order, draws, weights) as without, the same count, an epoch
    left half-way stops its thread, and a sampling error reaches the
    caller."""
    data = _data().to(device)

    def epoch(prefetch, generator=None):
        loader = LayerWiseLoader(data, [20, 10], method=method, batch_size=16,
                                 shuffle=True, generator=generator,
                                 seed=None if generator else 4,
                                 prefetch=prefetch)
        return loader, [(b.n_id, b.edge_index, b.edge_weight) for b in loader]
    loader, plain = epoch(False)
    loader, ahead = epoch(True)
    assert len(ahead) == len(plain) == len(loader)
    for a, b in zip(ahead, plain):
        for x, y in zip(a, b):
            assert torch.equal(x, y)
    # the keys come from the generator in the caller's thread, as without
    _, plain = epoch(False, torch.Generator().manual_seed(9))
    _, ahead = epoch(True, torch.Generator().manual_seed(9))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(ahead, plain))
    it = iter(loader)
    next(it)
    it.close()  # an epoch left half-way: its threads stop, nothing follows
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('threads', [1, 3])
@pytest.mark.parametrize('drop_last', [False, True])
def test_prefetch_threads_keep_the_order(device, threads, drop_last,
                                         monkeypatch):
    """The native threads make every W-th batch each; the batches come in
    the epoch's order, all attributes equal to plain iteration's (a last
    partial batch, or none with drop_last)."""
    from pyg_fusesample.loader import layer_wise_loader
    monkeypatch.setattr(layer_wise_loader._NativeIterator, 'threads',
                        {device: threads})
    data = _data(n=150).to(device)
    data.score = torch.randn(150, 2, 3, device=device)

    def epoch(prefetch):
        loader = LayerWiseLoader(data, [12, 6], batch_size=16, shuffle=True,
                                 seed=2, drop_last=drop_last,
                                 prefetch=prefetch)
        it = iter(loader)
        return len(it), list(it)
    (n_plain, plain), (n_ahead, ahead) = epoch(False), epoch(True)
    assert n_plain == n_ahead == len(plain) == len(ahead) == \
        (9 if drop_last else 10)
    for a, b in zip(ahead, plain):
        assert a.keys() == b.keys()
        for key in b.keys():
            if isinstance(b[key], torch.Tensor):
                assert torch.equal(a[key], b[key]), key
            elif key != 'adjs':
                assert a[key] == b[key], key
        assert a.batch_size == b.batch_size


@pytest.mark.cuda
def test_native_prefetch_waits_for_the_callers_stream():
    """The native threads work on streams of their own that start after
    what the caller's stream enqueued before the epoch (here a write to x
    behind ~50 ms of GPU time, which nothing on the host waits for), and
    the caller's stream waits for each batch."""
    data = _data().to('cuda')
    plain = [b.x for b in LayerWiseLoader(data, [5, 5], batch_size=8, seed=1,
                                          prefetch=False)]
    loader = LayerWiseLoader(data, [5, 5], batch_size=8, seed=1,
                             prefetch=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)
    data.x.mul_(2)
    ahead = [b.x * 1 for b in loader]  # (used on the caller's stream)
    assert len(ahead) == len(plain)
    assert all(torch.equal(a, 2 * p) for a, p in zip(ahead, plain))


def test_prefetch_needs_no_workers_and_reraises():
    data = _data()
    with pytest.raises(ValueError, match="needs 'num_workers=0'"):
        LayerWiseLoader(data, [5], prefetch=True, num_workers=2)
    for prefetch in (False, True):
        loader = LayerWiseLoader(data, [5], batch_size=8, prefetch=prefetch)
        loader.num_samples = [-2]  # the op's own check, on the thread
        with pytest.raises(RuntimeError, match=r"'num_samples\[0\]' is -2"):
            next(iter(loader))


def test_attributes_off_the_graph_device_are_gathered_here():
    """A node attribute that is not on the graph's device is sliced by the
    loader, not by the op (which gathers on the graph's device)."""
    from pyg_fusesample.loader.layer_wise_loader import _NodeRows
    data = _data()
    rows = _NodeRows(data, torch.device('meta'))
    assert rows.gathered == []
    node = torch.tensor([3, 1, 4])
    got = dict(rows.attributes([], node))
    assert torch.equal(got['x'], data.x[node]) and \
        torch.equal(got['y'], data.y[node])
