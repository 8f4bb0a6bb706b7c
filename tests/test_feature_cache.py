"""GPUFeatureCache and the gathers it rests on: fusesample::gather_rows from
pinned host memory (zero-copy on a GPU) and gather_rows_cached."""
import pytest
import torch

from conftest import devices, paper_author_graph
from pyg_fusesample.ops import gather_rows, gather_rows_cached
from pyg_fusesample.sampler import GPUFeatureCache


def _src(n=100, f=12, dtype=torch.float32):
    return torch.randn(n, f, generator=torch.Generator().manual_seed(0)).to(dtype)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16, torch.int64])
def test_cached_gather_equals_index_select(device, dtype):
    src = _src(dtype=dtype)
    host = src.pin_memory() if device == 'cuda' else src
    slot = torch.full((100, ), -1, dtype=torch.int32)
    cached = torch.tensor([3, 50, 7, 99])
    slot[cached] = torch.arange(4, dtype=torch.int32)
    cache = src[cached].to(device)
    index = torch.randint(100, (500, ), generator=torch.Generator().manual_seed(1))
    hits = torch.zeros(1, dtype=torch.long, device=device)
    out = gather_rows_cached(host, cache, slot.to(device), index.to(device), hits)
    assert out.device.type == device
    assert torch.equal(out.cpu(), src[index])
    assert int(hits) == int(torch.isin(index, cached).sum())


def test_cached_rows_come_from_the_cache():
    # A cache whose rows differ from src shows which one was read.
    src = _src()
    slot = torch.full((100, ), -1, dtype=torch.int32)
    slot[5] = 0
    cache = torch.full((1, 12), 7.0)
    out = gather_rows_cached(src, cache, slot, torch.tensor([5, 6, 5]),
                             torch.zeros(1, dtype=torch.long))
    assert torch.equal(out[0], cache[0]) and torch.equal(out[2], cache[0])
    assert torch.equal(out[1], src[6])


def test_cached_gather_errors():
    src = _src()
    slot = torch.full((100, ), -1, dtype=torch.int32)
    hits = torch.zeros(1, dtype=torch.long)
    index = torch.tensor([1])
    with pytest.raises(RuntimeError, match="'cache' must hold rows of 'src'"):
        gather_rows_cached(src, torch.zeros(1, 5), slot, index, hits)
    with pytest.raises(RuntimeError, match="'cache_slot' must be Int"):
        gather_rows_cached(src, src[:1], slot.long(), index, hits)
    with pytest.raises(RuntimeError, match="one entry per row"):
        gather_rows_cached(src, src[:1], slot[:5], index, hits)
    with pytest.raises(RuntimeError, match="one-element int64 counter"):
        gather_rows_cached(src, src[:1], slot, index, torch.zeros(2))
    with pytest.raises(RuntimeError, match="holds ids"):
        gather_rows_cached(src, src[:1], slot, torch.tensor([100]), hits)


def test_opcheck():
    src = _src()
    slot = torch.full((100, ), -1, dtype=torch.int32)
    slot[2] = 0
    torch.library.opcheck(
        torch.ops.fusesample.gather_rows_cached.default,
        (src, src[2:3].clone(), slot, torch.tensor([2, 4]),
         torch.zeros(1, dtype=torch.long)))


@pytest.mark.parametrize('device', devices())
def test_feature_cache_by_degree(device):
    src = _src()
    host = src.pin_memory() if device == 'cuda' else src
    # Node 9 has 5 out-edges, node 4 has 3, node 1 has 2, the rest 0 or 1.
    edge_index = torch.tensor([[9, 9, 9, 9, 9, 4, 4, 4, 1, 1, 0],
                               [0, 1, 2, 3, 5, 6, 7, 8, 2, 3, 4]])
    row_bytes = 12 * 4
    cache = GPUFeatureCache.from_degree(host, edge_index, 2 * row_bytes + 7,
                                        device)
    assert cache.capacity == 2 and cache.cached.tolist() == [9, 4]
    index = torch.tensor([9, 4, 1, 9, 0], device=device)
    assert torch.equal(cache.gather(index).cpu(), src[index.cpu()])
    assert cache.hit_rate == pytest.approx(3 / 5)
    cache.reset_stats()
    assert cache.hit_rate == 0.0


