"""(FeatureStore, GraphStore) data in FusedNeighborLoader and
FusedLinkNeighborLoader: the structure read from the stores is sampled as
the same graph given as Data / HeteroData is (bitwise, for edges stored in
the same COO order), e_id indexes each edge type's stored layout as in PyG,
features come from the feature store, times too; weighted sampling of
stores raises (as in PyG). PyG's own custom-store loader tests run in tests/pyg."""
import pytest
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.testing import MyFeatureStore, MyGraphStore
from torch_geometric.utils import to_torch_csr_tensor

from conftest import paper_author_graph
from pyg_fusesample import FusedLinkNeighborLoader, FusedNeighborLoader

pytestmark = [pytest.mark.filterwarnings('ignore:Sparse CSR tensor support'),
              pytest.mark.filterwarnings('ignore:Sparse invariant checks')]


def stores_of(data, csr=()):
    # The stores of `data`; the edge types in `csr` stored as CSR, the
    # others as COO in data's order.
    fs, gs = MyFeatureStore(), MyGraphStore()
    if isinstance(data, Data):
        fs.put_tensor(data.x, group_name=None, attr_name='x', index=None)
        gs.put_edge_index((data.edge_index[0], data.edge_index[1]),
                          edge_type=None, layout='coo',
                          size=(data.num_nodes, data.num_nodes))
        return fs, gs
    for nt in data.node_types:
        fs.put_tensor(data[nt].x, group_name=nt, attr_name='x', index=None)
    for et in data.edge_types:
        ei = data[et].edge_index
        size = (data[et[0]].num_nodes, data[et[-1]].num_nodes)
        if et in csr:
            adj = to_torch_csr_tensor(ei, size=size)
            gs.put_edge_index((adj.crow_indices(), adj.col_indices()),
                              edge_type=et, layout='csr', size=size)
        else:
            gs.put_edge_index((ei[0], ei[1]), edge_type=et, layout='coo',
                              size=size)
    return fs, gs


def homo():
    g = torch.Generator().manual_seed(0)
    return Data(x=torch.randn(80, 4, generator=g),
                edge_index=torch.randint(80, (2, 600), generator=g))


def hetero():
    return paper_author_graph(60, 40, 300, 200, seed=1)


@pytest.mark.parametrize('make', [homo, hetero])
def test_node_loader_on_stores_equals_data(make):
    data = make()
    input_nodes = torch.arange(50) if isinstance(data, Data) \
        else ('paper', torch.arange(50))
    kw = dict(num_neighbors=[4, 3], input_nodes=input_nodes, batch_size=16,
              shuffle=True, seed=7)
    a_batches = list(FusedNeighborLoader(data, **kw))
    b_batches = list(FusedNeighborLoader(stores_of(data), **kw))
    assert len(a_batches) == len(b_batches) == 4
    for a, b in zip(a_batches, b_batches):
        for sa in a.node_stores:
            sb = b[sa._key] if isinstance(data, HeteroData) else b
            assert torch.equal(sa.n_id, sb.n_id)
            assert torch.equal(sa.x, sb.x)  # from the feature store
        for sa in a.edge_stores:
            sb = b[sa._key] if isinstance(data, HeteroData) else b
            assert torch.equal(sa.edge_index, sb.edge_index)
            assert torch.equal(sa.e_id, sb.e_id)


def test_e_id_indexes_the_stored_layout():
    # Edges stored as CSR: e_id points into the stored CSR order (PyG's
    # perm convention), so stored[:, e_id] are the batch's edges.
    data = hetero()
    et = ('author', 'writes', 'paper')
    fs, gs = stores_of(data, csr=[et])
    adj = to_torch_csr_tensor(data[et].edge_index, size=(40, 60))
    stored = torch.stack([
        torch.repeat_interleave(torch.arange(40), adj.crow_indices().diff()),
        adj.col_indices()])
    loader = FusedNeighborLoader((fs, gs), num_neighbors=[5, 5],
                                 input_nodes=('paper', torch.arange(60)),
                                 batch_size=20, seed=3)
    seen = 0
    for batch in loader:
        store = batch[et]
        src = batch['author'].n_id[store.edge_index[0]]
        dst = batch['paper'].n_id[store.edge_index[1]]
        assert torch.equal(stored[:, store.e_id], torch.stack([src, dst]))
        seen += store.e_id.numel()
    assert seen > 0


def test_link_loader_on_stores():
    data = hetero()
    et = ('paper', 'cites', 'paper')
    kw = dict(num_neighbors=[3, 2], batch_size=16, seed=2,
              edge_label_index=(et, data[et].edge_index[:, :64]),
              neg_sampling='binary')
    for a, b in zip(FusedLinkNeighborLoader(data, **kw),
                    FusedLinkNeighborLoader(stores_of(data), **kw)):
        assert torch.equal(a['paper'].n_id, b['paper'].n_id)
        assert torch.equal(a['paper'].x, b['paper'].x)
        assert torch.equal(a[et].edge_label_index, b[et].edge_label_index)


def test_temporal_sampling_of_stores_equals_data():
    # Node times in the feature store: the same temporal batches as the
    # HeteroData with those times (seed times from input_time).
    data = hetero()
    for nt in data.node_types:
        data[nt].time = torch.randint(10, (data[nt].num_nodes, ),
                                      generator=torch.Generator().manual_seed(
                                          len(nt)))
    fs, gs = stores_of(data)
    for nt in data.node_types:
        fs.put_tensor(data[nt].time, group_name=nt, attr_name='time',
                      index=None)
    kw = dict(num_neighbors=[4, 3], input_nodes=('paper', torch.arange(40)),
              input_time=torch.full((40, ), 6), time_attr='time',
              batch_size=16, seed=9)
    for a, b in zip(FusedNeighborLoader(data, **kw),
                    FusedNeighborLoader((fs, gs), **kw)):
        for nt in data.node_types:
            assert torch.equal(a[nt].n_id, b[nt].n_id)
            assert torch.equal(a[nt].time, b[nt].time)
        for et in data.edge_types:
            assert torch.equal(a[et].edge_index, b[et].edge_index)


def test_store_errors():
    fs, gs = stores_of(homo())
    with pytest.raises(NotImplementedError, match="'weight_attr'"):
        FusedNeighborLoader((fs, gs), num_neighbors=[2], weight_attr='w')
    with pytest.raises(ValueError, match="no 'time' tensor"):
        FusedNeighborLoader((fs, gs), num_neighbors=[2], time_attr='time')
    with pytest.raises(ValueError, match='holds no edges'):
        FusedNeighborLoader((MyFeatureStore(), MyGraphStore()),
                            num_neighbors=[2])
