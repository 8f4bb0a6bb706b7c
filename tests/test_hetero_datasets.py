"""Tests of the heterogeneous synthetic generators (mag_like, user_item_like).

Small scales only; the two learnability tests train small models full-batch
on one CPU thread (~15 s and ~5 s).
"""

import pytest
import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.data import HeteroData

try:
    from pyg_fusesample import datasets as ds
except (ImportError, OSError):
    # Without the compiled extension: test_datasets loads the self-contained
    # datasets subpackage straight from its files.
    from test_datasets import _mod as ds

mag_like, user_item_like = ds.mag_like, ds.user_item_like

SCALE = 0.01
WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")
HAS_TOPIC = ("paper", "has_topic", "field_of_study")
AFFILIATED = ("author", "affiliated_with", "institution")
RATES = ("user", "rates", "item")
REV_RATES = ("item", "rev_rates", "user")

_CACHE = {}


def cached(key, fn):
    if key not in _CACHE:
        _CACHE[key] = fn()
    return _CACHE[key]


def mag(**kwargs):
    kw = dict(scale=SCALE, seed=0, **kwargs)
    return cached(("mag",) + tuple(sorted(kw.items())),
                  lambda: mag_like(**kw))


def ui(**kwargs):
    kw = dict(scale=1.0, seed=0, **kwargs)
    return cached(("ui",) + tuple(sorted(kw.items())),
                  lambda: user_item_like(**kw))


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Build the small graphs and train the small full-batch models on one
    thread: about as fast as two for ops this size, and not slowed down 5x
    by OpenMP's barriers when the machine is oversubscribed (as when test
    suites run side by side)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def keys(ei, num_dst):
    return ei[0] * num_dst + ei[1]


def assert_same_tensors(a, b):
    assert a.node_types == b.node_types and a.edge_types == b.edge_types
    for store_a, store_b in zip(a.stores, b.stores):
        assert set(store_a.keys()) == set(store_b.keys())
        for key, value in store_a.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, store_b[key]), key
            else:
                assert value == store_b[key], key


# ----------------------------------------------------------------- mag_like

MAG_NODES = {"paper": 736_389, "author": 1_134_649, "institution": 8_740,
             "field_of_study": 59_965}
MAG_EDGES = {WRITES: 7_145_660, CITES: 5_416_271, HAS_TOPIC: 7_505_078,
             AFFILIATED: 1_043_998}


def test_mag_node_and_edge_counts():
    data = mag(undirected=False)
    assert isinstance(data, HeteroData)
    for node_type, count in MAG_NODES.items():
        assert data[node_type].num_nodes == round(count * SCALE), node_type
    assert set(data.edge_types) == set(MAG_EDGES)
    for edge_type, count in MAG_EDGES.items():
        target = round(count * SCALE)
        got = data[edge_type].edge_index.size(1)
        # Exactly the target is drawn; only duplicates that could not be
        # replaced (hub pairs, up to 6 rounds) are dropped: measured <0.05%
        # at this scale, so 0.5% fails only if de-duplication goes wrong.
        assert target * 0.995 <= got <= target, (edge_type, got, target)


def test_mag_shapes_dtypes_and_ids():
    data = mag()
    paper = data["paper"]
    n = paper.num_nodes
    assert paper.x.dtype == torch.float32 and paper.x.shape == (n, 128)
    assert torch.isfinite(paper.x).all()
    assert paper.y.dtype == torch.int64 and paper.y.shape == (n,)
    assert int(paper.y.min()) >= 0 and int(paper.y.max()) < 349
    assert paper.y.unique().numel() > 300  # (nearly) all 349 venues used
    assert paper.year.dtype == torch.int64 and paper.year.shape == (n,)
    for node_type in ("author", "institution", "field_of_study"):
        assert "x" not in data[node_type]  # like PyG's OGB_MAG()
        assert data[node_type].num_nodes > 0
    for edge_type in data.edge_types:
        ei = data[edge_type].edge_index
        assert ei.dtype == torch.int64 and ei.dim() == 2 and ei.size(0) == 2
        src, _, dst = edge_type
        assert int(ei.min()) >= 0
        assert int(ei[0].max()) < data[src].num_nodes, edge_type
        assert int(ei[1].max()) < data[dst].num_nodes, edge_type
        k = keys(ei, data[dst].num_nodes)
        assert k.unique().numel() == k.numel(), f"duplicates in {edge_type}"
    cites = data[CITES].edge_index
    assert bool((cites[0] != cites[1]).all()), "self-citations"
    assert data.synthetic is True
    assert data.name == "mag_like(scale=0.01)"
    assert mag_like(scale=1e-3).name.startswith("mag_like")


