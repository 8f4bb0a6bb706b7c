"""fusesample::segment_aggregate / segment_aggregate_backward (the mini-batch
layers' aggregation): a plain PyTorch reference, gradients, CPU == CUDA,
opcheck, edge cases and malformed layouts."""
import pytest
import torch

import pyg_fusesample  # noqa: F401  (registers the ops)
from pyg_fusesample.ops.segment import segment_aggregate
from pyg_fusesample.sparse.target_layout import target_layout

from conftest import devices

DEVICES = devices()

_ops = torch.ops.fusesample


def reference(edge_index, x, num_dst, reduce, value=None):
    r"""Per target, its in-edges' rows of x (times value), reduced; 0 when
    it has none."""
    src, dst = edge_index
    heads = 1 if value is None or value.dim() == 1 else value.size(1)
    out = x.new_zeros(num_dst, x.size(1))
    for i in range(num_dst):
        rows = x[src[dst == i]]
        if rows.numel() == 0:
            continue
        if value is not None:
            w = value[dst == i].view(rows.size(0), heads, 1)
            rows = (rows.view(rows.size(0), heads, -1) * w).view_as(rows)
        out[i] = {'sum': rows.sum(0), 'mean': rows.mean(0),
                  'max': rows.max(0).values}[reduce]
    return out


