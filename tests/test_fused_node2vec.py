"""FusedNode2Vec: PyG 2.8's own Node2Vec test run against it, and the
walks, samples, seeds, training, argument checks and device placement.

``test_node2vec`` is PyG's ``test/nn/models/test_node2vec.py``
(pyg-team/pytorch_geometric, MIT; the version gated on
``@withPackage('pyg_lib|torch_cluster')``, commit 52a7cda). Edits: the import
(``FusedNode2Vec as Node2Vec``); ``@withCUDA`` -> the project's ``devices()``
and the pyg-lib / torch_cluster gates dropped (FusedNode2Vec needs neither);
the repr is the class's own name (``FusedNode2Vec(3, 16)``, as PyG's
``__repr__`` prints it for a subclass); the ``is_full_test()`` TorchScript
block checks that scripting is refused (FusedNode2Vec is not scriptable, as
its docstring says) instead of running the scripted model.
"""
import copy
import itertools
from collections import Counter

import pytest
import torch
import torch_geometric.nn
from torch_geometric.testing import is_full_test

from pyg_fusesample import FusedNode2Vec as Node2Vec
from pyg_fusesample.nn import FusedNode2Vec

from conftest import CUDA, devices


# -- PyG's test -------------------------------------------------------------
@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('p', [1.0])
@pytest.mark.parametrize('q', [1.0, 0.5])
def test_node2vec(device, p, q):
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]], device=device)

    model = Node2Vec(
        edge_index,
        embedding_dim=16,
        walk_length=2,
        context_size=2,
        p=p,
        q=q,
    ).to(device)
    assert str(model) == 'FusedNode2Vec(3, 16)'  # PyG: 'Node2Vec(3, 16)'

    assert model(torch.arange(3, device=device)).size() == (3, 16)

    pos_rw, neg_rw = model.sample(torch.arange(3))
    assert float(model.loss(pos_rw.to(device), neg_rw.to(device))) >= 0

    acc = model.test(torch.ones(20, 16), torch.randint(10, (20, )),
                     torch.ones(20, 16), torch.randint(10, (20, )))
    assert 0 <= acc and acc <= 1

    if is_full_test():
        # PyG scripts the model here; FusedNode2Vec is not scriptable.
        with pytest.raises(Exception):
            torch.jit.script(model)


# -- helpers ----------------------------------------------------------------
def random_graph(num_nodes=30, num_edges=120, seed=0):
    """A directed graph with duplicates, self loops, two sinks (out-degree
    0: nodes N-2, N-1) and an isolated node (N-1)."""
    g = torch.Generator().manual_seed(seed)
    row = torch.randint(num_nodes - 2, (num_edges, ), generator=g)
    col = torch.randint(num_nodes - 1, (num_edges, ), generator=g)
    return torch.stack([row, col])


def assert_valid_walks(walks, edge_index, num_nodes):
    """Consecutive nodes are an edge, or equal at a sink."""
    edges = set(map(tuple, edge_index.t().tolist()))
    out_deg = torch.bincount(edge_index[0], minlength=num_nodes).tolist()
    assert walks.dtype == torch.long
    assert int(walks.min()) >= 0 and int(walks.max()) < num_nodes
    for row in walks.cpu().tolist():
        for u, v in zip(row[:-1], row[1:]):
            assert (u, v) in edges or (u == v and out_deg[u] == 0), (row, u, v)