def test_mag_features_all():
    data = mag(features="all")
    for node_type in MAG_NODES:
        x = data[node_type].x
        assert x.dtype == torch.float32
        assert x.shape == (data[node_type].num_nodes, 128)
    # Paper tensors and edges do not depend on the option.
    plain = mag()
    assert torch.equal(data["paper"].x, plain["paper"].x)
    for edge_type in plain.edge_types:
        assert torch.equal(data[edge_type].edge_index,
                           plain[edge_type].edge_index)
    with pytest.raises(ValueError):
        mag_like(scale=SCALE, features="some")


def test_mag_reverse_relations_match_to_undirected():
    directed = mag(undirected=False)
    data = mag()
    ref = T.ToUndirected()(directed.clone())
    assert set(data.edge_types) == set(ref.edge_types) == set(MAG_EDGES) | {
        ("paper", "rev_writes", "author"),
        ("field_of_study", "rev_has_topic", "paper"),
        ("institution", "rev_affiliated_with", "author")}
    for edge_type in ref.edge_types:
        assert torch.equal(data[edge_type].edge_index,
                           ref[edge_type].edge_index), edge_type
    for rel in (WRITES, HAS_TOPIC, AFFILIATED):
        rev = (rel[2], f"rev_{rel[1]}", rel[0])
        assert torch.equal(data[rev].edge_index,
                           directed[rel].edge_index.flip(0))
    # cites: merged into one symmetric relation (both directions, once).
    n = data["paper"].num_nodes
    ei = data[CITES].edge_index
    assert torch.equal(torch.sort(keys(ei, n)).values,
                       torch.sort(keys(ei.flip(0), n)).values)
    one_way = keys(directed[CITES].edge_index, n)
    assert bool(torch.isin(one_way, keys(ei, n)).all())


def test_mag_deterministic_per_seed():
    assert_same_tensors(mag(), mag_like(scale=SCALE, seed=0))
    other = mag_like(scale=SCALE, seed=1)
    assert not torch.equal(other["paper"].y, mag()["paper"].y)
    assert not torch.equal(other[WRITES].edge_index[:, :100],
                           mag()[WRITES].edge_index[:, :100])


def test_mag_global_rng_untouched():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    mag_like(scale=0.002, features="all")
    user_item_like(scale=0.1)
    assert torch.equal(state, torch.get_rng_state())


def test_mag_year_split():
    paper = mag()["paper"]
    year = paper.year
    assert int(year.min()) == 2010 and int(year.max()) == 2019
    assert year.unique().numel() == 10
    assert torch.equal(paper.train_mask, year < 2018)
    assert torch.equal(paper.val_mask, year == 2018)
    assert torch.equal(paper.test_mask, year == 2019)
    n = paper.num_nodes
    assert abs(int(paper.train_mask.sum()) - n * 629_571 / 736_389) <= 1
    assert abs(int(paper.val_mask.sum()) - n * 64_879 / 736_389) <= 1
    assert int(paper.test_mask.sum()) == n - int(paper.train_mask.sum()) \
        - int(paper.val_mask.sum())


def test_mag_heavy_tails():
    data = mag(undirected=False)

    def degree_ratio(edge_type, end):
        ei = data[edge_type].edge_index
        n = data[edge_type[2 if end == 1 else 0]].num_nodes
        deg = torch.bincount(ei[end], minlength=n).double()
        return float(deg.max() / deg.mean())

    # Hub fields of study and institutions (the real graph's are larger:
    # the maximum degrees shrink with sqrt(scale)).
    assert degree_ratio(HAS_TOPIC, 1) > 15
    assert degree_ratio(AFFILIATED, 1) > 10
    assert degree_ratio(WRITES, 0) > 10       # prolific authors
    assert degree_ratio(CITES, 1) > 15        # highly cited papers
    stats = ds.graph_stats(data)
    assert stats["edge_types"][HAS_TOPIC]["top_hub_edge_share"] > 0.02