def graph(num_src=30, num_dst=20, num_edges=150, hub=True, seed=0,
          device='cpu'):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_src, (num_edges, ), generator=g)
    dst = torch.randint(0, num_dst - 2, (num_edges, ), generator=g)  # 2 isolated
    if hub:  # a hub target, duplicate edges and a self-loop
        src = torch.cat([src, torch.arange(num_src), torch.tensor([1, 1, 4])])
        dst = torch.cat([dst, torch.full((num_src, ), 3), torch.tensor([5, 5, 4])])
    return torch.stack([src, dst]).to(device)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('reduce', ['sum', 'mean', 'max'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize('width', [1, 6, 16, 40])
def test_matches_reference(device, reduce, dtype, width):
    ei = graph(device=device)
    x = torch.randn(30, width, dtype=dtype, device=device)
    layout = target_layout(ei, 30, 20, 'test')
    out = segment_aggregate(layout, x, reduce)
    expected = reference(ei.cpu(), x.cpu().double(), 20, reduce)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(out.cpu().double(), expected, atol=tol, rtol=tol)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('heads', [1, 4])
def test_weighted_matches_reference(device, heads):
    ei = graph(device=device)
    x = torch.randn(30, 8, dtype=torch.float64, device=device)
    value = torch.rand(ei.size(1), heads, dtype=torch.float64, device=device)
    value = value.squeeze(-1) if heads == 1 else value
    layout = target_layout(ei, 30, 20, 'test')
    out = segment_aggregate(layout, x, 'sum', layout.in_layout_order(value))
    torch.testing.assert_close(
        out.cpu(), reference(ei.cpu(), x.cpu(), 20, 'sum', value.cpu()))


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('reduce', ['sum', 'mean', 'max'])
def test_gradcheck(device, reduce):
    ei = graph(num_src=12, num_dst=9, num_edges=40, device=device)
    layout = target_layout(ei, 12, 9, 'test')
    # Distinct values: 'max' is differentiable away from ties.
    x = torch.randperm(12 * 5, dtype=torch.float64, device=device).view(12, 5)
    x.requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x: segment_aggregate(layout, x, reduce), (x, ))


@pytest.mark.parametrize('device', DEVICES)
def test_gradcheck_values(device):
    ei = graph(num_src=12, num_dst=9, num_edges=40, device=device)
    layout = target_layout(ei, 12, 9, 'test')
    x = torch.randn(12, 6, dtype=torch.float64, device=device,
                    requires_grad=True)
    value = torch.rand(layout.num_slots, 2, dtype=torch.float64,
                       device=device, requires_grad=True)
    for reduce in ('sum', 'mean'):
        assert torch.autograd.gradcheck(
            lambda x, v: segment_aggregate(layout, x, reduce, v), (x, value))


@pytest.mark.parametrize('device', DEVICES)
def test_backward_is_deterministic(device):
    ei = graph(num_src=50, num_dst=40, num_edges=2000, device=device)
    layout = target_layout(ei, 50, 40, 'test')
    x = torch.randn(50, 33, device=device, requires_grad=True)
    grads = []
    for _ in range(3):
        x.grad = None
        segment_aggregate(layout, x, 'mean').pow(2).sum().backward()
        grads.append(x.grad.clone())
    assert all(torch.equal(grads[0], g) for g in grads[1:])


@pytest.mark.cuda
def test_cuda_equals_cpu():
    ei = graph(num_src=400, num_dst=300, num_edges=5000)
    for dtype in (torch.float32, torch.float16):
        x = torch.randn(400, 100, dtype=dtype)
        for reduce in ('sum', 'mean', 'max'):
            a = segment_aggregate(target_layout(ei, 400, 300, 't'), x, reduce)
            b = segment_aggregate(target_layout(ei.cuda(), 400, 300, 't'),
                                  x.cuda(), reduce)
            torch.testing.assert_close(a, b.cpu(), atol=1e-2, rtol=1e-3)


@pytest.mark.cuda
@pytest.mark.parametrize('reduce', ['sum', 'mean', 'max'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64,
                                   torch.float16])
@pytest.mark.parametrize('width', [3, 16, 200])
@pytest.mark.parametrize('heads', [0, 1, 2])
def test_cuda_backward_equals_cpu(reduce, dtype, width, heads):
    # Hub sources (slots spanning many of the CUDA backward's chunks of 4
    # to 32 slots, one starting on a chunk boundary), sources without
    # slots, sources of one slot, a run ending exactly at a boundary.
    if reduce == 'max' and heads or width % 2 and heads == 2:
        pytest.skip('no slot weights with max; heads split the width')
    g = torch.Generator().manual_seed(width + heads)
    num_src, num_dst = 300, 200
    src = torch.cat([torch.full((32, ), 0), torch.full((1000, ), 7),
                     torch.randint(10, 250, (3000, ), generator=g),
                     torch.full((97, ), 299)])
    dst = torch.randint(0, num_dst, (src.numel(), ), generator=g)
    ei = torch.stack([src, dst])
    x = torch.randn(num_src, width, dtype=dtype, generator=g)
    grad = torch.randn(num_dst, width, dtype=dtype, generator=g)
    value = None if heads == 0 else torch.rand(
        (src.numel(), ) if heads == 1 else (src.numel(), heads), generator=g,
        dtype=dtype)
    grads = []
    for dev in ('cpu', 'cuda'):
        layout = target_layout(ei.to(dev), num_src, num_dst, 't')
        xd = x.to(dev, copy=True).requires_grad_()
        vd = None if value is None else \
            value.to(dev, copy=True).requires_grad_()
        out = segment_aggregate(layout, xd, reduce, vd)
        out.backward(grad.to(dev))
        grads.append(xd.grad.cpu())
    # (the hub's 1000 terms summed in another order: fp32 rounding of
    # ~1e-4, seen on an H200; float64 agrees to 1e-9)
    tol = {torch.float16: 5e-3, torch.float32: 1e-3,
           torch.float64: 1e-9}[dtype]
    torch.testing.assert_close(grads[1], grads[0], atol=tol, rtol=tol)
    assert not grads[1][[1, 2, 3, 4, 5, 6, 8, 9, 250]].any()


@pytest.mark.parametrize('device', DEVICES)
def test_empty(device):
    ei = torch.empty(2, 0, dtype=torch.long, device=device)
    x = torch.randn(4, 3, device=device, requires_grad=True)
    layout = target_layout(ei, 4, 5, 'test')
    for reduce in ('sum', 'mean', 'max'):
        out = segment_aggregate(layout, x, reduce)
        assert out.shape == (5, 3) and not out.any()
        out.sum().backward()
        assert not x.grad.any()
    out, arg = _ops.segment_aggregate(layout.ptr, layout.src, None,
                                      x.detach()[:, :0], 'max')
    assert out.shape == (5, 0)


def test_opcheck():
    ei = graph()
    layout = target_layout(ei, 30, 20, 'test')
    x = torch.randn(30, 8)
    for reduce, value in (('sum', torch.rand(layout.num_slots)),
                          ('mean', None), ('max', None)):
        torch.library.opcheck(_ops.segment_aggregate,
                              (layout.ptr, layout.src, value, x, reduce))
    out, arg = _ops.segment_aggregate(layout.ptr, layout.src, None, x, 'max')
    empty = torch.empty(0, dtype=torch.long)
    for reduce, value, winners in (('sum', torch.rand(layout.num_slots), empty),
                                   ('mean', None, empty), ('max', None, arg)):
        torch.library.opcheck(
            _ops.segment_aggregate_backward,
            (layout.ptr, layout.src, layout.dst, value, torch.randn_like(out),
             winners, 30, reduce))


@pytest.mark.parametrize('ptr, src, message', [
    ([0, 2, 1, 3], [0, 1, 2], "'ptr' gives row 1"),
    ([0, 2, 5], [0, 1, 2], "'ptr' must start at 0 and end at 3"),
    ([1, 2, 3], [0, 1, 2], "'ptr' must start at 0"),
    ([0, 1, 3], [0, 9, 2], "'src' holds id 9 outside \\[0, 4\\)"),
    ([0, 1, 3], [0, -1, 2], "'src' holds id -1"),
])
def test_bad_layouts_raise_on_cpu(ptr, src, message):
    with pytest.raises(RuntimeError, match=message):
        _ops.segment_aggregate(torch.tensor(ptr), torch.tensor(src), None,
                               torch.randn(4, 3), 'sum')


def test_backward_bad_source_raises_on_cpu():
    with pytest.raises(RuntimeError, match="'src' holds id 7 outside"):
        _ops.segment_aggregate_backward(
            torch.tensor([0, 1, 2]), torch.tensor([0, 7]), torch.tensor([0, 1]),
            None, torch.randn(2, 3), torch.empty(0, dtype=torch.long), 4, 'sum')


@pytest.mark.cuda
def test_bad_layouts_reported_on_cuda():
    word = _ops.sample_aggregate_error(torch.empty(0, device='cuda'))
    word.zero_()
    _ops.segment_aggregate(torch.tensor([0, 1, 3], device='cuda'),
                           torch.tensor([0, 9, 2], device='cuda'), None,
                           torch.randn(4, 3, device='cuda'), 'sum')
    assert word.tolist() == [2, 9]  # a source, id 9
    word.zero_()
    _ops.segment_aggregate(torch.tensor([0, 2, 9], device='cuda'),
                           torch.tensor([0, 1, 2], device='cuda'), None,
                           torch.randn(4, 3, device='cuda'), 'mean')
    assert word.tolist() == [3, 1]  # a pointer, row 1
    word.zero_()
    _ops.segment_aggregate_backward(
        torch.tensor([0, 1, 2], device='cuda'), torch.tensor([0, 7], device='cuda'),
        torch.tensor([0, 1], device='cuda'), None, torch.randn(2, 3, device='cuda'),
        torch.empty(0, dtype=torch.long, device='cuda'), 4, 'sum')
    assert word.tolist() == [2, 7]  # a source, id 7
    word.zero_()


@pytest.mark.parametrize('kwargs, message', [
    (dict(reduce='min'), "'reduce' must be"),
    (dict(x=torch.randn(4, 3).long()), "'x' must be float"),
    (dict(value=torch.rand(3)), "'max' takes no 'value'"),
    (dict(reduce='sum', value=torch.rand(2)), "'value' must have shape"),
    (dict(reduce='sum', value=torch.rand(3, 2)), "not a multiple of the 2"),
    (dict(src=torch.tensor([0., 1., 2.])), "'src' must be int64 or int32"),
])
def test_bad_arguments(kwargs, message):
    args = dict(ptr=torch.tensor([0, 1, 3]), src=torch.tensor([0, 1, 2]),
                value=None, x=torch.randn(4, 3), reduce='max')
    args.update(kwargs)
    with pytest.raises(RuntimeError, match=message):
        _ops.segment_aggregate(args['ptr'], args['src'], args['value'],
                               args['x'], args['reduce'])


def test_layout_rejects_out_of_range_edge_index():
    ei = torch.tensor([[0, 7], [1, 2]])
    with pytest.raises(ValueError, match=r"'edge_index\[0\]' holds ids"):
        target_layout(ei, 5, 5, 'SAGEConv')
    with pytest.raises(ValueError, match=r"'edge_index\[1\]' holds ids"):
        target_layout(torch.tensor([[0, 1], [1, 9]]), 5, 5, 'SAGEConv')


def test_opcheck_compile_ops():
    # The ops the layers call under torch.compile (nn/compiled_layout.py,
    # ops/segment.py): fake shapes, autograd registration, schema.
    from pyg_fusesample.nn.compiled_layout import batch_layout
    from pyg_fusesample.ops.segment import layout_aggregate
    ei = graph()
    torch.library.opcheck(batch_layout, (ei, 30, 20, 'test'))
    layout = target_layout(ei, 30, 20, 'test')
    x = torch.randn(30, 8, dtype=torch.float64, requires_grad=True)
    value = torch.rand(layout.num_slots, dtype=torch.float64,
                       requires_grad=True)
    for reduce, v in (('sum', value), ('mean', None), ('max', None)):
        torch.library.opcheck(layout_aggregate, (layout.ptr, layout.src,
                                                 layout.dst, v, x, reduce))


def test_layouts_do_not_keep_batches_alive():
    # The registry and the layout memo hold their keys weakly; a layout
    # memoised with views of its key would keep every batch alive.
    import gc

    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.nn import SAGEConv
    from pyg_fusesample.sparse import target_layout as layouts
    g = torch.Generator().manual_seed(0)
    data = Data(x=torch.randn(500, 8, generator=g),
                edge_index=torch.randint(0, 500, (2, 4000), generator=g),
                num_nodes=500)
    conv = SAGEConv(8, 4)
    before = len(layouts._batches), len(layouts._layouts)
    for batch in FusedNeighborLoader(data, num_neighbors=[5, 3],
                                     batch_size=50):
        conv(batch.x, batch.edge_index).sum().backward()
    del batch
    gc.collect()
    assert (len(layouts._batches), len(layouts._layouts)) == before


def test_checked_registration_of_foreign_batches():
    # A batch no fused loader made (here a copy, as .to(device) makes) is
    # checked once by a trimmed model and registered: its layers then sort
    # nothing. One that breaks the hop layout is not registered.
    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.sparse import target_layout as layouts
    g = torch.Generator().manual_seed(1)
    data = Data(x=torch.randn(800, 8, generator=g),
                edge_index=torch.randint(0, 800, (2, 8000), generator=g),
                num_nodes=800)
    batch = next(iter(FusedNeighborLoader(data, num_neighbors=[4, 3, 2],
                                          batch_size=16)))
    nodes, edges = batch.num_sampled_nodes, batch.num_sampled_edges
    copy = batch.edge_index.clone()
    assert layouts.batch_counts(copy) is None
    assert layouts.register_checked_batch(copy, nodes, edges)
    assert layouts.batch_counts(copy) is not None
    unsorted = batch.edge_index.clone()
    unsorted[1, [0, -1]] = unsorted[1, [-1, 0]]
    beyond_hop = batch.edge_index.clone()
    beyond_hop[0, 0] = batch.num_nodes - 1  # a hop-1 edge from the last hop
    wrong_counts = batch.edge_index.clone()
    for ei, e in ((unsorted, edges), (beyond_hop, edges),
                  (wrong_counts, edges[:-1] + [edges[-1] - 1])):
        assert not layouts.register_checked_batch(ei, nodes, e)
        assert layouts.batch_counts(ei) is None


def test_trimmed_hetero_batches_need_no_sort(monkeypatch):
    # A hetero batch's edge_index tensors are views of one buffer; the
    # prefixes trim_to_layer narrows them to are found by address and
    # stride (not through _base, which names the buffer): no layer sorts.
    import gc

    from torch_geometric.utils import trim_to_layer

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.datasets import get_dataset
    from pyg_fusesample.sparse import target_layout as layouts
    sorts = []
    monkeypatch.setattr(layouts, '_note_sort', sorts.append)
    data = get_dataset('mag', seed=0, scale=0.0005, features='all')
    loader = FusedNeighborLoader(data, num_neighbors=[4, 3, 2],
                                 input_nodes=('paper', None), batch_size=32)
    batch = next(iter(loader))
    x_dict, ei_dict = batch.x_dict, batch.edge_index_dict
    assert len({ei.untyped_storage().data_ptr()
                for ei in ei_dict.values() if ei.numel()}) == 1
    for layer in range(3):
        x_dict, ei_dict, _ = trim_to_layer(
            layer, batch.num_sampled_nodes_dict,
            batch.num_sampled_edges_dict, x_dict, ei_dict)
        for (s, _, d), ei in ei_dict.items():
            layouts.target_layout(ei, x_dict[s].size(0), x_dict[d].size(0),
                                  'test')
    assert not sorts
    before = len(layouts._by_address)
    del batch, x_dict, ei_dict, ei
    gc.collect()
    assert len(layouts._by_address) < before


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('shape', [(), (3, )])
@pytest.mark.parametrize('rows', [20, 30])  # (t past the targets, or not)
def test_index_targets_and_index_rows_are_index_select(device, shape, rows):
    # GAT's / GCN's per-slot gathers of node values: index_select forward;
    # backward sums repeated rows in a fixed order (index_targets over the
    # layout's own grouping by target, index_rows after a sort by row), the
    # sums equal to index_select's up to rounding and the same every run.
    from pyg_fusesample.ops.segment import index_rows, index_targets
    layout = target_layout(graph(device=device), 30, 20, 'test')
    t = torch.randn((rows, ) + shape, dtype=torch.float64, device=device,
                    requires_grad=True)
    g = torch.randn((layout.num_slots, ) + shape, dtype=torch.float64,
                    device=device)
    for gather, index in ((index_targets, layout), (index_rows, layout.dst),
                          (index_rows, layout.src)):
        if gather is index_rows and index is layout.src and rows < 30:
            continue  # (sources run to 30)
        runs = []
        for _ in range(2):
            out = gather(t, index)
            want = t.index_select(0, layout.dst if index is layout
                                  else index)
            torch.testing.assert_close(out, want)
            runs.append(torch.autograd.grad(out, t, g)[0])
        assert torch.equal(runs[0], runs[1])
        want_grad, = torch.autograd.grad(want, t, g)
        torch.testing.assert_close(runs[0], want_grad)
    assert torch.autograd.gradcheck(lambda x: index_targets(x, layout), t)


@pytest.mark.parametrize('device', DEVICES)
def test_index_targets_of_no_slots(device):
    from pyg_fusesample.ops.segment import index_targets
    layout = target_layout(torch.empty(2, 0, dtype=torch.long,
                                       device=device), 5, 4, 'test')
    t = torch.randn(5, 2, device=device, requires_grad=True)
    out = index_targets(t, layout)
    assert out.shape == (0, 2)
    out.sum().backward()
    assert t.grad.shape == (5, 2) and not t.grad.any()


# The grouping by source shared by a layout's backwards ####################

def _order_reference(src, num_src):
    slot = torch.sort(src.cpu(), stable=True).indices
    key = src.cpu()[slot]
    ptr = torch.searchsorted(key, torch.arange(num_src + 1))
    return key.int(), slot, ptr


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.int64, torch.int32])
def test_source_order_is_a_stable_sort(device, dtype):
    src = graph()[0].to(device, dtype)
    got = _ops.segment_source_order(src, 30)
    for a, b in zip(got, _order_reference(src, 30)):
        assert torch.equal(a.cpu(), b)
    empty = _ops.segment_source_order(src[:0], 4)
    assert [t.numel() for t in empty] == [0, 0, 5] and not empty[2].any()


