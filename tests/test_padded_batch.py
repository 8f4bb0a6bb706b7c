"""Padded batches (sparse/padded_batch.py, fusesample::pad_edge_index): a
model's seeds' outputs and every gradient on a padded fused loader batch
equal those on the batch itself (SAGE, GAT, GCN, RGCN, to_hetero SAGE; our
layers and PyG's), pad edges touch pad rows only, the op against a plain
reference, capacities, and bad inputs."""

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn.models import GAT, GCN, GraphSAGE

from pyg_fusesample.bench.graph_runs import dataset_kwargs
from pyg_fusesample.bench.layer_runner import RGCN, HeteroSAGE
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.loader import FusedNeighborLoader
from pyg_fusesample.nn import to_fused
from pyg_fusesample.sparse.padded_batch import (BatchCapacity, PaddedBatch,
                                                batch_counts_of)

from conftest import devices

DEVICES = devices()
_ops = torch.ops.fusesample


def _cum(counts):
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return out


def reference_pad(edge_index, edges, padded_edges, src, padded_src, dst,
                  padded_dst):
    r"""The padded edges, slot by slot, from the contract."""
    L = len(edges) - 1
    out = torch.empty(2, padded_edges[-1], dtype=edge_index.dtype)

    def move(u, cum, padded):
        h = max(i for i in range(len(cum) - 1) if cum[i] <= u)
        return u - cum[h] + padded[h]
    for b in range(L):
        for k in range(padded_edges[b + 1] - padded_edges[b]):
            p = padded_edges[b] + k
            if k < edges[b + 1] - edges[b]:
                u, v = edge_index[:, edges[b] + k].tolist()
                out[:, p] = torch.tensor([move(u, src, padded_src),
                                          move(v, dst, padded_dst)])
            else:  # pad edge i of K: spread over the hops' pad rows
                i = k - (edges[b + 1] - edges[b])
                K = padded_edges[b + 1] - padded_edges[b] - (
                    edges[b + 1] - edges[b])
                s_real = src[b + 2] - src[b + 1]
                s_pad = padded_src[b + 2] - padded_src[b + 1] - s_real
                d_real = dst[b + 1] - dst[b]
                d_pad = padded_dst[b + 1] - padded_dst[b] - d_real
                out[:, p] = torch.tensor([
                    padded_src[b + 1] + s_real + i % s_pad,
                    padded_dst[b] + d_real + i * d_pad // K])
    return out


def hop_batch(nodes, edges, seed=0):
    r"""A random edge_index with a fused batch's hop layout."""
    g = torch.Generator().manual_seed(seed)
    cum = _cum(nodes)
    parts = []
    for b, e in enumerate(edges):
        dst = torch.randint(cum[b], cum[b + 1], (e, ), generator=g).sort()[0]
        src = torch.randint(0, cum[b + 2], (e, ), generator=g)
        parts.append(torch.stack([src, dst]))
    return torch.cat(parts, 1)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.int64, torch.int32])
def test_pad_edge_index_matches_reference(device, dtype):
    nodes, edges = [4, 9, 17, 20], [10, 25, 31]
    cap_n, cap_e = [5, 12, 20, 21], [16, 25, 40]
    ei = hop_batch(nodes, edges).to(dtype)
    args = (_cum(edges), _cum(cap_e), _cum(nodes), _cum(cap_n), _cum(nodes),
            _cum(cap_n))
    out = torch.full((2, sum(cap_e)), -7, dtype=dtype, device=device)
    _ops.pad_edge_index(ei.to(device), *args, out)
    assert torch.equal(out.cpu(), reference_pad(ei, *args))
    # targets stay grouped (sorted), pad edges read and write pad rows
    assert bool((out[1, 1:] >= out[1, :-1]).all())