def test_graph_stats_per_type():
    data = mag()
    stats = ds.graph_stats(data)
    assert stats["synthetic"] is True and stats["name"] == data.name
    assert stats["num_nodes"] == data.num_nodes
    assert stats["num_edges"] == data.num_edges
    assert stats["node_types"]["paper"]["num_features"] == 128
    assert stats["node_types"]["paper"]["num_classes"] == 349
    assert stats["node_types"]["author"]["num_features"] == 0
    assert set(stats["edge_types"]) == set(data.edge_types)
    for edge_type, s in stats["edge_types"].items():
        assert s["num_edges"] == data[edge_type].edge_index.size(1)
        dst = data[edge_type[2]].num_nodes
        assert s["avg_in_degree"] == pytest.approx(s["num_edges"] / dst)
    assert 0.3 < stats["edge_types"][CITES]["edge_homophily"] < 0.6
    h = stats["edge_types"][WRITES]["edge_homophily"]
    assert h != h  # nan: authors have no labels


def test_registry_knows_the_hetero_graphs():
    assert set(ds.HETERO_DATASET_NAMES) <= set(ds.DATASET_NAMES)
    for name in ("mag", "mag_like", "MAG-like"):
        data = ds.get_dataset(name, scale=0.002, seed=3)
        assert isinstance(data, HeteroData)
        assert data.name.startswith("mag_like")
    for name in ("user_item", "user_item_like", "user-item"):
        data = ds.get_dataset(name, scale=0.1, seed=3)
        assert isinstance(data, HeteroData)
        assert data.name.startswith("user_item_like")
    assert torch.equal(ds.get_dataset("user_item")["user"].x, ui()["user"].x)


def test_mag_labels_learnable_from_neighbourhoods():
    """2-layer hetero GraphSAGE (to_hetero, full batch) vs an MLP on the
    paper features; test papers are the 2019 ones (OGB's time split)."""
    from torch_geometric.nn import GraphSAGE, to_hetero
    data = mag(features="all")
    paper = data["paper"]
    train, test = paper.train_mask, paper.test_mask

    def fit(model, forward, epochs=40):
        opt = torch.optim.Adam(model.parameters(), lr=0.01,
                               weight_decay=5e-4)
        for _ in range(epochs):
            model.train()
            opt.zero_grad()
            F.cross_entropy(forward()[train], paper.y[train]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = forward()[test].argmax(1)
        return float((pred == paper.y[test]).double().mean())

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 349))
    acc_mlp = fit(mlp, lambda: mlp(paper.x))
    gnn = to_hetero(GraphSAGE((-1, -1), 64, num_layers=2, out_channels=349),
                    data.metadata(), aggr="sum")
    with torch.no_grad():  # initialise the lazy layers
        gnn(data.x_dict, data.edge_index_dict)
    acc_gnn = fit(gnn, lambda: gnn(data.x_dict, data.edge_index_dict)["paper"])
    print(f"mag_like(scale={SCALE}) test accuracy: MLP {acc_mlp:.3f}, "
          f"hetero GraphSAGE {acc_gnn:.3f}")
    assert acc_gnn > 0.4, (acc_mlp, acc_gnn)
    assert acc_gnn > acc_mlp + 0.2, (acc_mlp, acc_gnn)


# ----------------------------------------------------------- user_item_like

def test_user_item_counts_shapes_and_dtypes():
    data = ui()
    assert data["user"].num_nodes == 943 and data["item"].num_nodes == 1682
    assert data["user"].x.shape == (943, 32)
    assert data["item"].x.shape == (1682, 64)
    for node_type in ("user", "item"):
        assert data[node_type].x.dtype == torch.float32
    assert set(data.edge_types) == {RATES, REV_RATES}
    rates = data[RATES]
    ei = rates.edge_index
    assert ei.dtype == torch.int64 and ei.shape == (2, 100_000)
    assert int(ei.min()) >= 0
    assert int(ei[0].max()) < 943 and int(ei[1].max()) < 1682
    k = keys(ei, 1682)
    assert k.unique().numel() == k.numel(), "duplicate ratings"
    assert bool((k[1:] > k[:-1]).all()), "sorted by user, then item"
    assert rates.rating.dtype == torch.int64 and rates.time.dtype == \
        torch.int64
    assert torch.equal(rates.edge_attr, rates.rating.float().view(-1, 1))
    assert data.synthetic is True and data.name == "user_item_like"


