"""FusedLinkNeighborLoader against PyG's LinkNeighborLoader on Data and
HeteroData (two node types and one): the batch layout of every negative
sampling mode, edge_label_index / src_index / dst_pos_index / dst_neg_index
semantics (mapped back to global ids), equality with PyG where nothing is
random, disjoint subtrees, repeatability, weighted negatives, bad inputs."""
import math
import warnings

import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample import FusedLinkNeighborLoader
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import LinkNeighborLoader
from torch_geometric.sampler import NegativeSampling


def pyg_loader(*args, **kwargs):
    # PyG warns that its torch_sparse backend (no pyg-lib) is deprecated.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return LinkNeighborLoader(*args, **kwargs)


# Graphs #####################################################################

def unique_edges(g, num_src, num_dst, m):
    src = torch.randint(num_src, (m, ), generator=g)
    dst = torch.randint(num_dst, (m, ), generator=g)
    keys = torch.unique(src * num_dst + dst)
    keys = keys[torch.randperm(keys.numel(), generator=g)]
    return torch.stack([keys // num_dst, keys % num_dst])


def homo_graph(seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = unique_edges(g, 60, 60, 300)
    return Data(x=torch.randn(60, 4, generator=g),
                y=torch.randint(3, (60, ), generator=g), edge_index=ei,
                edge_attr=torch.randn(ei.size(1), 2, generator=g))


def hetero_graph(seed=0):
    """users and items (two node types) with a user-user relation."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data['user'].x = torch.randn(40, 4, generator=g)
    data['item'].x = torch.randn(25, 3, generator=g)
    data['item'].y = torch.randint(2, (25, ), generator=g)
    buys = unique_edges(g, 40, 25, 150)
    data['user', 'buys', 'item'].edge_index = buys
    data['user', 'buys', 'item'].edge_attr = torch.randn(
        buys.size(1), 2, generator=g)
    data['item', 'rev_buys', 'user'].edge_index = buys.flip(0)
    data['user', 'follows', 'user'].edge_index = unique_edges(g, 40, 40, 100)
    return data


def one_type_graph(seed=0):
    """One node type, two relations."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data['paper'].x = torch.randn(50, 4, generator=g)
    data['paper', 'cites', 'paper'].edge_index = unique_edges(g, 50, 50, 200)
    data['paper', 'refs', 'paper'].edge_index = unique_edges(g, 50, 50, 80)
    return data


GRAPHS = {
    'homo': (homo_graph, None),
    'hetero-two-types': (hetero_graph, ('user', 'buys', 'item')),
    'hetero-one-type': (one_type_graph, ('paper', 'cites', 'paper')),
}


def setup(kind, num_label_edges=30):
    """The graph, its seed edge type (None: homogeneous), the seed edges
    (a slice of the graph's edges), and the loader's edge_label_index."""
    make, et = GRAPHS[kind]
    data = make()
    store = data if et is None else data[et]
    seeds = store.edge_index[:, :num_label_edges]
    return data, et, seeds, (seeds if et is None else (et, seeds))


def num_nodes_of(data, et):
    if et is None:
        return data.num_nodes, data.num_nodes
    return data[et[0]].num_nodes, data[et[-1]].num_nodes


def n_ids(batch, et):
    """n_id of the source and destination node types of the seed edges."""
    if et is None:
        return batch.n_id, batch.n_id
    return batch[et[0]].n_id, batch[et[-1]].n_id


def label_store(batch, et):
    return batch if et is None else batch[et]


NEG_MODES = {
    'none': dict(),
    'binary': dict(neg_sampling='binary'),
    'binary-ratio-2.5': dict(neg_sampling_ratio=2.5),
    'binary-dict-2.5': dict(neg_sampling=dict(mode='binary', amount=2.5)),
    'triplet': dict(neg_sampling='triplet'),
    'triplet-3': dict(neg_sampling=NegativeSampling('triplet', amount=3)),
}


def amount(mode):
    return {'none': 0, 'binary': 1, 'binary-ratio-2.5': 2.5,
            'binary-dict-2.5': 2.5, 'triplet': 1, 'triplet-3': 3}[mode]


# 1. Layout: the same attributes, shapes and dtypes as PyG's #################

@pytest.mark.parametrize('kind', list(GRAPHS))
@pytest.mark.parametrize('mode,with_label', [
    (mode, label) for mode in NEG_MODES for label in (False, True)
    # PyG rejects 'edge_label' with triplet negatives (see
    # test_triplet_with_edge_label_raises)
    if not (label and mode.startswith('triplet'))])
def test_layout_matches_pyg(kind, mode, with_label):
    data, et, seeds, eli = setup(kind)
    kwargs = dict(num_neighbors=[3, 2], edge_label_index=eli, batch_size=8,
                  **NEG_MODES[mode])
    if with_label:
        kwargs['edge_label'] = torch.arange(seeds.size(1)) % 3
    ours = list(FusedLinkNeighborLoader(data, seed=0, **kwargs))
    theirs = list(pyg_loader(data, **kwargs))
    assert len(ours) == len(theirs) == math.ceil(seeds.size(1) / 8)
    for a, b in zip(ours, theirs):
        assert type(a) is type(b)
        stores = ([(a, b)] if et is None else
                  [(a[k], b[k]) for k in b.node_types + b.edge_types])
        if et is not None:
            assert set(a.node_types) == set(b.node_types)
            assert set(a.edge_types) == set(b.edge_types)
        for sa, sb in stores:
            extra = set(sa.keys()) - set(sb.keys())
            assert set(sb.keys()) <= set(sa.keys())
            assert extra <= {'num_sampled_nodes', 'num_sampled_edges'}, extra
            for key in ('input_id', 'edge_label_index', 'edge_label',
                        'src_index', 'dst_pos_index', 'dst_neg_index'):
                if key in sb:
                    assert sa[key].shape == sb[key].shape, key
                    assert sa[key].dtype == sb[key].dtype, key
            for key in sb.keys():
                if isinstance(sb[key], torch.Tensor):
                    assert sa[key].dtype == sb[key].dtype, key
        assert torch.equal(label_store(a, et).input_id,
                           label_store(b, et).input_id)
        if 'edge_label' in label_store(b, et):
            assert torch.equal(label_store(a, et).edge_label,
                               label_store(b, et).edge_label)


# 2. edge_label_index and the triplet indices, mapped back to global ids ######

def check_binary(batch, data, et, seeds, labels, ratio):
    store = label_store(batch, et)
    input_id = store.input_id
    p = input_id.numel()
    n = math.ceil(p * ratio)
    eli = store.edge_label_index
    assert eli.shape == (2, p + n)
    src_nid, dst_nid = n_ids(batch, et)
    glob = torch.stack([src_nid[eli[0]], dst_nid[eli[1]]])
    # the seed edges first, in input order, then negatives within range
    assert torch.equal(glob[:, :p], seeds[:, input_id])
    num_src, num_dst = num_nodes_of(data, et)
    assert bool(((glob[0, p:] >= 0) & (glob[0, p:] < num_src)).all())
    assert bool(((glob[1, p:] >= 0) & (glob[1, p:] < num_dst)).all())
    if ratio or labels is not None:
        pos = torch.ones(p) if labels is None else labels[input_id]
        if ratio and labels is not None and labels.min() == 0:
            pos = pos + 1  # PyG shifts labels so 0 means negative
        exp = torch.cat([pos, pos.new_zeros(n)])
        assert torch.equal(store.edge_label, exp)
    # every endpoint is a seed node: a hop-0 node of its type
    if et is None:
        assert eli.max() < batch.num_sampled_nodes[0]
    else:
        assert eli[0].max() < batch[et[0]].num_sampled_nodes[0]
        assert eli[1].max() < batch[et[-1]].num_sampled_nodes[0]


def check_triplet(batch, data, et, seeds, amount, disjoint):
    store = label_store(batch, et)
    input_id = store.input_id
    p = input_id.numel()
    src_store = batch if et is None else batch[et[0]]
    dst_store = batch if et is None else batch[et[-1]]
    src_nid, dst_nid = n_ids(batch, et)
    assert torch.equal(src_nid[src_store.src_index], seeds[0, input_id])
    assert torch.equal(dst_nid[dst_store.dst_pos_index], seeds[1, input_id])
    neg = dst_store.dst_neg_index
    assert neg.shape == ((p, ) if amount == 1 else (p, amount))
    assert neg.min() >= 0 and neg.max() < dst_nid.numel()
    num_dst = num_nodes_of(data, et)[1]
    assert dst_nid[neg].max() < num_dst
    nsn = (batch.num_sampled_nodes if et is None else
           dst_store.num_sampled_nodes)
    assert neg.max() < nsn[0]  # negatives are seeds
    if disjoint:
        same = et is None or et[0] == et[-1]
        assert torch.equal(src_store.src_index, torch.arange(p))
        off = p if same else 0
        assert torch.equal(dst_store.dst_pos_index, torch.arange(off, off + p))
        start = 2 * p if same else p
        exp = torch.arange(start, start + p * amount).view(-1, p).t()
        assert torch.equal(neg, exp.squeeze(-1))


@pytest.mark.parametrize('kind', list(GRAPHS))
@pytest.mark.parametrize('mode', ['none', 'binary', 'binary-ratio-2.5'])
@pytest.mark.parametrize('with_label', [False, True])
@pytest.mark.parametrize('disjoint', [False, True])
def test_binary_semantics(kind, mode, with_label, disjoint):
    data, et, seeds, eli = setup(kind)
    labels = (torch.arange(seeds.size(1)) % 3) if with_label else None
    loader = FusedLinkNeighborLoader(
        data, [3, 2], edge_label_index=eli, edge_label=labels, batch_size=8,
        shuffle=True, seed=2, disjoint=disjoint, **NEG_MODES[mode])
    batches = list(loader)
    ids = torch.cat([label_store(b, et).input_id for b in batches])
    assert sorted(ids.tolist()) == list(range(seeds.size(1)))
    for batch in batches:
        check_binary(batch, data, et, seeds, labels, amount(mode))
        check_subgraph(batch, data, et)
        if disjoint:
            check_disjoint_binary(batch, et)


@pytest.mark.parametrize('kind', list(GRAPHS))
@pytest.mark.parametrize('mode', ['triplet', 'triplet-3'])
@pytest.mark.parametrize('disjoint', [False, True])
def test_triplet_semantics(kind, mode, disjoint):
    data, et, seeds, eli = setup(kind)
    loader = FusedLinkNeighborLoader(
        data, [3, 2], edge_label_index=eli, batch_size=8, shuffle=True,
        seed=3, disjoint=disjoint, **NEG_MODES[mode])
    for batch in loader:
        check_triplet(batch, data, et, seeds, amount(mode), disjoint)
        check_subgraph(batch, data, et)
        if disjoint:
            p = label_store(batch, et).input_id.numel()
            stores = [batch] if et is None else batch.node_stores
            for s in stores:
                assert s.batch.min() >= 0 and s.batch.max() < p


def check_subgraph(batch, data, et):
    """The sampled subgraph is valid: edges exist with their e_id, every
    attribute sliced, n_id unique per type (unless disjoint), the per-hop
    counts sum to the sizes."""
    if et is None:
        pairs = [(batch, data, batch, batch)]
        node_pairs = [(batch, data)]
    else:
        pairs = [(batch[k], data[k], batch[k[0]], batch[k[-1]])
                 for k in data.edge_types]
        node_pairs = [(batch[k], data[k]) for k in data.node_types]
    for es, ds, ss, ts in pairs:
        glob = torch.stack([ss.n_id[es.edge_index[0]],
                            ts.n_id[es.edge_index[1]]])
        assert torch.equal(ds.edge_index[:, es.e_id], glob)
        assert sum(es.num_sampled_edges) == es.edge_index.size(1)
        if 'edge_attr' in ds:
            assert torch.equal(es.edge_attr, ds.edge_attr[es.e_id])
    for ns, ds in node_pairs:
        assert sum(ns.num_sampled_nodes) == ns.n_id.numel()
        if 'batch' not in ns:
            assert ns.n_id.unique().numel() == ns.n_id.numel()
        for key in ('x', 'y'):
            if key in ds:
                assert torch.equal(ns[key], ds[key][ns.n_id])


def check_disjoint_binary(batch, et):
    """Seed edge i's endpoints (and its negatives' subtrees) carry batch
    i mod num_pos, seeds first; edges stay within subtrees."""
    store = label_store(batch, et)
    p = store.input_id.numel()
    eli = store.edge_label_index
    m = eli.size(1)
    if et is None:
        assert torch.equal(eli, torch.arange(2 * m).view(2, -1))
        assert torch.equal(batch.batch[:2 * m], torch.arange(2 * m) % p)
        row, col = batch.edge_index
        assert torch.equal(batch.batch[row], batch.batch[col])
        return
    if et[0] == et[-1]:
        assert torch.equal(eli, torch.arange(2 * m).view(2, -1))
        assert torch.equal(batch[et[0]].batch[:2 * m], torch.arange(2 * m) % p)
    else:
        assert torch.equal(eli, torch.arange(m).repeat(2, 1))
        # pyg-lib's numbering: the seeds of the second type continue the
        # first's subtree ids, then PyG takes them mod num_pos
        assert torch.equal(batch[et[0]].batch[:m], torch.arange(m) % p)
        assert torch.equal(batch[et[-1]].batch[:m], torch.arange(m, 2 * m) % p)
    for k in batch.edge_types:
        row, col = batch[k].edge_index
        assert torch.equal(batch[k[0]].batch[row], batch[k[-1]].batch[col])


# 3. Equal to PyG where nothing is random #####################################

@pytest.mark.parametrize('kind', list(GRAPHS))
def test_full_neighbourhood_matches_pyg(kind):
    """-1 fan-outs and no negatives: the same nodes and edges per type and
    the same labelled edges as PyG's loader."""
    data, et, seeds, eli = setup(kind)
    kwargs = dict(num_neighbors=[-1, -1], edge_label_index=eli, batch_size=10)
    for a, b in zip(FusedLinkNeighborLoader(data, **kwargs),
                    pyg_loader(data, **kwargs)):
        if et is None:
            stores, edge_stores = [(a, b)], [(a, b, a, a, b, b)]
        else:
            stores = [(a[k], b[k]) for k in data.node_types]
            edge_stores = [(a[k], b[k], a[k[0]], a[k[-1]], b[k[0]], b[k[-1]])
                           for k in data.edge_types]
        for sa, sb in stores:
            assert set(sa.n_id.tolist()) == set(sb.n_id.tolist())
            assert sa.n_id.numel() == sb.n_id.numel()
        for ea, eb, sa, ta, sb, tb in edge_stores:
            pa = set(zip(sa.n_id[ea.edge_index[0]].tolist(),
                         ta.n_id[ea.edge_index[1]].tolist()))
            pb = set(zip(sb.n_id[eb.edge_index[0]].tolist(),
                         tb.n_id[eb.edge_index[1]].tolist()))
            assert pa == pb
            assert sorted(ea.e_id.tolist()) == sorted(eb.e_id.tolist())
        la, lb = label_store(a, et), label_store(b, et)
        assert torch.equal(la.input_id, lb.input_id)
        sa_n, da_n = n_ids(a, et)
        sb_n, db_n = n_ids(b, et)
        ga = torch.stack([sa_n[la.edge_label_index[0]],
                          da_n[la.edge_label_index[1]]])
        gb = torch.stack([sb_n[lb.edge_label_index[0]],
                          db_n[lb.edge_label_index[1]]])
        assert torch.equal(ga, gb)


# 4. Repeatability and negatives #############################################

def assert_batches_equal(a, b):
    for sa, sb in zip(a.stores, b.stores):
        assert sorted(sa.keys()) == sorted(sb.keys())
        for key in sa.keys():
            if isinstance(sa[key], torch.Tensor):
                assert torch.equal(sa[key], sb[key]), key
            else:
                assert sa[key] == sb[key], key


@pytest.mark.parametrize('kind', list(GRAPHS))
@pytest.mark.parametrize('mode', ['binary', 'triplet-3'])
def test_seed_repeatability(kind, mode):
    data, et, seeds, eli = setup(kind)

    def epoch(**kwargs):
        kwargs = {'shuffle': True, **NEG_MODES[mode], **kwargs}
        return list(FusedLinkNeighborLoader(
            data, [3, 2], edge_label_index=eli, batch_size=8, **kwargs))

    def negatives(batches):
        out = []
        for b in batches:
            s = label_store(b, et)
            if 'edge_label_index' in s:
                src, dst = n_ids(b, et)
                p = s.input_id.numel()
                out.append(torch.stack([src[s.edge_label_index[0, p:]],
                                        dst[s.edge_label_index[1, p:]]]))
            else:
                dst = b if et is None else b[et[-1]]
                out.append(dst.n_id[dst.dst_neg_index])
        return out

    a, b, c = epoch(seed=5), epoch(seed=5), epoch(seed=6)
    for x, y in zip(a, b):
        assert_batches_equal(x, y)
    # another seed: other negatives, even for the same seed edges
    same_order = [epoch(seed=s, shuffle=False) for s in (5, 6)]
    na, nb = negatives(same_order[0]), negatives(same_order[1])
    assert any(not torch.equal(x, y) for x, y in zip(na, nb))
    assert any(not torch.equal(label_store(x, et).input_id,
                               label_store(y, et).input_id)
               for x, y in zip(a, c))
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    for x, y in zip(epoch(generator=g1), epoch(generator=g2)):
        assert_batches_equal(x, y)
    torch.manual_seed(4)
    d = epoch()
    torch.manual_seed(4)
    for x, y in zip(d, epoch()):
        assert_batches_equal(x, y)


def test_num_workers_repeatable():
    data, et, seeds, eli = setup('hetero-two-types')
    kwargs = dict(num_neighbors=[3, 2], edge_label_index=eli, batch_size=8,
                  neg_sampling='binary', seed=1, shuffle=True)
    a = list(FusedLinkNeighborLoader(data, **kwargs))
    b = list(FusedLinkNeighborLoader(data, num_workers=2, **kwargs))
    assert len(a) == len(b)
    # Each worker's batches draw their own keys: batch 0 (worker 0) and
    # batch 1 (worker 1) do not repeat each other's negatives.
    s0, s1 = label_store(b[0], et), label_store(b[1], et)
    neg0 = b[0][et[-1]].n_id[s0.edge_label_index[1, 8:]]
    neg1 = b[1][et[-1]].n_id[s1.edge_label_index[1, 8:]]
    assert not torch.equal(neg0, neg1), 'workers drew the same negatives'
    for x, y in zip(a, b):
        assert_batches_equal(x, y)


@pytest.mark.parametrize('kind', ['homo', 'hetero-two-types'])
def test_weighted_negatives(kind):
    """src_weight/dst_weight: negatives only where the weight is positive."""
    data, et, seeds, eli = setup(kind)
    num_src, num_dst = num_nodes_of(data, et)
    src_w = torch.zeros(num_src)
    src_w[[1, 4]] = 1.0
    dst_w = torch.zeros(num_dst)
    dst_w[[2, 7, 9]] = torch.tensor([1.0, 2.0, 3.0])
    for mode in ('binary', 'triplet'):
        neg = NegativeSampling(mode, amount=2, src_weight=src_w,
                               dst_weight=dst_w)
        for batch in FusedLinkNeighborLoader(data, [2], edge_label_index=eli,
                                             batch_size=10, seed=0,
                                             neg_sampling=neg):
            s = label_store(batch, et)
            src, dst = n_ids(batch, et)
            p = s.input_id.numel()
            if mode == 'binary':
                neg = s.edge_label_index[:, p:]
                assert set(src[neg[0]].tolist()) <= {1, 4}
                assert set(dst[neg[1]].tolist()) <= {2, 7, 9}
            else:
                d = batch if et is None else batch[et[-1]]
                assert set(dst[d.dst_neg_index].view(-1).tolist()) <= {2, 7, 9}


# 5. Bad inputs ##############################################################

def raised(make, *args, **kwargs):
    try:
        next(iter(make(*args, **kwargs)))
    except Exception as error:  # noqa: BLE001
        return error
    return None


def test_edge_type_not_in_graph_raises_like_pyg():
    data = hetero_graph()
    kwargs = dict(num_neighbors=[2], batch_size=4,
                  edge_label_index=('user', 'likes', 'item'))
    ours = raised(FusedLinkNeighborLoader, data, **kwargs)
    theirs = raised(pyg_loader, data, **kwargs)
    assert theirs is not None and ours is not None
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


@pytest.mark.parametrize('kind', list(GRAPHS))
def test_triplet_with_edge_label_raises(kind):
    data, et, seeds, eli = setup(kind)
    kwargs = dict(num_neighbors=[2], edge_label_index=eli, batch_size=4,
                  edge_label=torch.ones(seeds.size(1)), neg_sampling='triplet')
    for make in (FusedLinkNeighborLoader, pyg_loader):
        with pytest.raises(ValueError, match="'edge_label' needs to be "
                                             "undefined for 'triplet'"):
            make(data, **kwargs)


@pytest.mark.parametrize('kind', list(GRAPHS))
@pytest.mark.parametrize('end', [0, 1])
def test_seed_edges_out_of_range_raise(kind, end):
    """A seed edge whose endpoint is not a node of its type is an error (as
    in PyG, where it raises an IndexError), never another node."""
    data, et, seeds, _ = setup(kind)
    bad = seeds[:, :4].clone()
    bad[end, 1] = num_nodes_of(data, et)[end]
    eli = bad if et is None else (et, bad)
    with pytest.raises((IndexError, ValueError, RuntimeError)):
        next(iter(FusedLinkNeighborLoader(data, [2], edge_label_index=eli,
                                          batch_size=4)))


def test_link_loader_checks_temporal_and_weighted_arguments():
    data, et, seeds, eli = setup('homo')
    with pytest.raises(ValueError, match="'edge_label_time' is set while"):
        FusedLinkNeighborLoader(data, [2], edge_label_index=eli,
                                edge_label_time=torch.zeros(seeds.size(1)))
    with pytest.raises(ValueError, match="'time_attr' 'time' is not an"):
        FusedLinkNeighborLoader(data, [2], edge_label_index=eli,
                                edge_label_time=torch.zeros(seeds.size(1)),
                                time_attr='time')
    with pytest.raises(ValueError, match="'weight_attr' 'nope' is not an"):
        FusedLinkNeighborLoader(data, [2], edge_label_index=eli,
                                weight_attr='nope')


@pytest.mark.cuda
@pytest.mark.parametrize('kind', list(GRAPHS))
def test_prefetch_on_side_stream_gives_the_same_batches(kind):
    data, et, seeds, eli = setup(kind, num_label_edges=60)
    data = data.to('cuda')
    kwargs = dict(num_neighbors=[3, 2], edge_label_index=eli, batch_size=8,
                  neg_sampling='binary', seed=3, shuffle=True)
    plain = FusedLinkNeighborLoader(data, prefetch=False, **kwargs)
    ahead = FusedLinkNeighborLoader(data, **kwargs)
    assert ahead.prefetch and not plain.prefetch
    batches = list(ahead)
    assert len(batches) == len(plain)
    for x, y in zip(plain, batches):
        assert_batches_equal(x, y)
    # The consumer's stream, not the side stream, is the one the batch is
    # used on: a long kernel queued on it first does not hold the next
    # batch's sampling back, and the batch is valid after it.
    it = iter(ahead)
    torch.cuda._sleep(100_000_000)  # ~0.1 s on the consumer stream
    batch = next(it)
    assert label_store(batch, et).edge_label.numel() == 16


def test_prefetch_needs_gpu_data():
    data, et, seeds, eli = setup('homo')
    with pytest.raises(ValueError, match='GPU'):
        FusedLinkNeighborLoader(data, [3], edge_label_index=eli,
                                prefetch=True)
    assert not FusedLinkNeighborLoader(data, [3],
                                       edge_label_index=eli).prefetch


# The batch assembly against PyG's LinkLoader.filter_fn ####################

@pytest.mark.parametrize('kind', list(GRAPHS))
@pytest.mark.parametrize('mode', ['none', 'binary', 'triplet'])
@pytest.mark.parametrize('time', [False, True])
def test_filter_fn_equals_pyg_link_loader(kind, mode, time):
    # The loader's own assembly (batch_assembly, as FusedNeighborLoader's)
    # gives, for the same sampler output, exactly what PyG's
    # LinkLoader.filter_fn gives: the same stores, keys in the same order,
    # equal values.
    from torch_geometric.loader import LinkLoader
    data, et, seeds, eli = setup(kind)
    kwargs = dict(num_neighbors=[3, 2], edge_label_index=eli, batch_size=8,
                  seed=1, filter_per_worker=False, **NEG_MODES[mode])
    if time:
        for store in data.node_stores:
            store.time = torch.arange(store.num_nodes)
        kwargs.update(time_attr='time', edge_label_time=torch.full(
            (seeds.size(1), ), 1000))
    loader = FusedLinkNeighborLoader(data, **kwargs)
    for item in loader.sampler:
        out = loader.collate_fn(item)
        ours, theirs = loader.filter_fn(out), LinkLoader.filter_fn(loader, out)
        assert [s._key for s in ours.stores] == [s._key for s in theirs.stores]
        for a, b in zip(ours.stores, theirs.stores):
            assert list(a.keys()) == list(b.keys()), (a._key, a.keys(),
                                                      b.keys())
            for key in a.keys():
                if isinstance(a[key], torch.Tensor):
                    assert torch.equal(a[key], b[key]), (a._key, key)
                else:
                    assert a[key] == b[key], (a._key, key)