def test_feature_cache_refresh_from_recorded_batches():
    src = _src()
    cache = GPUFeatureCache(src, 3 * 12 * 4, 'cpu')
    assert cache.capacity == 3 and cache.cached.numel() == 0
    for _ in range(3):
        cache.record(torch.tensor([42, 42, 17, 8, 8, 8]))
    cache.record(torch.tensor([1]))
    cache.refresh()
    assert cache.cached.tolist() == [8, 42, 17]
    out = cache.gather(torch.tensor([8, 1]))
    assert torch.equal(out, src[[8, 1]]) and cache.hit_rate == 0.5
    assert 'GPUFeatureCache(3/100 rows' in repr(cache)


def test_feature_cache_errors():
    with pytest.raises(ValueError, match="'cache_bytes' must be"):
        GPUFeatureCache(_src(), -1, 'cpu')
    with pytest.raises(ValueError, match="one score per row"):
        GPUFeatureCache(_src(), 100, 'cpu', hotness=torch.ones(3))


@pytest.mark.cuda
@pytest.mark.parametrize('f,dtype', [(128, torch.float32), (256, torch.bfloat16),
                                     (130, torch.float32), (64, torch.float32)])
@pytest.mark.parametrize('rows', [4095, 20000])
def test_host_gather_in_ascending_order_keeps_the_batch_order(f, dtype, rows):
    # Rows of >= 512 bytes from pinned host memory are read in ascending id
    # order and written back to their positions (gather_rows_kernel.cu):
    # duplicates, ids out of range (zeros without the check) and the
    # cache's hit count must come out as in the batch's order.
    src = _src(n=50000, f=f, dtype=dtype)
    g = torch.Generator().manual_seed(2)
    index = torch.randint(50000, (rows, ), generator=g)
    index[::7] = index[3]  # duplicates
    host = src.pin_memory()
    out = gather_rows(host, index.cuda(), check_index=False)
    assert torch.equal(out.cpu(), src[index])
    bad = index.clone()
    bad[[0, 5, -1]] = torch.tensor([-1, 50000, 1 << 40])
    out = gather_rows(host, bad.cuda(), check_index=False).cpu()
    assert not out[[0, 5, -1]].any()
    keep = torch.ones(rows, dtype=torch.bool)
    keep[[0, 5, -1]] = False
    assert torch.equal(out[keep], src[bad[keep]])
    slot = torch.full((50000, ), -1, dtype=torch.int32)
    cached = torch.arange(0, 50000, 3)
    slot[cached] = torch.arange(cached.numel(), dtype=torch.int32)
    hits = torch.zeros(1, dtype=torch.long, device='cuda')
    out = gather_rows_cached(host, src[cached].cuda(), slot.cuda(),
                             index.cuda(), hits)
    assert torch.equal(out.cpu(), src[index])
    assert int(hits) == int((index % 3 == 0).sum())


@pytest.mark.cuda
def test_gather_rows_from_pinned_host_memory():
    src = _src(n=1000, f=128)
    index = torch.randint(1000, (4096, ), device='cuda')
    out = gather_rows(src.pin_memory(), index)
    assert out.is_cuda and torch.equal(out.cpu(), src[index.cpu()])
    with pytest.raises(RuntimeError, match="is on cpu"):
        gather_rows(src, index)  # not pinned: refused, never copied
    with pytest.raises(ValueError, match="pinned memory"):
        GPUFeatureCache(src, 1024, 'cuda')