def test_source_order_bad_source_raises_on_cpu():
    with pytest.raises(RuntimeError, match="'src' holds id 9 outside"):
        _ops.segment_source_order(torch.tensor([0, 9]), 4)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('reduce, heads', [('sum', 0), ('mean', 0),
                                           ('max', 0), ('sum', 2)])
def test_backward_with_the_order_equals_without(device, reduce, heads):
    layout = target_layout(graph(device=device), 30, 20, 'test')
    g = torch.Generator().manual_seed(1)
    grad = torch.randn(20, 8, generator=g).to(device)
    value = None if heads == 0 else \
        torch.rand(layout.num_slots, heads, generator=g).to(device)
    arg = _ops.segment_aggregate(layout.ptr, layout.src, None,
                                 torch.randn(30, 8).to(device), 'max')[1] \
        if reduce == 'max' else torch.empty(0, dtype=torch.long,
                                            device=device)
    args = (layout.ptr, layout.src, layout.dst, value, grad, arg, 30, reduce)
    order = _ops.segment_source_order(layout.src, 30)
    assert torch.equal(_ops.segment_aggregate_backward(*args, *order),
                       _ops.segment_aggregate_backward(*args))


def test_order_arguments_are_checked():
    layout = target_layout(graph(), 30, 20, 'test')
    key, slot, ptr = _ops.segment_source_order(layout.src, 30)
    args = (layout.ptr, layout.src, layout.dst, None, torch.randn(20, 3),
            torch.empty(0, dtype=torch.long), 30, 'sum')
    with pytest.raises(RuntimeError, match='go together'):
        _ops.segment_aggregate_backward(*args, key)
    with pytest.raises(RuntimeError, match='must be segment_source_order'):
        _ops.segment_aggregate_backward(*args, key, slot, ptr[:-1])
    with pytest.raises(RuntimeError, match="'order_key' must be Int"):
        _ops.segment_aggregate_backward(*args, key.long(), slot, ptr)


