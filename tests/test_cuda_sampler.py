"""The CUDA sampler: bitwise agreement with the CPU kernel (both launch
modes), uniformity on the GPU, errors, opcheck, >2^31-edge graphs, and the
loader on GPU data. Skipped without a GPU."""
import copy
import time

import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample.ops import csc_from_coo, induced_subgraph, neighbor_sample

import reference as ref

pytestmark = pytest.mark.cuda
scipy_stats = pytest.importorskip('scipy.stats')


def graph(num_nodes=3000, num_edges=60000, seed=0, hubs=2, isolated=10):
    ei = ref.random_graph(num_nodes, num_edges, seed, hubs, isolated)
    colptr, row, perm = csc_from_coo(ei, num_nodes)
    return ei, colptr, row, perm


def assert_same_sample(cpu, gpu):
    """Every field of the GPU sample equals the CPU one bitwise (None where
    the CPU's is None)."""
    for name, a, b in zip(cpu._fields, cpu, gpu):
        if a is None:
            assert b is None, name
        else:
            assert torch.equal(a, b.cpu()), name


def gpu_loader_data(labels=False):
    """A 2000-node generated graph with 16 features (and 5-class labels) on
    the GPU: the loader tests' input."""
    from torch_geometric.data import Data
    ei, *_ = graph(num_nodes=2000, num_edges=30000)
    y = torch.randint(0, 5, (2000, )) if labels else None
    return Data(x=torch.randn(2000, 16), y=y, edge_index=ei).to('cuda')