# -- the model --------------------------------------------------------------
def test_is_pyg_node2vec_with_its_attributes():
    edge_index = random_graph()
    model = FusedNode2Vec(edge_index, 8, walk_length=5, context_size=3,
                          walks_per_node=2, p=0.5, q=2.0,
                          num_negative_samples=3, num_nodes=30, sparse=True)
    assert isinstance(model, torch_geometric.nn.Node2Vec)
    assert model.num_nodes == 30
    assert model.EPS == 1e-15
    assert model.embedding_dim == 8
    assert model.walk_length == 4  # PyG stores walk_length - 1
    assert model.context_size == 3 and model.walks_per_node == 2
    assert model.p == 0.5 and model.q == 2.0
    assert model.num_negative_samples == 3
    assert model.embedding.weight.size() == (30, 8)
    assert model.embedding.sparse
    assert callable(model.random_walk_fn)
    # PyG's CSR: rowptr/col on the CPU, rows sorted by neighbour.
    row = torch.repeat_interleave(torch.arange(30), model.rowptr.diff())
    key = row * 30 + model.col
    assert torch.equal(key, torch.sort(edge_index[0] * 30 + edge_index[1])[0])
    # The walk graph is the same CSR; the state dict is PyG's.
    g = model.walk_graph
    assert torch.equal(g.rowptr, model.rowptr)
    assert torch.equal(g.col.long(), model.col)
    assert list(model.state_dict()) == ['embedding.weight']
    other = FusedNode2Vec(edge_index, 8, 5, 3, num_nodes=30)
    other.load_state_dict(model.state_dict())
    assert torch.equal(other.embedding.weight, model.embedding.weight)


@pytest.mark.parametrize('p,q', [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25)])
def test_pos_sample_rows_are_walks(p, q):
    edge_index = random_graph()
    model = FusedNode2Vec(edge_index, 8, walk_length=6, context_size=3,
                          walks_per_node=4, p=p, q=q, num_nodes=30)
    batch = torch.tensor([0, 5, 27, 28, 29, 3])  # 28, 29: sinks
    pos = model.pos_sample(batch)
    num_windows = 6 - 3 + 1
    assert pos.size() == (batch.numel() * 4 * num_windows, 3)
    assert torch.equal(pos[:batch.numel() * 4, 0], batch.repeat(4))
    assert_valid_walks(pos, edge_index, 30)
    # The whole walks through random_walk_fn (PyG's signature).
    rw = model.random_walk_fn(model.rowptr, model.col, batch.repeat(50),
                              model.walk_length, p, q)
    assert rw.size() == (batch.numel() * 50, 6)
    assert torch.equal(rw[:, 0], batch.repeat(50))
    assert_valid_walks(rw, edge_index, 30)
    assert torch.equal(rw[batch.repeat(50) == 29], torch.full((50, 6), 29))
    assert torch.equal(rw[batch.repeat(50) == 28], torch.full((50, 6), 28))


def test_sample_through_loader():
    edge_index = random_graph()
    model = FusedNode2Vec(edge_index, 8, walk_length=5, context_size=2,
                          walks_per_node=2, num_nodes=30)
    for num_workers in (0, 2):
        seen = []
        loader = model.loader(batch_size=7, shuffle=True,
                              num_workers=num_workers)
        for pos, neg in loader:
            b = pos.size(0) // (2 * 4)
            assert pos.size() == (b * 2 * 4, 2)
            assert neg.size() == (b * 2 * 4, 2)
            assert_valid_walks(pos, edge_index, 30)
            seen += pos[:b, 0].tolist()
        assert sorted(seen) == list(range(30))


@pytest.mark.parametrize('walks_per_node,num_neg', [(1, 1), (3, 2)])
def test_neg_sample_shapes(walks_per_node, num_neg):
    edge_index = random_graph()
    model = FusedNode2Vec(edge_index, 8, walk_length=7, context_size=4,
                          walks_per_node=walks_per_node,
                          num_negative_samples=num_neg, num_nodes=30)
    batch = torch.tensor([1, 2, 3, 29])
    neg = model.neg_sample(batch)
    num_windows = 7 - 4 + 1
    rows = batch.numel() * walks_per_node * num_neg
    assert neg.size() == (rows * num_windows, 4)
    assert neg.dtype == torch.long
    assert torch.equal(neg[:rows, 0], batch.repeat(walks_per_node * num_neg))
    assert int(neg.min()) >= 0 and int(neg.max()) < 30
    pos, neg2 = model.sample(batch)
    assert neg2.size() == neg.size()
    assert pos.size() == (batch.numel() * walks_per_node * num_windows, 4)


def test_walk_length_one():
    # PyG accepts walk_length = context_size = 1 (a walk of the start only).
    model = FusedNode2Vec(random_graph(), 4, walk_length=1, context_size=1,
                          num_nodes=30)
    pos, neg = model.sample([3, 4])
    assert torch.equal(pos, torch.tensor([[3], [4]]))
    assert torch.equal(neg, torch.tensor([[3], [4]]))