@pytest.mark.parametrize('device', DEVICES)
def test_pad_edge_index_two_types(device):
    # sources of one type, targets of another (a hetero edge type)
    src_nodes, dst_nodes, edges = [0, 6, 8], [3, 5, 0], [7, 12]
    g = torch.Generator().manual_seed(1)
    ei = torch.cat([torch.stack([torch.randint(0, 6, (7, ), generator=g),
                                 torch.randint(0, 3, (7, ), generator=g).sort()[0]]),
                    torch.stack([torch.randint(0, 14, (12, ), generator=g),
                                 torch.randint(3, 8, (12, ), generator=g).sort()[0]])], 1)
    args = (_cum(edges), _cum([9, 12]), _cum(src_nodes), _cum([1, 7, 9]),
            _cum(dst_nodes), _cum([4, 6, 1]))
    out = torch.empty(2, 21, dtype=torch.long, device=device)
    _ops.pad_edge_index(ei.to(device), *args, out)
    assert torch.equal(out.cpu(), reference_pad(ei, *args))


@pytest.mark.parametrize('change, message', [
    (dict(cap_n=[4, 12, 20, 21]), "gives hop 0 4 slots for its 4 rows and a pad row"),
    (dict(cap_e=[9, 25, 40]), "gives hop 0 9 slots for its 10 edges"),
    (dict(edges=[10, 25, 30]), "'edges' ends at 65 but 'edge_index' has 66"),
    (dict(out=torch.empty(2, 5, dtype=torch.long)), "'out' must be a contiguous"),
    (dict(out=torch.empty(2, 81, dtype=torch.int32)), "'out' must have edge_index's dtype"),
])
def test_pad_edge_index_bad_arguments(change, message):
    nodes, edges = [4, 9, 17, 20], [10, 25, 31]
    ei = hop_batch(nodes, edges)
    cap_n = change.get('cap_n', [5, 12, 20, 21])
    cap_e = change.get('cap_e', [16, 25, 40])
    edges = change.get('edges', edges)
    out = change.get('out', torch.empty(2, sum(cap_e), dtype=torch.long))
    with pytest.raises(RuntimeError, match=message):
        _ops.pad_edge_index(ei, _cum(edges), _cum(cap_e), _cum(nodes),
                            _cum(cap_n), _cum(nodes), _cum(cap_n), out)


def test_pad_edge_index_bad_ids_raise_on_cpu():
    nodes, edges = [4, 9, 17], [10, 25]
    ei = hop_batch(nodes, edges)
    ei[1, 3] = 7  # a target outside hop 0
    with pytest.raises(RuntimeError, match="holds id 7 outside the hops"):
        _ops.pad_edge_index(ei, _cum(edges), _cum(edges), _cum(nodes),
                            _cum([5, 10, 18]), _cum(nodes), _cum([5, 10, 18]),
                            torch.empty(2, 35, dtype=torch.long))


@pytest.mark.cuda
def test_pad_edge_index_bad_ids_reported_on_cuda():
    nodes, edges = [4, 9, 17], [10, 25]
    ei = hop_batch(nodes, edges)
    ei[0, 12] = 99
    word = _ops.sample_aggregate_error(torch.empty(0, device='cuda'))
    word.zero_()
    out = torch.empty(2, 35, dtype=torch.long, device='cuda')
    _ops.pad_edge_index(ei.cuda(), _cum(edges), _cum(edges), _cum(nodes),
                        _cum([5, 10, 18]), _cum(nodes), _cum([5, 10, 18]), out)
    assert word.tolist() == [2, 99]
    word.zero_()
    # hop 2's first pad edge stands in for it: pad rows of hops 2 and 1
    assert out[:, 12].tolist() == [32, 14]


# loader batches ##############################################################

def _loader(name, fanout, batch_size=24, seed=0):
    data = get_dataset(name, seed=0, scale=0.001, **dataset_kwargs(name))
    if name == 'mag':
        seeds = ('paper', data['paper'].train_mask)
    else:
        seeds = None
    return data, FusedNeighborLoader(data, num_neighbors=fanout,
                                     batch_size=batch_size, input_nodes=seeds,
                                     shuffle=True, seed=seed)