def test_user_item_ratings_time_and_degrees():
    rates = ui()[RATES]
    assert int(rates.rating.min()) == 1 and int(rates.rating.max()) == 5
    # MovieLens-100k's star histogram, exactly (ratings are cut by rank).
    assert torch.bincount(rates.rating, minlength=6)[1:].tolist() == [
        6_110, 11_370, 27_145, 34_174, 21_201]
    assert int(rates.time.min()) >= 874_724_710
    assert int(rates.time.max()) <= 893_286_638
    deg_user = torch.bincount(rates.edge_index[0], minlength=943).double()
    deg_item = torch.bincount(rates.edge_index[1], minlength=1682).double()
    # Power-law activity/popularity: MovieLens-100k has max/mean 737/106
    # (users) and 583/59.5 (items), medians below the means.
    assert 5 < float(deg_user.max() / deg_user.mean()) < 9
    assert 7 < float(deg_item.max() / deg_item.mean()) < 13
    assert deg_user.median() < deg_user.mean()
    assert deg_item.median() < 0.7 * deg_item.mean()


def test_user_item_reverse_relation_matches_to_undirected():
    data = ui()
    fwd = HeteroData()
    for node_type in ("user", "item"):
        fwd[node_type].x = data[node_type].x
    for key, value in data[RATES].items():
        fwd[RATES][key] = value
    ref = T.ToUndirected()(fwd)
    for key, value in ref[REV_RATES].items():
        assert torch.equal(data[REV_RATES][key], value), key
    assert set(data[REV_RATES].keys()) == set(ref[REV_RATES].keys())


def test_user_item_deterministic_and_scaled():
    assert_same_tensors(ui(), user_item_like(seed=0))
    assert not torch.equal(user_item_like(seed=1)[RATES].edge_index,
                           ui()[RATES].edge_index)
    small = user_item_like(scale=0.5)
    assert small["user"].num_nodes == round(943 * 0.5)
    assert small["item"].num_nodes == round(1682 * 0.5)
    assert small[RATES].edge_index.size(1) == 50_000
    tiny = user_item_like(scale=0.1)  # density capped at half of all pairs
    assert tiny[RATES].edge_index.size(1) == (94 * 168) // 2


def _auc(pos, neg):
    """Mann-Whitney AUC: P(score of a positive > score of a negative)."""
    scores = torch.cat([pos, neg])
    ranks = torch.empty_like(scores)
    ranks[scores.argsort()] = torch.arange(1, scores.numel() + 1,
                                           dtype=scores.dtype)
    n_pos, n_neg = pos.numel(), neg.numel()
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2)
                 / (n_pos * n_neg))


def test_user_item_links_predictable_from_features():
    """A bilinear (dot-product) model of the features, trained on 80% of
    the ratings against random pairs, ranks the held-out 20% above random
    pairs, and above pairs with the same item popularity (so it predicts
    taste-genre agreement, not just popularity)."""
    data = ui()
    xu, xi = data["user"].x, data["item"].x
    ei = data[RATES].edge_index
    gen = torch.Generator().manual_seed(0)
    perm = torch.randperm(ei.size(1), generator=gen)
    n_test = ei.size(1) // 5
    test, train = ei[:, perm[:n_test]], ei[:, perm[n_test:]]
    torch.manual_seed(0)
    user_map, item_map = torch.nn.Linear(32, 16), torch.nn.Linear(64, 16)
    opt = torch.optim.Adam(list(user_map.parameters())
                           + list(item_map.parameters()), lr=0.02)

    def score(u, i):
        return (user_map(xu)[u] * item_map(xi)[i]).sum(-1)

    def random_pairs(k):
        return (torch.randint(943, (k,), generator=gen),
                torch.randint(1682, (k,), generator=gen))

    for _ in range(100):
        opt.zero_grad()
        pos, neg = score(*train), score(*random_pairs(train.size(1)))
        loss = (F.binary_cross_entropy_with_logits(pos, torch.ones_like(pos))
                + F.binary_cross_entropy_with_logits(neg,
                                                     torch.zeros_like(neg)))
        loss.backward()
        opt.step()
    with torch.no_grad():
        pos = score(*test)
        auc = _auc(pos, score(*random_pairs(n_test)))
        shuffled = test[1][torch.randperm(n_test, generator=gen)]
        auc_pop = _auc(pos, score(test[0], shuffled))
    print(f"user_item_like link prediction AUC: {auc:.3f} (random pairs), "
          f"{auc_pop:.3f} (popularity-matched pairs)")
    assert auc > 0.7, auc
    assert auc_pop > 0.65, auc_pop
