"""``subgraph_type='induced'`` on HeteroData (FusedNeighborLoader and
FusedLinkNeighborLoader): each batch holds, per edge type, every edge of the
graph between its sampled nodes of the two types, with local ids, edge ids
within the type, grouped by target in the batch's node order; int32 and
int64 graphs; an edge type without edges; CPU and CUDA (the same batches).
PyG's own cases (``test_hetero_neighbor_loader_basic[induced]``, ``..._on_
karate[induced]``) run in tests/pyg/."""
import pytest
import torch
from torch_geometric.data import HeteroData

from conftest import devices
from pyg_fusesample import FusedLinkNeighborLoader, FusedNeighborLoader


def hetero_graph(dtype=torch.long, seed=0):
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    sizes = {'paper': 60, 'author': 40, 'venue': 5}
    for nt, n in sizes.items():
        data[nt].x = torch.randn(n, 4, generator=g)
    def edges(s, d, m):
        ei = torch.stack([torch.randint(0, sizes[s], (m, ), generator=g),
                          torch.randint(0, sizes[d], (m, ), generator=g)])
        return ei.to(dtype)
    data['paper', 'cites', 'paper'].edge_index = edges('paper', 'paper', 300)
    data['author', 'writes', 'paper'].edge_index = edges('author', 'paper',
                                                         200)
    data['paper', 'rev_writes', 'author'].edge_index = \
        data['author', 'writes', 'paper'].edge_index.flip(0)
    data['paper', 'in', 'venue'].edge_index = edges('paper', 'venue', 60)
    data['venue', 'hosts', 'author'].edge_index = torch.empty(
        2, 0, dtype=dtype)  # an edge type without edges
    return data


def expected_edges(data, batch, et):
    # Every edge of type et between the batch's nodes: (local src, local
    # dst, edge id), ordered by target position then edge id.
    s, _, d = et
    ei = data[et].edge_index.long()
    n_id_s, n_id_d = batch[s].n_id.cpu(), batch[d].n_id.cpu()
    local_s = torch.full((data[s].num_nodes, ), -1, dtype=torch.long)
    local_s[n_id_s] = torch.arange(n_id_s.numel())
    local_d = torch.full((data[d].num_nodes, ), -1, dtype=torch.long)
    local_d[n_id_d] = torch.arange(n_id_d.numel())
    keep = (local_s[ei[0]] >= 0) & (local_d[ei[1]] >= 0)
    eid = keep.nonzero().view(-1)
    rows = sorted(zip(local_d[ei[1, eid]].tolist(), eid.tolist(),
                      local_s[ei[0, eid]].tolist()))
    return [(r, c, e) for c, e, r in rows]


def batch_edges(batch, et):
    ei, e_id = batch[et].edge_index.cpu(), batch[et].e_id.cpu()
    got = list(zip(ei[0].tolist(), ei[1].tolist(), e_id.tolist()))
    # grouped by target in node order; within a target, CSC order
    # (sorted by edge id here, since the graph was given unsorted)
    return sorted(got, key=lambda t: (t[1], t[2])), [c for _, c, _ in got]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.long, torch.int])
@pytest.mark.parametrize('num_neighbors', [[3, 2], [-1], [0, 4]])
def test_every_edge_among_the_sampled_nodes(device, dtype, num_neighbors):
    data = hetero_graph(dtype)
    loader = FusedNeighborLoader(
        data, num_neighbors=num_neighbors, input_nodes=('paper', None),
        batch_size=8, subgraph_type='induced', device=device, seed=3)
    seen = 0
    for batch in loader:
        for et in data.edge_types:
            want = expected_edges(data, batch, et)
            got, targets = batch_edges(batch, et)
            assert got == want, et
            assert targets == sorted(targets), et  # grouped by target
            assert batch[et].edge_index.dtype == torch.long
            seen += len(got)
        assert batch['venue', 'hosts', 'author'].edge_index.numel() == 0
    assert seen > 30


@pytest.mark.cuda
def test_cuda_equals_cpu():
    data = hetero_graph()
    batches = []
    for device in ('cpu', 'cuda'):
        loader = FusedNeighborLoader(
            data, num_neighbors=[4, 3], input_nodes=('paper', None),
            batch_size=16, subgraph_type='induced', device=device, seed=5)
        batches.append([b.to('cpu') for b in loader])
    for a, b in zip(*batches):
        for nt in data.node_types:
            assert torch.equal(a[nt].n_id, b[nt].n_id)
        for et in data.edge_types:
            assert torch.equal(a[et].edge_index, b[et].edge_index)
            assert torch.equal(a[et].e_id, b[et].e_id)


@pytest.mark.parametrize('device', devices())
def test_link_loader(device):
    data = hetero_graph()
    et = ('author', 'writes', 'paper')
    loader = FusedLinkNeighborLoader(  # (samples where the graph lives)
        data.clone().to(device), num_neighbors=[3, 2],
        edge_label_index=(et, None), batch_size=16, subgraph_type='induced',
        seed=1)
    batch = next(iter(loader))
    for t in data.edge_types:
        assert batch_edges(batch, t)[0] == expected_edges(data, batch, t)
    # the supervision edges' endpoints are in the batch
    assert batch[et].edge_label_index.numel() > 0


def test_pyg_torch_sparse_gives_the_same_edges():
    # PyG's own sampler with its torch-sparse backend (no pyg-lib): its
    # induced batches hold exactly the edges the reference above gives for
    # their nodes, as ours do for theirs (the node sets differ: each draws
    # with its own generator).
    import torch_geometric.typing as pyg_typing
    if not pyg_typing.WITH_TORCH_SPARSE or pyg_typing.WITH_PYG_LIB:
        pytest.skip("needs PyG's torch-sparse sampler (torch_sparse, no "
                    "pyg-lib)")
    from torch_geometric.loader import NeighborLoader
    data = hetero_graph()
    loader = NeighborLoader(data, num_neighbors=[3, 2],
                            input_nodes=('paper', None), batch_size=8,
                            subgraph_type='induced')
    for i, batch in enumerate(loader):
        for et in data.edge_types:
            ei, e_id = batch[et].edge_index, batch[et].e_id
            got = sorted(zip(ei[0].tolist(), ei[1].tolist(), e_id.tolist()))
            assert got == sorted(expected_edges(data, batch, et)), et
        if i == 3:
            break