def _homogeneous_mag():
    data = get_dataset('mag', seed=0, scale=0.001, **dataset_kwargs('mag'))
    hom = data.to_homogeneous(node_attrs=['x'])
    hom.y = torch.randint(0, 5, (hom.num_nodes, ))
    return hom, FusedNeighborLoader(hom, num_neighbors=[4, 3], batch_size=24,
                                    input_nodes=hom.node_type == 0,
                                    shuffle=True, seed=0)


def _loss_and_grads(model, call):
    model.zero_grad()
    out, y = call()
    loss = F.cross_entropy(out, y)
    loss.backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()
                          if p.grad is not None]


def _assert_same(model, batch, padded, call):
    o1, g1 = _loss_and_grads(model, lambda: call(batch))
    o2, g2 = _loss_and_grads(model, lambda: call(padded))
    torch.testing.assert_close(o1, o2)
    assert len(g1) == len(g2) > 0
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


def _homogeneous_call(model, b):
    out = model(b.x, b.edge_index,
                num_sampled_nodes_per_hop=b.num_sampled_nodes,
                num_sampled_edges_per_hop=b.num_sampled_edges)
    return out[:b.batch_size], b.y[:b.batch_size]


@pytest.mark.parametrize('fused', [True, False])
@pytest.mark.parametrize('make', [
    lambda: GraphSAGE(100, 16, 3, 47),
    lambda: GraphSAGE(100, 16, 3, 47, aggr='max'),
    lambda: GAT(100, 16, 3, 47, heads=2),
    lambda: GCN(100, 16, 3, 47),
], ids=['sage', 'sage-max', 'gat', 'gcn'])
def test_homogeneous_models_equal_on_padded_batches(make, fused):
    torch.manual_seed(0)
    model = make()
    model = to_fused(model) if fused else model
    _, loader = _loader('products', [4, 3, 2])
    batches = [b for _, b in zip(range(3), loader)]
    padded = PaddedBatch(batches[0], BatchCapacity.of(batches[0], 1.0))
    for b in batches:
        if not padded.fits(b):
            continue
        padded.fill(b)
        _assert_same(model, b, padded.batch,
                     lambda x: _homogeneous_call(model, x))


def test_rgcn_equals_on_padded_batches():
    hom, loader = _homogeneous_mag()
    torch.manual_seed(0)
    model = to_fused(RGCN(128, 16, 5, int(hom.edge_type.max()) + 1))
    b = next(iter(loader))
    assert 'edge_type' in b
    padded = PaddedBatch(b, BatchCapacity.of(b, 0.3))

    def call(x):
        out = model(x.x, x.edge_index, x.edge_type,
                    num_sampled_nodes_per_hop=x.num_sampled_nodes,
                    num_sampled_edges_per_hop=x.num_sampled_edges)
        return out[:x.batch_size], x.y[:x.batch_size]
    _assert_same(model, b, padded.batch, call)


@pytest.mark.parametrize('fused', [True, False])
def test_hetero_sage_equals_on_padded_batches(fused):
    data, loader = _loader('mag', [4, 3])
    b = next(iter(loader))
    torch.manual_seed(0)
    model = HeteroSAGE(data.metadata(), 16, 349, 2)
    with torch.no_grad():
        model(b.x_dict, b.edge_index_dict)
    model = to_fused(model) if fused else model
    padded = PaddedBatch(b, BatchCapacity.of(b, 0.5))
    # every type padded, with a pad row even where a hop has no nodes
    nodes, edges = batch_counts_of(padded.batch)
    assert all(all(c >= 1 for c in counts) for counts in nodes.values())

    def call(x):
        out = model(x.x_dict, x.edge_index_dict,
                    num_sampled_nodes_per_hop=x.num_sampled_nodes_dict,
                    num_sampled_edges_per_hop=x.num_sampled_edges_dict)
        n = x['paper'].batch_size
        return out['paper'][:n], x['paper'].y[:n]
    _assert_same(model, b, padded.batch, call)