def test_opcheck_source_order():
    layout = target_layout(graph(), 30, 20, 'test')
    torch.library.opcheck(_ops.segment_source_order, (layout.src, 30))
    torch.library.opcheck(
        _ops.segment_aggregate_backward,
        (layout.ptr, layout.src, layout.dst, None, torch.randn(20, 4),
         torch.empty(0, dtype=torch.long), 30, 'mean',
         *_ops.segment_source_order(layout.src, 30)))


@pytest.mark.parametrize('device', DEVICES)
def test_a_gat_layers_backwards_share_one_order(device):
    # The aggregation and the gather of per-source scores over one layout:
    # gradients equal index_select's and a plain aggregation's; on a GPU
    # the layout made its grouping by source once (no order on the CPU).
    from pyg_fusesample.ops.segment import index_sources
    layout = target_layout(graph(device=device), 30, 20, 'test')
    x = torch.randn(30, 8, dtype=torch.float64, device=device,
                    requires_grad=True)
    a = torch.randn(30, 2, dtype=torch.float64, device=device,
                    requires_grad=True)
    alpha = index_sources(a, layout).sigmoid()
    out = segment_aggregate(layout, x, 'sum', alpha)
    gx, ga = torch.autograd.grad(out.square().sum(), (x, a))
    x2, a2 = (t.detach().requires_grad_() for t in (x, a))
    ref = reference(layout_edge_index(layout), x2, 20, 'sum',
                    a2.index_select(0, layout.src).sigmoid())
    rx, ra = torch.autograd.grad(ref.square().sum(), (x2, a2))
    torch.testing.assert_close(gx, rx)
    torch.testing.assert_close(ga, ra)
    assert ('source_order' in layout._cache) == (device == 'cuda')