@pytest.mark.cuda
@pytest.mark.parametrize('prefetch', [False, 'thread'])
def test_loader_gathers_pinned_host_features(prefetch):
    # The graph on the GPU, x in pinned host memory: batches equal those of
    # x on the GPU, with x gathered onto the GPU.
    from torch_geometric.data import Data
    from pyg_fusesample import FusedNeighborLoader
    g = torch.Generator().manual_seed(0)
    n = 500
    data = Data(x=torch.randn(n, 32, generator=g),
                y=torch.randint(4, (n, ), generator=g),
                edge_index=torch.randint(n, (2, 5000), generator=g))
    on_gpu = data.clone().to('cuda')
    pinned = on_gpu.clone()
    pinned.x = data.x.pin_memory()

    def batches(d):
        return list(FusedNeighborLoader(d, num_neighbors=[5, 5], batch_size=64,
                                        seed=3, prefetch=prefetch))
    for a, b in zip(batches(on_gpu), batches(pinned)):
        assert b.x.is_cuda and torch.equal(a.x, b.x)
        assert torch.equal(a.n_id, b.n_id)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('prefetch', [False, 'thread'])
def test_loader_with_feature_cache(device, prefetch):
    from torch_geometric.data import Data
    from pyg_fusesample import FusedNeighborLoader
    g = torch.Generator().manual_seed(0)
    n = 400
    data = Data(x=torch.randn(n, 16, generator=g),
                y=torch.randint(4, (n, ), generator=g),
                edge_index=torch.randint(n, (2, 4000), generator=g)).to(device)
    host_x = data.x.cpu().pin_memory() if device == 'cuda' else data.x
    cache = GPUFeatureCache.from_degree(host_x, data.edge_index, 50 * 16 * 4,
                                        device)
    cached = data.clone()
    cached.x = host_x

    def batches(d, **kwargs):
        return list(FusedNeighborLoader(d, num_neighbors=[5, 5], batch_size=64,
                                        seed=3, prefetch=prefetch, **kwargs))
    for a, b in zip(batches(data), batches(cached, feature_cache={'x': cache})):
        assert torch.equal(a.n_id, b.n_id)
        assert b.x.device == a.x.device and torch.equal(a.x, b.x)
        assert torch.equal(a.y, b.y)
    assert 0.0 < cache.hit_rate < 1.0


def test_loader_feature_cache_errors():
    from torch_geometric.data import Data
    from pyg_fusesample import FusedNeighborLoader
    data = Data(x=torch.randn(10, 4), edge_index=torch.randint(10, (2, 30)))
    cache = GPUFeatureCache(data.x, 64, 'cpu')
    with pytest.raises(TypeError, match="must map attribute names"):
        FusedNeighborLoader(data, [2], feature_cache={'x': data.x})
    with pytest.raises(ValueError, match="not a node attribute"):
        FusedNeighborLoader(data, [2], feature_cache={'z': cache})
    with pytest.raises(ValueError, match="num_workers=0"):
        FusedNeighborLoader(data, [2], feature_cache={'x': cache},
                            num_workers=1)
    with pytest.raises(ValueError, match="holds rows of shape"):
        FusedNeighborLoader(data, [2], feature_cache={
            'x': GPUFeatureCache(torch.randn(10, 5), 64, 'cpu')})


def _hetero(device):
    return paper_author_graph(300, 100, 2000, 900, seed=1, features=(8, 4),
                              labels=3).to(device)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('prefetch', [False, True, 'thread'])
def test_hetero_loader_with_feature_cache(device, prefetch):
    # HeteroData: caches keyed by (node type, attribute); the batches equal
    # the uncached loader's, the cached rows come through the cache.
    from pyg_fusesample import FusedNeighborLoader
    if device == 'cpu' and prefetch:
        pytest.skip('prefetch on CPU data is for plain Data batches')
    data = _hetero(device)
    cached = data.clone()
    caches = {}
    for nt in ('paper', 'author'):
        host = data[nt].x.cpu()
        if device == 'cuda':
            host = host.pin_memory()
        cached[nt].x = host
        et = [e for e in data.edge_types if e[0] == nt][0]
        caches[nt, 'x'] = GPUFeatureCache.from_degree(
            host, data[et].edge_index, host.size(0) // 4 * host[0].numel()
            * 4, device)

    def batches(d, **kwargs):
        return list(FusedNeighborLoader(
            d, num_neighbors=[4, 3], input_nodes='paper', batch_size=32,
            seed=5, prefetch=prefetch, **kwargs))
    for a, b in zip(batches(data), batches(cached, feature_cache=caches)):
        for nt in ('paper', 'author'):
            assert torch.equal(a[nt].n_id, b[nt].n_id)
            assert b[nt].x.device == a[nt].x.device
            assert torch.equal(a[nt].x, b[nt].x)
        assert torch.equal(a['paper'].y, b['paper'].y)
    for cache in caches.values():
        assert 0.0 < cache.hit_rate < 1.0