def assert_same_batches(a, b, keys=('x', 'y', 'edge_index', 'n_id', 'e_id')):
    """Two loaders' epochs hand out equal batches, in order."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for key in keys:
            assert torch.equal(x[key], y[key]), key
        assert x.num_sampled_nodes == y.num_sampled_nodes
        assert x.num_sampled_edges == y.num_sampled_edges


@pytest.mark.parametrize('fused', [True, False])
@pytest.mark.parametrize('fanout,replace,disjoint', [
    ([15, 10], False, False),
    ([15, 10, 5], False, False),
    ([25, 10], True, False),
    ([10, 5], False, True),
    ([-1, 3], False, False),      # unbounded: per-hop path with growth
    ([3, -1], False, True),
    ([100, 2], False, False),     # k > 32: Floyd's membership over 4 chunks
    ([0, 4], False, False),
])
@pytest.mark.parametrize('row_dtype', [torch.long, torch.int])
def test_cuda_equals_cpu(fused, fanout, replace, disjoint, row_dtype):
    _, colptr, row, perm = graph()
    row = row.to(row_dtype)
    seed = torch.randperm(3000, generator=torch.Generator().manual_seed(1))[:512]
    seed = torch.cat([seed, torch.tensor([0, 1, 2999])])  # hubs, isolated
    cpu = neighbor_sample(colptr, row, perm, seed, fanout, replace, disjoint,
                          rng_seed=42)
    gpu = neighbor_sample(colptr.cuda(), row.cuda(), perm.cuda(), seed.cuda(),
                          fanout, replace, disjoint, rng_seed=42, fused=fused)
    assert_same_sample(cpu, gpu)
    assert gpu.num_sampled_nodes.device.type == 'cpu'


@pytest.mark.parametrize('fused', [True, False])
@pytest.mark.parametrize('disjoint', [False, True])
def test_cuda_equals_cpu_many_scan_tiles(fused, disjoint):
    """Hops of ~10^6 slots: thousands of scan tiles, so each block scans many
    tiles and the look-back walks windows of 32 predecessors."""
    ei = ref.random_graph(200_000, 4_000_000, 3, 20, 100)
    colptr, row, perm = csc_from_coo(ei, 200_000)
    seed = torch.randperm(200_000, generator=torch.Generator().manual_seed(2))[:4096]
    cpu = neighbor_sample(colptr, row, perm, seed, [15, 10, 5], False, disjoint,
                          rng_seed=7)
    gpu = neighbor_sample(colptr.cuda(), row.cuda(), perm.cuda(), seed.cuda(),
                          [15, 10, 5], False, disjoint, rng_seed=7, fused=fused)
    assert cpu.num_sampled_edges[-1] > 500 * 1024  # hop 2 spans > 500 tiles
    assert_same_sample(cpu, gpu)


def test_cuda_empty_and_isolated():
    _, colptr, row, perm = graph()
    g = [t.cuda() for t in (colptr, row, perm)]
    out = neighbor_sample(*g, torch.empty(0, dtype=torch.long, device='cuda'),
                          [5, 5])
    assert out.node.numel() == 0 and out.num_sampled_nodes.tolist() == [0, 0, 0]
    out = neighbor_sample(*g, torch.tensor([2999], device='cuda'), [5, 5])
    assert out.node.tolist() == [2999] and out.edge.numel() == 0
    out = neighbor_sample(*g, torch.tensor([3], device='cuda'), [])
    assert out.node.tolist() == [3]


def test_cuda_uniform_subsets_chi_square():
    """20,000 disjoint copies of one seed draw independent 3-subsets of its
    8 in-edges in one launch; all 56 subsets are equally likely."""
    d, k, trials = 8, 3, 20000
    ei = torch.stack([torch.arange(1, d + 1), torch.zeros(d, dtype=torch.long)])
    colptr, row, perm = (t.cuda() for t in csc_from_coo(ei, d + 1))
    seed = torch.zeros(trials, dtype=torch.long, device='cuda')
    out = neighbor_sample(colptr, row, perm, seed, [k], disjoint=True,
                          rng_seed=3)
    edges = out.edge.view(trials, k).sort(dim=1).values.cpu()
    assert (edges[:, 1:] != edges[:, :-1]).all()
    code = (1 << edges).sum(dim=1)
    counts = torch.unique(code, return_counts=True)[1]
    assert counts.numel() == 56
    p = scipy_stats.chisquare(counts.tolist()).pvalue
    assert p > 1e-3, f'subset frequencies not uniform on the GPU (p={p:.2e})'


def test_cuda_bad_inputs():
    _, colptr, row, perm = (t.cuda() if torch.is_tensor(t) else t
                            for t in graph())
    with pytest.raises(RuntimeError, match="'seed' holds ids outside"):
        neighbor_sample(colptr, row, perm, torch.tensor([0, 5000], device='cuda'),
                        [3])
    with pytest.raises(RuntimeError, match="'seed' is on cpu"):
        neighbor_sample(colptr, row, perm, torch.tensor([0]), [3])
    with pytest.raises(RuntimeError, match=r"num_neighbors\[0\]"):
        neighbor_sample(colptr, row, perm, torch.tensor([0], device='cuda'), [-3])


def test_cuda_induced_equals_cpu():
    _, colptr, row, perm = graph()
    node = torch.randperm(3000, generator=torch.Generator().manual_seed(2))[:700]
    cpu = induced_subgraph(colptr, row, perm, node)
    gpu = induced_subgraph(colptr.cuda(), row.int().cuda(), perm.cuda(),
                           node.cuda())
    for a, b in zip(cpu, gpu):
        assert torch.equal(a, b.cpu())


def test_cuda_opcheck():
    _, colptr, row, perm = graph()
    args = [t.cuda() for t in (colptr, row, perm)]
    seed = torch.tensor([0, 5, 12], device='cuda')
    for fused in (True, False):
        torch.library.opcheck(
            torch.ops.fusesample.neighbor_sample.default,
            (*args, seed, [3, 2], False, False, 5, fused),
            test_utils=('test_schema', 'test_faketensor'))
    torch.library.opcheck(
        torch.ops.fusesample.neighbor_sample_async.default,
        (*args, seed, [3, 2], False, True, 5),
        test_utils=('test_schema', 'test_faketensor'))


@pytest.mark.parametrize('fanout,disjoint', [([15, 10, 5], False),
                                             ([10, 5], True)])
def test_cuda_async_buffers_and_meta(fanout, disjoint):
    """The async op's pinned meta, read after the stream passes it, holds the
    sizes, per-hop counts and error word of the synchronous op's output."""
    from pyg_fusesample.ops import neighbor_sample_async
    _, colptr, row, perm = graph()
    args = [t.cuda() for t in (colptr, row, perm)]
    seed = torch.randperm(3000)[:256]
    expected = neighbor_sample(colptr, row, perm, seed, fanout, False,
                               disjoint, 9)  # the CPU kernel: equal bitwise
    seed = seed.cuda()
    *buffers, meta = torch.ops.fusesample.neighbor_sample_async(
        *args, seed, fanout, False, disjoint, 9)
    assert meta.is_pinned()
    torch.cuda.synchronize()
    n, e = expected.node.numel(), expected.row.numel()
    hops = len(fanout)
    assert meta.tolist() == [n, e, *expected.num_sampled_nodes.tolist(),
                             *expected.num_sampled_edges.tolist(), 0]
    for got, want in zip(buffers, expected[:5]):
        if want is not None:
            assert torch.equal(got[:want.numel()].cpu(), want)
    assert_same_sample(expected, neighbor_sample_async(
        *args, seed, fanout, False, disjoint, 9).wait())
    assert len(meta) == 4 + 2 * hops