def layout_edge_index(layout):
    return torch.stack([layout.src.long(), layout.dst.long()])


@pytest.mark.cuda
def test_an_order_of_another_src_reads_nothing_out_of_bounds():
    # A wrong order (another src's, or garbage) gives wrong sums, reported
    # where a value is out of range; the kernels read nothing out of bounds.
    word = _ops.sample_aggregate_error(torch.empty(0, device='cuda'))
    word.zero_()
    layout = target_layout(graph(device='cuda'), 30, 20, 'test')
    E = layout.num_slots
    args = (layout.ptr, layout.src, layout.dst, None,
            torch.randn(20, 8, device='cuda'),
            torch.empty(0, dtype=torch.long, device='cuda'), 30, 'sum')
    other = _ops.segment_source_order(layout.src.flip(0), 30)
    _ops.segment_aggregate_backward(*args, *other)
    torch.cuda.synchronize()
    garbage = (torch.full((E, ), 1000, dtype=torch.int32, device='cuda'),
               torch.full((E, ), 10 ** 9, device='cuda'),
               torch.full((31, ), 10 ** 9, device='cuda'))
    out = _ops.segment_aggregate_backward(*args, *garbage)
    torch.cuda.synchronize()
    assert word[0].item() != 0 and out.shape == (30, 8)
    word.zero_()