def test_padded_batch_layout():
    _, loader = _loader('products', [4, 3, 2])
    b = next(iter(loader))
    cap = BatchCapacity.of(b, 0.25)
    padded = PaddedBatch(b, cap).batch
    assert padded.num_sampled_nodes == list(cap.nodes[None])
    assert padded.num_sampled_edges == list(cap.edges[None])
    assert padded.num_nodes == sum(cap.nodes[None]) == padded.x.size(0)
    assert padded.edge_index.size(1) == sum(cap.edges[None])
    assert padded.batch_size == b.batch_size
    assert torch.equal(padded.input_id, b.input_id)
    # real rows in their hop blocks, pad edges only between pad rows
    real, pcum = _cum(b.num_sampled_nodes), _cum(cap.nodes[None])
    is_real = torch.zeros(padded.num_nodes, dtype=torch.bool)
    for h in range(len(real) - 1):
        n = real[h + 1] - real[h]
        assert torch.equal(padded.n_id[pcum[h]:pcum[h] + n],
                           b.n_id[real[h]:real[h] + n])
        is_real[pcum[h]:pcum[h] + n] = True
    src, dst = padded.edge_index
    assert bool((is_real[src] == is_real[dst]).all())
    assert int(is_real[dst].sum()) == b.num_edges
    # the real edges are the batch's, in the padded rows' ids
    n_id = padded.n_id
    got = torch.stack([n_id[src], n_id[dst]])[:, is_real[dst]]
    want = torch.stack([b.n_id[b.edge_index[0]], b.n_id[b.edge_index[1]]])
    assert torch.equal(got, want)


def test_capacity_fits_and_grows():
    _, loader = _loader('products', [4, 3, 2])
    a, b = [x for _, x in zip(range(2), loader)]
    cap = BatchCapacity.of(a, 0.0)
    assert cap.holds(a)
    grown = BatchCapacity.of(b, 0.0, at_least=cap)
    assert grown.holds(a) and grown.holds(b)
    assert all(g >= c for g, c in zip(grown.nodes[None], cap.nodes[None]))
    padded = PaddedBatch(a, grown)
    short = next(iter(FusedNeighborLoader(
        get_dataset('products', seed=0, scale=0.001,
                    **dataset_kwargs('products')),
        num_neighbors=[4, 3, 2], batch_size=5)))
    assert not padded.same_fixed(short) and not padded.fits(short)
    with pytest.raises(ValueError, match="does not fit"):
        padded.fill(short)
    with pytest.raises(ValueError, match="does not fit the capacity"):
        PaddedBatch(b, cap if not cap.holds(b) else BatchCapacity(
            {None: (1, 1, 1, 1)}, {None: (1, 1, 1)}))


def test_not_a_fused_batch():
    from torch_geometric.data import Data
    with pytest.raises(ValueError, match="has no 'num_sampled_nodes'"):
        BatchCapacity.of(Data(x=torch.randn(3, 2),
                              edge_index=torch.tensor([[0], [1]])))


def test_attrs_pads_only_what_is_named():
    # attrs: the tensors the step reads; the others are left out (reading
    # one fails loudly rather than giving an earlier batch's values)
    _, loader = _loader('products', [4, 3, 2])
    a, b = [x for _, x in zip(range(2), loader)]
    padded = PaddedBatch(a, BatchCapacity.of(a, 1.0), attrs=['x', 'y'])
    keys = set(padded.batch.keys())
    assert {'x', 'y', 'edge_index', 'batch_size', 'num_sampled_nodes',
            'num_sampled_edges'} <= keys
    assert not keys & {'n_id', 'e_id', 'train_mask', 'input_id'}
    torch.manual_seed(0)
    model = to_fused(GraphSAGE(100, 16, 3, 47))
    for batch in (a, b):
        if padded.fits(batch):
            padded.fill(batch)
            _assert_same(model, batch, padded.batch,
                         lambda x: _homogeneous_call(model, x))
    data, loader = _loader('mag', [4, 3])
    c = next(iter(loader))
    hetero = PaddedBatch(c, BatchCapacity.of(c, 0.5), attrs=['x'])
    assert 'x' in hetero.batch['author'] and 'n_id' not in hetero.batch['author']
    assert 'e_id' not in hetero.batch['paper', 'cites', 'paper']