def test_hetero_feature_cache_errors():
    from pyg_fusesample import FusedNeighborLoader
    data = _hetero('cpu')
    cache = GPUFeatureCache(data['paper'].x, 64, 'cpu')
    kw = dict(num_neighbors=[2], input_nodes='paper')
    with pytest.raises(TypeError, match=r"\(node type, attribute\) pairs"):
        FusedNeighborLoader(data, feature_cache={'x': cache}, **kw)
    with pytest.raises(ValueError, match="node type 'venue'"):
        FusedNeighborLoader(data, feature_cache={('venue', 'x'): cache}, **kw)
    with pytest.raises(ValueError, match=r"not a node attribute of "
                       r"'data\['paper'\]'"):
        FusedNeighborLoader(data, feature_cache={('paper', 'z'): cache}, **kw)
    with pytest.raises(ValueError, match="holds rows of shape"):
        FusedNeighborLoader(data, feature_cache={('author', 'x'): cache},
                            **kw)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('neg', ['binary', 'triplet'])
def test_link_loader_with_feature_cache(device, neg):
    # FusedLinkNeighborLoader takes the same feature_cache (Data: by
    # attribute, HeteroData: by (node type, attribute)); its batches equal
    # the uncached loader's.
    from torch_geometric.data import Data
    from pyg_fusesample import FusedLinkNeighborLoader
    g = torch.Generator().manual_seed(2)
    n = 300
    data = Data(x=torch.randn(n, 8, generator=g),
                edge_index=torch.randint(n, (2, 3000), generator=g))
    hetero = _hetero('cpu')
    for d, key, seeds in (
            (data, 'x', data.edge_index[:, :200]),
            (hetero, ('paper', 'x'),
             (('paper', 'cites', 'paper'),
              hetero['paper', 'cites', 'paper'].edge_index[:, :200]))):
        d = d.to(device)
        store = d if isinstance(key, str) else d[key[0]]
        host = store.x.cpu()
        if device == 'cuda':
            host = host.pin_memory()
        et = d.edge_index if isinstance(key, str) else \
            d['paper', 'cites', 'paper'].edge_index
        cache = GPUFeatureCache.from_degree(host, et, 60 * 8 * 4, device)
        cached = d.clone()
        (cached if isinstance(key, str) else cached[key[0]]).x = host
        if not isinstance(key, str):
            seeds = (seeds[0], seeds[1].to(device))
        else:
            seeds = seeds.to(device)

        def batches(graph, **kwargs):
            return list(FusedLinkNeighborLoader(
                graph, num_neighbors=[3, 2], edge_label_index=seeds,
                neg_sampling=neg, batch_size=32, seed=4, **kwargs))
        for a, b in zip(batches(d), batches(cached,
                                            feature_cache={key: cache})):
            assert a.keys() == b.keys()
            sa = a if isinstance(key, str) else a[key[0]]
            sb = b if isinstance(key, str) else b[key[0]]
            assert torch.equal(sa.n_id, sb.n_id)
            assert sb.x.device == sa.x.device and torch.equal(sa.x, sb.x)
            for name in ('edge_label_index', 'src_index', 'dst_pos_index',
                         'dst_neg_index'):
                for s1, s2 in zip(a.stores, b.stores):
                    if name in s1:
                        assert torch.equal(s1[name], s2[name])
        assert 0.0 < cache.hit_rate < 1.0