@pytest.mark.slow
def test_cuda_more_than_2_31_edges():
    """A graph with 1.5 * 2^31 edges, made on the device: in-edge lists that
    start past 2^31 sample correctly (int64 colptr, int32 row)."""
    num_nodes = 2048
    deg = 768 * num_nodes          # 1,572,864 in-edges per node
    total = deg * num_nodes
    assert total > 1.5 * 2**31 - 1
    free = torch.cuda.mem_get_info()[0]
    if free < total * 4 * 1.5:
        pytest.skip('needs ~20 GB of free GPU memory')
    colptr = torch.arange(num_nodes + 1, device='cuda') * deg
    # in-edge e of any target comes from node e % num_nodes; deg is a
    # multiple of num_nodes, so every list is the same repeated pattern
    row = (torch.arange(deg, device='cuda', dtype=torch.int32)
           % num_nodes).repeat(num_nodes)
    seed = torch.tensor([num_nodes - 1, num_nodes - 2], device='cuda')
    for fused in (True, False):
        out = neighbor_sample(colptr, row, None, seed, [20, 3], rng_seed=1,
                              fused=fused)
        edge, node = out.edge.cpu(), out.node.cpu()
        assert int(edge[:40].min()) > 2**31  # the seeds' lists lie past 2^31
        assert colptr[num_nodes - 2] > 2**31
        # each edge id decodes to (source = e % N, target = e // deg)
        assert torch.equal(node[out.row.cpu()], edge % num_nodes)
        assert torch.equal(node[out.col.cpu()], edge // deg)
    del row


def test_loader_on_gpu_data_equals_cpu():
    from torch_geometric.data import Data
    from pyg_fusesample import FusedNeighborLoader
    ei, *_ = graph(num_nodes=2000, num_edges=30000)
    data = Data(x=torch.randn(2000, 16), y=torch.randint(0, 5, (2000, )),
                edge_index=ei, edge_attr=torch.randn(ei.size(1), 3))
    kw = dict(num_neighbors=[10, 5], batch_size=128, shuffle=True, seed=7)
    cpu_batches = list(FusedNeighborLoader(data, **kw))
    gpu_batches = list(FusedNeighborLoader(data.to('cuda'), **kw))
    assert len(cpu_batches) == len(gpu_batches)
    for a, b in zip(cpu_batches, gpu_batches):
        assert b.x.is_cuda and b.edge_index.is_cuda
        for key in ('x', 'y', 'edge_index', 'edge_attr', 'n_id', 'e_id'):
            assert torch.equal(a[key], b[key].cpu()), key
        assert a.num_sampled_nodes == b.num_sampled_nodes
        assert a.num_sampled_edges == b.num_sampled_edges


def test_prefetch_equals_plain():
    """Prefetching (the GPU default) hands out the batches of the plain path,
    also after an epoch abandoned half-way."""
    from pyg_fusesample import FusedNeighborLoader
    data = gpu_loader_data(labels=True)
    kw = dict(num_neighbors=[10, 5], batch_size=100, shuffle=True, seed=3)
    plain = FusedNeighborLoader(data, prefetch=False, **kw)
    ahead = FusedNeighborLoader(data, **kw)
    assert ahead.prefetch and not plain.prefetch
    for epoch in range(3):
        if epoch == 1:  # abandoned after one batch, on both
            next(iter(plain)), next(iter(ahead))
        a, b = list(plain), list(ahead)
        assert len(a) == len(plain)
        assert_same_batches(a, b)
    with pytest.warns(UserWarning, match='per-hop'):
        FusedNeighborLoader(data, prefetch=True, fused=False, **kw)
    assert not FusedNeighborLoader(data, fused=False, **kw).prefetch
    with pytest.raises(ValueError, match='prefetch'):  # (Data.cpu is in place)
        FusedNeighborLoader(data.cpu(), prefetch=True, **kw)


def python_thread(native: bool) -> dict:
    """Loader arguments that keep prefetch='thread' on the native thread, or
    (a sampler-output transform, which it does not assemble) on the Python
    thread."""
    return {} if native else dict(transform_sampler_output=lambda out: out)


def stop_and_check(it, native: bool):
    """Stops a prefetch='thread' iterator; its thread ends."""
    it.close()
    if not native:
        assert not it.thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize('native', [True, False])
@pytest.mark.parametrize('fused', [True, False])
def test_prefetch_thread_equals_plain(fused, native):
    """prefetch='thread' (batches assembled on a background thread, native or
    Python) hands out the batches of the plain path, in order, also after an
    epoch abandoned half-way, whose thread then stops; with per-hop sampling
    too (no warning: the hops' waits block only the thread)."""
    import warnings
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader.fused_neighbor_loader import _NativeIterator
    data = gpu_loader_data(labels=True)
    kw = dict(num_neighbors=[10, 5], batch_size=100, shuffle=True, seed=3,
              fused=fused, **python_thread(native))
    plain = FusedNeighborLoader(data, prefetch=False, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        threaded = FusedNeighborLoader(data, prefetch='thread', **kw)
    assert threaded.prefetch == 'thread'
    for epoch in range(3):
        if epoch == 1:  # abandoned after one batch, on both
            next(iter(plain))
            it = iter(threaded)
            assert isinstance(it, _NativeIterator) == native
            assert len(it) == len(plain)
            next(it)
            thread = getattr(it, 'thread', None)
            del it  # the iterator's collection stops its thread
            if thread is not None:
                thread.join(timeout=60)  # (minutes under compute-sanitizer)
                assert not thread.is_alive()
        a, b = list(plain), list(threaded)
        assert len(a) == len(plain)
        assert_same_batches(a, b, ('x', 'y', 'edge_index', 'n_id', 'e_id',
                                   'input_id'))


@pytest.mark.parametrize('native', [True, False])
def test_prefetch_thread_on_the_consumers_stream(native):
    """The thread enqueues a batch's work on the stream that was current when
    iteration started (a side stream here), and close() stops it early."""
    from pyg_fusesample import FusedNeighborLoader
    data = gpu_loader_data()
    kw = dict(num_neighbors=[10, 5], batch_size=100, seed=5,
              **python_thread(native))
    expected = list(FusedNeighborLoader(data, prefetch=False, **kw))
    # (built outside the side stream: the constructor checks the seeds' range,
    # a host sync that would wait for the kernel below)
    loader = FusedNeighborLoader(data, prefetch='thread', **kw)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # a long kernel on the side stream holds back the thread's first
        # read-back of sampled sizes, and so the first batch
        torch.cuda._sleep(1_000_000_000)  # >= 0.5 s at <= 2 GHz
        it = iter(loader)
        start = time.perf_counter()
        first = next(it)
        assert time.perf_counter() - start > 0.3
        got = [first] + list(it)
    torch.cuda.current_stream().wait_stream(side)
    assert_same_batches(expected, got, ('x', 'edge_index'))
    it = iter(FusedNeighborLoader(data, prefetch='thread', **kw))
    next(it)
    stop_and_check(it, native)


def test_native_thread_batches_taken_on_another_stream():
    """Batches of the native thread taken on another stream than its own
    (which then waits for them and owns their memory) are the plain ones,
    disjoint and with edge attributes too."""
    from pyg_fusesample import FusedNeighborLoader
    data = gpu_loader_data(labels=True)
    data.edge_attr = torch.randn(data.num_edges, 3, device='cuda')
    kw = dict(num_neighbors=[10, 5], batch_size=100, seed=2, disjoint=True)
    expected = list(FusedNeighborLoader(data, prefetch=False, **kw))
    it = iter(FusedNeighborLoader(data, prefetch='thread', **kw))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = [b.clone() for b in it]
    torch.cuda.synchronize()
    assert_same_batches(expected, got, ('x', 'y', 'edge_index', 'edge_attr',
                                        'n_id', 'e_id', 'batch'))


def test_native_thread_without_lookahead_equals_plain(monkeypatch):
    """The native thread sampling each batch in turn (no fused sampling
    enqueued a batch ahead) hands out the plain batches too."""
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader.fused_neighbor_loader import _NativeIterator
    monkeypatch.setattr(_NativeIterator, 'lookahead', False)
    data = gpu_loader_data(labels=True)
    kw = dict(num_neighbors=[10, 5, 3], batch_size=100, shuffle=True, seed=4)
    plain = FusedNeighborLoader(data, prefetch=False, **kw)
    native = FusedNeighborLoader(data, prefetch='thread', **kw)
    for _ in range(2):
        assert_same_batches(list(plain), list(native))


def test_native_thread_next_releases_the_gil():
    """While next() waits for the native thread, other Python threads run:
    the wait does not hold the GIL."""
    import threading
    from pyg_fusesample import FusedNeighborLoader
    data = gpu_loader_data()
    loader = FusedNeighborLoader(data, [10, 5], batch_size=100,
                                 prefetch='thread')
    torch.cuda._sleep(1_000_000_000)  # the first batch waits >= 0.5 s
    it = iter(loader)
    ticks = []

    def count(seconds=0.3):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            ticks.append(1)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.perf_counter()
    next(it)
    assert time.perf_counter() - start > 0.3
    counter.join()
    # Holding the GIL, next() would have kept the counter out until its
    # 0.3 s were over.
    assert len(ticks) > 10_000
    it.close()


@pytest.mark.parametrize('native', [True, False])
def test_prefetch_thread_raises_in_order(native):
    """An error while a batch is assembled reaches the consumer at that
    batch, after the batches before it."""
    from pyg_fusesample import FusedNeighborLoader
    data = gpu_loader_data()
    calls = []

    def transform(batch):
        calls.append(1)
        if len(calls) == 3:
            raise KeyError('third batch')
        return batch

    it = iter(FusedNeighborLoader(data, num_neighbors=[5], batch_size=100,
                                  prefetch='thread', transform=transform,
                                  **python_thread(native)))
    next(it), next(it)
    with pytest.raises(KeyError, match='third batch'):
        next(it)
    if not native:  # (the native thread runs no Python: transforms run in
        # the consumer, and the epoch goes on)
        with pytest.raises(StopIteration):
            next(it)


def test_async_sample_collected_on_another_stream():
    """A sample enqueued on a side stream and collected on the default one
    (wait() then marks its buffers as used by the collecting stream) equals
    the CPU kernel's."""
    from pyg_fusesample.ops import neighbor_sample_async
    _, colptr, row, perm = graph()
    args = [t.cuda() for t in (colptr, row, perm)]
    seed = torch.randperm(3000)[:300]
    expected = neighbor_sample(colptr, row, perm, seed, [10, 5], rng_seed=4)
    seed = seed.cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        pending = neighbor_sample_async(*args, seed, [10, 5], rng_seed=4)
    out = pending.wait()  # on the default stream
    assert_same_sample(expected, out)
    torch.cuda.synchronize()


def test_prefetch_does_not_wait_for_the_stream():
    """With prefetch, handing out a batch never waits for work queued before
    it: next() returns while a long kernel is still running. Without it the
    sampler's read-back waits for that kernel."""
    from pyg_fusesample import FusedNeighborLoader
    data = gpu_loader_data()
    stream = torch.cuda.current_stream()
    for prefetch in (True, False):
        it = iter(FusedNeighborLoader(data, num_neighbors=[10, 5],
                                      batch_size=100, prefetch=prefetch))
        next(it)
        torch.cuda.synchronize()
        torch.cuda._sleep(2_000_000_000)  # >= 1 s: 2e9 cycles at <= 2 GHz
        start = time.perf_counter()
        batch = next(it)
        waited = time.perf_counter() - start
        if prefetch:
            assert waited < 0.5 and not stream.query()
        else:
            assert waited > 0.5
        torch.cuda.synchronize()
        assert batch.edge_index.size(1) > 0


def test_loader_gpu_input_ids_match_cpu():
    """GPU seeds are selected without a pageable copy; the batch still carries
    the same input_id / n_id[:batch_size] as on the CPU, for a CPU mask, a
    GPU mask and an index list."""
    from torch_geometric.data import Data
    from pyg_fusesample import FusedNeighborLoader
    ei, *_ = graph(num_nodes=2000, num_edges=30000)
    mask = torch.rand(2000, generator=torch.Generator().manual_seed(0)) < 0.3
    data = Data(x=torch.randn(2000, 4), edge_index=ei)
    gdata = copy.copy(data).to('cuda')  # Data.to() is in place
    for nodes, gnodes in [(mask, mask), (mask, mask.cuda()),
                          (mask.nonzero().view(-1), mask.nonzero().view(-1))]:
        kw = dict(num_neighbors=[4], batch_size=64, shuffle=True, seed=1)
        for a, b in zip(FusedNeighborLoader(data, input_nodes=nodes, **kw),
                        FusedNeighborLoader(gdata, input_nodes=gnodes, **kw)):
            assert torch.equal(a.input_id, b.input_id.cpu())
            assert torch.equal(a.n_id, b.n_id.cpu())


def hetero_gpu_data():
    from pyg_fusesample.datasets import mag_like
    return mag_like(scale=0.002, seed=0).to('cuda')


def test_hetero_prefetch_does_not_wait_for_the_stream():
    """A heterogeneous batch carries its per-type sizes from the sampler, so
    with prefetch handing it out never waits for work queued before it (a
    blocking host-to-device copy while splitting it by type once did)."""
    from pyg_fusesample import FusedNeighborLoader
    data = hetero_gpu_data()
    stream = torch.cuda.current_stream()
    it = iter(FusedNeighborLoader(data, num_neighbors=[10, 5], batch_size=64,
                                  input_nodes=('paper', None)))
    next(it)
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # >= 1 s: 2e9 cycles at <= 2 GHz
    start = time.perf_counter()
    batch = next(it)
    assert time.perf_counter() - start < 0.5 and not stream.query()
    torch.cuda.synchronize()
    assert batch['paper'].batch_size == 64


def test_link_prefetch_does_not_wait_for_the_stream():
    """Link batches are built one ahead on a side stream: their host reads
    (unique of the seeds, the sampled sizes) do not wait for the consumer's
    stream. (With fused=False: a cooperative launch needs its whole grid
    resident, so the fused kernel itself waits for a kernel that holds an
    SM -- here a 1 s sleep; between a training step's short kernels it
    finds room.)"""
    from pyg_fusesample import FusedLinkNeighborLoader
    data = gpu_loader_data()
    stream = torch.cuda.current_stream()
    it = iter(FusedLinkNeighborLoader(
        data, num_neighbors=[10, 5], batch_size=64, neg_sampling='binary',
        edge_label_index=data.edge_index[:, :1000].cpu(), fused=False))
    next(it)
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)
    start = time.perf_counter()
    batch = next(it)
    assert time.perf_counter() - start < 0.5 and not stream.query()
    torch.cuda.synchronize()
    assert batch.edge_label.is_cuda and batch.edge_label.numel() == 128