def test_link_and_disjoint_batches():
    # A link batch's edge_label_index reads hop-0 rows, which keep their
    # ids; a disjoint batch's `batch` is a node attribute like any other.
    from pyg_fusesample import FusedLinkNeighborLoader
    data = get_dataset('products', seed=0, scale=0.001,
                       **dataset_kwargs('products'))
    link = next(iter(FusedLinkNeighborLoader(
        data, num_neighbors=[3, 2], edge_label_index=data.edge_index[:, :64],
        batch_size=16, neg_sampling_ratio=1.0)))
    padded = PaddedBatch(link, BatchCapacity.of(link, 0.5)).batch
    assert torch.equal(padded.edge_label_index, link.edge_label_index)
    torch.manual_seed(0)
    model = to_fused(GraphSAGE(100, 16, 2, 8))

    def call(b):
        h = model(b.x, b.edge_index,
                  num_sampled_nodes_per_hop=b.num_sampled_nodes,
                  num_sampled_edges_per_hop=b.num_sampled_edges)
        src, dst = b.edge_label_index
        return (h[src] * h[dst]).sum(-1, keepdim=True), \
            b.edge_label.long()
    o1, _ = call(link)
    o2, _ = call(padded)
    torch.testing.assert_close(o1, o2)
    disjoint = next(iter(FusedNeighborLoader(data, num_neighbors=[3, 2],
                                             batch_size=16, disjoint=True)))
    padded = PaddedBatch(disjoint, BatchCapacity.of(disjoint, 0.5)).batch
    cum = _cum(disjoint.num_sampled_nodes)
    pcum = _cum(padded.num_sampled_nodes)
    for h in range(len(cum) - 1):
        n = cum[h + 1] - cum[h]
        assert torch.equal(padded.batch[pcum[h]:pcum[h] + n],
                           disjoint.batch[cum[h]:cum[h + 1]])


def test_fill_refuses_rows_of_another_shape():
    # a batch whose features are narrower than the padded batch's would be
    # broadcast by a copy: refused before anything is written
    _, loader = _loader('products', [4, 3, 2])
    a, b = [x for _, x in zip(range(2), loader)]
    padded = PaddedBatch(a, BatchCapacity.of(a, 1.0), attrs=['x', 'y'])
    before = padded.batch.x.clone()
    b.x = b.x[:, :1]
    with pytest.raises(ValueError, match=r"rows of shape \[1\] where the "
                       r"padded batch's have \[100\]"):
        padded.fill(b)
    assert torch.equal(padded.batch.x, before)


def test_fill_copies_strided_and_cast_tensors_by_views():
    # tensors one copy launch cannot take (strided rows, another dtype) are
    # copied hop by hop through views: the same padded batch; and a batch
    # refused for a later tensor's rows has nothing written, those included
    _, loader = _loader('products', [4, 3, 2])
    a, b = [x for _, x in zip(range(2), loader)]
    want = PaddedBatch(a, BatchCapacity.of(a, 1.0), attrs=['x', 'y'])
    want.fill(b)
    got = PaddedBatch(a, BatchCapacity.of(a, 1.0), attrs=['x', 'y'])
    before = got.batch.x.clone()
    odd = b.clone()
    odd.x = b.x.t().contiguous().t()  # (column-major: not contiguous)
    odd.y = b.y.to(torch.int32)
    assert not odd.x.is_contiguous()
    narrow = odd.clone()
    narrow.y = narrow.y.view(-1, 1).expand(-1, 2)
    with pytest.raises(ValueError, match=r"rows of shape \[2\]"):
        got.fill(narrow)
    assert torch.equal(got.batch.x, before)
    got.fill(odd)
    for key in ('x', 'y', 'edge_index'):
        assert torch.equal(got.batch[key], want.batch[key]), key