def test_seed_gives_equal_samples():
    edge_index = random_graph()
    kwargs = dict(embedding_dim=8, walk_length=8, context_size=3,
                  walks_per_node=3, p=0.5, q=2.0, num_negative_samples=2,
                  num_nodes=30)
    batch = torch.arange(30)
    a = FusedNode2Vec(edge_index, **kwargs, seed=12)
    b = FusedNode2Vec(edge_index, **kwargs, seed=12)
    c = FusedNode2Vec(edge_index, **kwargs, seed=13)
    for _ in range(3):  # also the later draws
        (pa, na), (pb, nb), (pc, nc) = (m.sample(batch) for m in (a, b, c))
        assert torch.equal(pa, pb) and torch.equal(na, nb)
        assert not torch.equal(pa, pc) and not torch.equal(na, nc)
    # Loader batches too (shuffle from the global RNG, so seed it).
    torch.manual_seed(0)
    la = [x for batch in a.loader(batch_size=8, shuffle=True) for x in batch]
    torch.manual_seed(0)
    lb = [x for batch in b.loader(batch_size=8, shuffle=True) for x in batch]
    assert all(torch.equal(x, y) for x, y in zip(la, lb))
    # An explicit generator; and without one, torch.manual_seed.
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    s1 = FusedNode2Vec(edge_index, **kwargs, generator=g1).sample(batch)
    s2 = FusedNode2Vec(edge_index, **kwargs, generator=g2).sample(batch)
    assert all(torch.equal(x, y) for x, y in zip(s1, s2))
    plain = FusedNode2Vec(edge_index, **kwargs)
    torch.manual_seed(3)
    s1 = plain.sample(batch)
    torch.manual_seed(3)
    s2 = plain.sample(batch)
    assert all(torch.equal(x, y) for x, y in zip(s1, s2))


def test_deepcopy_keeps_its_own_graph_and_walks():
    model = FusedNode2Vec(random_graph(), 8, 5, 2, num_nodes=30, seed=1)
    clone = copy.deepcopy(model)
    assert clone.random_walk_fn.__self__ is clone
    a, b = model.sample(torch.arange(30)), clone.sample(torch.arange(30))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_loss_decreases():
    # Two 5-cliques joined by one edge.
    a = [(i, j) for i, j in itertools.permutations(range(5), 2)]
    b = [(i + 5, j + 5) for i, j in a]
    edge_index = torch.tensor(a + b + [(4, 5), (5, 4)]).t()
    torch.manual_seed(0)
    model = FusedNode2Vec(edge_index, 16, walk_length=6, context_size=3,
                          walks_per_node=5, seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(40):
        for pos, neg in model.loader(batch_size=10, shuffle=True):
            optimizer.zero_grad()
            loss = model.loss(pos, neg)
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
    assert sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5
    # The embeddings learned the two clusters.
    z = torch.nn.functional.normalize(model().detach(), dim=-1)
    sim = z @ z.t()
    within = (sim[:5, :5].mean() + sim[5:, 5:].mean()) / 2
    assert within > sim[:5, 5:].mean() + 0.2


def test_sparse_training_step():
    model = FusedNode2Vec(random_graph(), 8, 5, 3, num_nodes=30, sparse=True)
    optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.01)
    pos, neg = model.sample(torch.arange(10))
    loss = model.loss(pos, neg)
    loss.backward()
    assert model.embedding.weight.grad.is_sparse
    optimizer.step()