def test_no_order_is_made_for_traced_tensors():
    # Under torch.compile the backward is traced with fake (functional)
    # tensors, where is_compiling() can be false: a CUDA fake tensor must
    # not reach the sort (a traced sort went into compiled graphs on an
    # H200 and failed there), a real one on the CPU needs none.
    from torch._subclasses.fake_tensor import FakeTensorMode
    from pyg_fusesample.sparse.target_layout import TargetLayout
    with FakeTensorMode():
        src = torch.zeros(4, dtype=torch.long, device='cuda')
        ptr = torch.zeros(3, dtype=torch.long, device='cuda')
    assert src.is_cuda
    assert TargetLayout(ptr, src, src, 5).source_order() is None
    cpu = torch.zeros(4, dtype=torch.long)
    assert TargetLayout(cpu[:3], cpu, cpu, 5).source_order() is None


def hop_batch(device='cpu', seed=0):
    r"""A batch as a fused loader makes it: 3 hops of edges grouped by
    target, hop h's sources among the nodes of hops <= h, its targets in
    hop h - 1 (sorted); a hub source read by every hop. Returns
    (edge_index, nodes per hop, edges per hop)."""
    g = torch.Generator().manual_seed(seed)
    nodes, edges, src, dst = [4, 9, 14, 20], [], [], []
    starts = [0, 4, 13, 27, 47]
    for h in range(1, 4):
        tgt = torch.randint(starts[h - 1], starts[h], (25, ), generator=g)
        s = torch.randint(0, starts[h + 1], (25, ), generator=g)
        s[:3] = 2  # the hub
        tgt = tgt.sort().values
        src.append(s), dst.append(tgt), edges.append(25)
    ei = torch.stack([torch.cat(src), torch.cat(dst)]).to(device)
    return ei, nodes, edges


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('reduce', ['sum', 'mean', 'max'])
def test_backward_with_a_longer_srcs_order(device, reduce):
    # The order of the whole edge list serves each prefix (sources and
    # slots past the prefix's skipped): the prefix's own gradient up to
    # rounding, sources without slots in the prefix get zeros.
    ei, _, _ = hop_batch(device)
    E, N = 50, 27  # hops 1-2: sources < 27, targets < 13
    full = _ops.segment_source_order(ei[0], 47)
    layout = target_layout(ei[:, :E], N, 13, 'test')
    grad = torch.randn(13, 8, dtype=torch.float64, device=device)
    arg = _ops.segment_aggregate(layout.ptr, layout.src, None,
                                 torch.randn(N, 8, dtype=torch.float64,
                                             device=device), 'max')[1] \
        if reduce == 'max' else torch.empty(0, dtype=torch.long,
                                            device=device)
    args = (layout.ptr, layout.src, layout.dst, None, grad, arg, N, reduce)
    word = _ops.sample_aggregate_error(torch.empty(0, device=device)) \
        if device == 'cuda' else None
    if word is not None:
        word.zero_()
    torch.testing.assert_close(_ops.segment_aggregate_backward(*args, *full),
                               _ops.segment_aggregate_backward(*args))
    if word is not None:  # (skipped slots and sources are no errors)
        assert word[0].item() == 0


def test_an_order_shorter_than_src_is_refused():
    ei, _, _ = hop_batch()
    short = _ops.segment_source_order(ei[0, :40], 47)
    layout = target_layout(ei[:, :50], 27, 13, 'test')
    args = (layout.ptr, layout.src, layout.dst, None, torch.randn(13, 3),
            torch.empty(0, dtype=torch.long), 27, 'sum')
    with pytest.raises(RuntimeError, match='must be segment_source_order'):
        _ops.segment_aggregate_backward(*args, *short)
    key, slot, ptr = _ops.segment_source_order(ei[0], 47)
    with pytest.raises(RuntimeError, match='must be segment_source_order'):
        _ops.segment_aggregate_backward(*args, key, slot[:-1], ptr)


@pytest.mark.parametrize('device', DEVICES)
def test_a_batchs_trimmed_layers_share_one_order(device):
    # A fused loader's batch and its trim_to_layer prefixes: on a GPU every
    # layout takes the one grouping of the batch's edges (one sort per
    # batch), and the gradients are the reference's.
    from pyg_fusesample.sparse.target_layout import register_batch
    ei, nodes, edges = hop_batch(device)
    register_batch(ei, nodes, edges)
    starts = [0, 4, 13, 27, 47]
    orders = []
    for hops in (3, 2, 1):
        E, N, T = 25 * hops, starts[hops + 1], starts[hops]
        layout = target_layout(ei.narrow(1, 0, E), N, T, 'test')
        x = torch.randn(N, 6, dtype=torch.float64, device=device,
                        requires_grad=True)
        w = torch.randn(T, 6, dtype=torch.float64, device=device)
        gx, = torch.autograd.grad(
            (segment_aggregate(layout, x, 'mean') * w).sum(), x)
        x2 = x.detach().requires_grad_()
        rx, = torch.autograd.grad(
            (reference(ei[:, :E], x2, T, 'mean') * w).sum(), x2)
        torch.testing.assert_close(gx, rx)
        orders.append(layout.source_order())
    if device == 'cuda':
        assert all(o is orders[0] for o in orders)
        assert orders[0][0].numel() == 75
    else:
        assert orders == [None] * 3


def test_a_batchs_order_is_made_once_and_only_for_its_rows():
    # (the CPU can run the sort: the layouts only ask for it on a GPU)
    from pyg_fusesample.sparse.target_layout import (_batch_entry,
                                                     _batch_order,
                                                     register_batch)
    ei, nodes, edges = hop_batch()
    register_batch(ei, nodes, edges)
    entry = _batch_entry(ei.narrow(1, 0, 50))
    order = _batch_order(entry, 27)
    assert order is _batch_order(entry, 47)  # once per batch
    for a, b in zip(order, _order_reference(ei[0], 47)):
        assert torch.equal(a, b)
    assert _batch_order(entry, 48) is None  # more rows than the batch's nodes
    # a layout's active rows keep the batch's order
    layout = target_layout(ei.narrow(1, 0, 50), 27, 20, 'test')
    assert layout.active == 13
    assert layout.active_rows().batch_order is layout.batch_order