def test_second_order_transition_probabilities():
    # From t = 0 through v = 1: x = 0 (return, 1/p), x = 2 (an out-neighbour
    # of 0, weight 1), x = 3 and 4 (1/q each).
    edge_index = torch.tensor([[0, 0, 1, 1, 1, 1, 2, 3, 4],
                               [1, 2, 0, 2, 3, 4, 0, 0, 0]])
    p, q = 0.5, 4.0
    model = FusedNode2Vec(edge_index, 4, walk_length=3, context_size=2, p=p,
                          q=q, seed=0)
    rw = model.random_walk_fn(model.rowptr, model.col,
                              torch.zeros(200_000, dtype=torch.long),
                              2, p, q)
    via_1 = rw[rw[:, 1] == 1]
    assert abs(via_1.size(0) / rw.size(0) - 0.5) < 0.01  # first step uniform
    counts = Counter(via_1[:, 2].tolist())
    mass = {0: 1 / p, 2: 1.0, 3: 1 / q, 4: 1 / q}
    total = sum(mass.values())
    n = via_1.size(0)
    for x, m in mass.items():
        expected = n * m / total
        sd = (n * (m / total) * (1 - m / total)) ** 0.5
        assert abs(counts[x] - expected) < 5 * sd, (x, counts[x], expected)
    assert set(counts) == set(mass)


@pytest.mark.parametrize('kwargs,match', [
    (dict(walk_length=2, context_size=3), "'walk_length' \\(2\\) must be >="),
    (dict(walk_length=0, context_size=0), "'walk_length' must be"),
    (dict(walk_length=-1, context_size=1), "'walk_length' must be"),
    (dict(context_size=0), "'context_size' must be"),
    (dict(p=0.0), "'p' must be"),
    (dict(p=-1.0), "'p' must be"),
    (dict(q=0), "'q' must be"),
    (dict(q=float('nan')), "'q' must be"),
    (dict(p=float('inf')), "'p' must be"),
    (dict(walks_per_node=0), "'walks_per_node' must be"),
    (dict(num_negative_samples=0), "'num_negative_samples' must be"),
    (dict(walk_length=2.5), "'walk_length' must be"),
    (dict(seed=1, generator=torch.Generator()), "not both"),
])
def test_bad_arguments_raise_value_error(kwargs, match):
    args = dict(embedding_dim=4, walk_length=4, context_size=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        FusedNode2Vec(random_graph(), **args)


def test_bad_batch_raises():
    model = FusedNode2Vec(random_graph(), 4, 4, 2, num_nodes=30)
    with pytest.raises((ValueError, RuntimeError), match='outside'):
        model.pos_sample(torch.tensor([0, 30]))


@pytest.mark.cuda
def test_to_cuda_walks_on_the_gpu():
    assert CUDA
    edge_index = random_graph()
    model = FusedNode2Vec(edge_index, 8, walk_length=6, context_size=3,
                          walks_per_node=2, p=0.5, q=2.0, num_nodes=30,
                          seed=0)
    cpu_pos = model.pos_sample(torch.arange(30))
    model = model.to('cuda')
    assert model.walk_graph.device.type == 'cuda'
    assert model.embedding.weight.is_cuda
    assert model.rowptr.device.type == 'cpu'  # PyG's CSR stays where PyG has it
    pos = model.pos_sample(torch.arange(30))  # a CPU batch: moved
    assert pos.is_cuda
    assert_valid_walks(pos, edge_index, 30)
    pos, neg = model.sample(torch.arange(30, device='cuda'))
    assert pos.is_cuda and neg.is_cuda
    for pos, neg in model.loader(batch_size=8, shuffle=True):
        assert pos.is_cuda and neg.is_cuda
        loss = model.loss(pos, neg)
        assert loss.is_cuda and float(loss) > 0
    with pytest.raises(ValueError, match='outside'):
        model.pos_sample(torch.tensor([0, 30], device='cuda'))
    # The CPU and CUDA kernels draw alike: the same seed, the same walks.
    again = FusedNode2Vec(edge_index, 8, walk_length=6, context_size=3,
                          walks_per_node=2, p=0.5, q=2.0, num_nodes=30,
                          seed=0).to('cuda')
    assert torch.equal(again.pos_sample(torch.arange(30)).cpu(), cpu_pos)
    # Loader workers cannot use CUDA: they walk on the CPU CSR.
    for pos, neg in model.loader(batch_size=8, num_workers=2):
        assert pos.device.type == 'cpu'
        assert_valid_walks(pos, edge_index, 30)
    model = model.cpu()
    assert model.walk_graph.device.type == 'cpu'
    assert model.pos_sample(torch.arange(3)).device.type == 'cpu'
