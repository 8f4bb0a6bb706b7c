"""Tests of the synthetic graph generators (small scales only, fast)."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

try:
    from pyg_fusesample.datasets import (
        DATASET_NAMES,
        arxiv_like,
        erdos_renyi,
        get_dataset,
        graph_stats,
        hub_skewed,
        power_law_1m,
        power_law_graph,
        products_like,
        reddit_like,
    )
except (ImportError, OSError):
    # The top-level package may need the compiled extension; the datasets
    # subpackage is self-contained, so load it straight from its files.
    _DIR = Path(__file__).resolve().parents[1] / "pyg_fusesample" / "datasets"
    _spec = importlib.util.spec_from_file_location(
        "_pyg_fusesample_datasets", _DIR / "__init__.py",
        submodule_search_locations=[str(_DIR)])
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _mod
    _spec.loader.exec_module(_mod)
    DATASET_NAMES = _mod.DATASET_NAMES
    arxiv_like = _mod.arxiv_like
    erdos_renyi = _mod.erdos_renyi
    get_dataset = _mod.get_dataset
    graph_stats = _mod.graph_stats
    hub_skewed = _mod.hub_skewed
    power_law_1m = _mod.power_law_1m
    power_law_graph = _mod.power_law_graph
    products_like = _mod.products_like
    reddit_like = _mod.reddit_like


# name -> (factory, expected average in-degree, directed?)
PRESETS = {
    "products": (lambda seed=0: products_like(seed=seed, scale=0.01),
                 123_718_280 / 2_449_029, False),
    "arxiv": (lambda seed=0: arxiv_like(seed=seed, scale=0.05),
              1_166_243 / 169_343, True),
    "reddit": (lambda seed=0: reddit_like(seed=seed, scale=0.01,
                                          num_features=32),
               114_615_892 / 232_965, False),
    "hub": (lambda seed=0: hub_skewed(seed=seed, scale=0.02), 20.0, True),
    "er": (lambda seed=0: erdos_renyi(seed=seed, scale=0.02), 20.0, True),
    "power_law_1m": (lambda seed=0: power_law_1m(seed=seed, scale=0.01),
                     50.0, False),
}

_CACHE = {}


def preset(name):
    if name not in _CACHE:
        _CACHE[name] = PRESETS[name][0]()
    return _CACHE[name]


def edge_keys(data):
    return data.edge_index[0] * data.num_nodes + data.edge_index[1]


def in_degree(data):
    return torch.bincount(data.edge_index[1], minlength=data.num_nodes)


@pytest.mark.parametrize("name", list(PRESETS))
def test_shapes_dtypes_and_validity(name):
    data = preset(name)
    assert isinstance(data, Data)
    n = data.num_nodes
    assert data.x.dtype == torch.float32 and data.x.dim() == 2
    assert data.x.size(0) == n
    assert data.y.dtype == torch.int64 and data.y.shape == (n,)
    ei = data.edge_index
    assert ei.dtype == torch.int64 and ei.dim() == 2 and ei.size(0) == 2
    assert ei.size(1) > 0
    assert int(ei.min()) >= 0 and int(ei.max()) < n
    assert bool((ei[0] != ei[1]).all()), "self loops"
    keys = edge_keys(data)
    assert torch.unique(keys).numel() == keys.numel(), "duplicate edges"
    assert int(data.y.min()) >= 0
    for mask in (data.train_mask, data.val_mask, data.test_mask):
        assert mask.dtype == torch.bool and mask.shape == (n,)
    assert data.synthetic is True
    assert isinstance(data.name, str) and data.name
    assert torch.isfinite(data.x).all()


@pytest.mark.parametrize("name", list(PRESETS))
def test_average_degree(name):
    data = preset(name)
    target = PRESETS[name][1]
    avg = data.edge_index.size(1) / data.num_nodes
    assert abs(avg - target) <= 0.1 * target, (avg, target)


@pytest.mark.parametrize(
    "name", [name for name, (_, _, directed) in PRESETS.items()
             if not directed])
def test_undirected_presets_are_symmetric(name):
    data = preset(name)
    n = data.num_nodes
    fwd = torch.sort(edge_keys(data)).values
    rev = torch.sort(data.edge_index[1] * n + data.edge_index[0]).values
    assert torch.equal(fwd, rev)


def test_presets_record_their_scale_in_the_name():
    assert preset("products").name.startswith("products_like")
    assert "scale=0.01" in preset("products").name
    assert preset("arxiv").name.startswith("arxiv_like")


def test_power_law_presets_are_heavy_tailed_and_er_is_not():
    for name in ("products", "arxiv", "power_law_1m"):
        deg = in_degree(preset(name)).double()
        assert deg.max() / deg.mean() > 10, name
    deg = in_degree(preset("er")).double()
    assert deg.max() / deg.mean() < 3
    stats = graph_stats(preset("er"))
    assert stats["max_in_degree"] < 2.5 * stats["avg_in_degree"]


def test_max_degree_close_to_requested():
    data = power_law_graph(20_000, 10.0, 8, 5, max_degree=1_000, seed=3)
    top = int(in_degree(data).max())
    assert 850 <= top <= 1_150, top


def test_hub_skewed_concentrates_in_edges():
    data = hub_skewed(num_nodes=100_000, avg_degree=20, max_degree=30_000,
                      num_features=8, seed=1)
    stats = graph_stats(data)
    # top 0.01% = 10 nodes receive a large share of all in-edges
    assert stats["top_hub_edge_share"] > 0.05, stats
    assert stats["max_in_degree"] > 20_000, stats
    assert stats["max_in_degree"] / stats["avg_in_degree"] > 500


def test_determinism_and_seed_sensitivity():
    a = products_like(seed=7, scale=0.005)
    b = products_like(seed=7, scale=0.005)
    c = products_like(seed=8, scale=0.005)
    for key in ("x", "edge_index", "y", "train_mask", "val_mask",
                "test_mask"):
        assert torch.equal(a[key], b[key]), key
    assert not torch.equal(a.y, c.y)
    assert not torch.equal(a.x, c.x)
    assert (a.edge_index.shape != c.edge_index.shape
            or not torch.equal(a.edge_index, c.edge_index))


def test_global_rng_untouched():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    power_law_graph(2_000, 5.0, 4, 3, seed=0)
    assert torch.equal(state, torch.get_rng_state())


@pytest.mark.parametrize("homophily", [0.3, 0.7])
def test_homophily_as_configured(homophily):
    data = power_law_graph(20_000, 10.0, 4, 10, homophily=homophily, seed=2)
    h = graph_stats(data)["edge_homophily"]
    assert abs(h - homophily) < 0.03, h


def test_homophily_of_er_is_chance_level():
    data = preset("er")
    h = graph_stats(data)["edge_homophily"]
    assert abs(h - 1 / 16) < 0.02, h


def test_homophily_of_presets_roughly_as_configured():
    assert graph_stats(preset("arxiv"))["edge_homophily"] > 0.55
    assert graph_stats(preset("products"))["edge_homophily"] > 0.65


def test_masks_disjoint_and_covering():
    for name in PRESETS:
        data = preset(name)
        tr, va, te = data.train_mask, data.val_mask, data.test_mask
        total = tr.long() + va.long() + te.long()
        assert bool((total == 1).all()), name
    data = preset("products")
    n = data.num_nodes
    train, val = int(data.train_mask.sum()), int(data.val_mask.sum())
    assert abs(train - round(n * 196_615 / 2_449_029)) <= 1
    assert abs(val - round(n * 39_323 / 2_449_029)) <= 1


def test_partial_split():
    data = power_law_graph(1_000, 4.0, 4, 3, split=(0.5, 0.1, 0.1))
    assert int(data.train_mask.sum()) == 500
    assert int(data.val_mask.sum()) == 100
    assert int(data.test_mask.sum()) == 100
    overlap = (data.train_mask.long() + data.val_mask.long()
               + data.test_mask.long())
    assert int(overlap.max()) == 1


def test_get_dataset():
    assert set(DATASET_NAMES) == {"products", "arxiv", "reddit", "hub", "er",
                                  "power_law_1m", "papers100m", "mag",
                                  "user_item"}
    data = get_dataset("er", scale=0.002, seed=1)
    assert data.synthetic and data.name.startswith("erdos_renyi")
    ref = erdos_renyi(scale=0.002, seed=1)
    assert torch.equal(data.edge_index, ref.edge_index)
    assert get_dataset("products_like", scale=0.001).name.startswith(
        "products_like")
    with pytest.raises(ValueError) as info:
        get_dataset("not-a-graph")
    for name in DATASET_NAMES:
        assert name in str(info.value)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        products_like(scale=0.0)
    with pytest.raises(ValueError):
        products_like(scale=1.5)
    with pytest.raises(ValueError):
        power_law_graph(100, 4.0, 4, 3, homophily=1.5)
    with pytest.raises(ValueError):
        power_law_graph(100, 4.0, 4, 3, split=(0.8, 0.3, 0.0))
    with pytest.raises(ValueError):
        power_law_graph(0, 4.0, 4, 3)


def test_graph_stats_on_a_handmade_graph():
    edge_index = torch.tensor([[1, 2, 3, 0], [0, 0, 0, 1]])
    data = Data(x=torch.zeros(4, 2), edge_index=edge_index,
                y=torch.tensor([0, 0, 1, 0]), num_nodes=4)
    stats = graph_stats(data)
    assert stats["num_nodes"] == 4 and stats["num_edges"] == 4
    assert stats["avg_in_degree"] == 1.0
    assert stats["max_in_degree"] == 3
    assert stats["edge_homophily"] == 0.75
    assert stats["zero_in_degree_frac"] == 0.5
    assert stats["synthetic"] is False
    stats = graph_stats(preset("products"))
    assert stats["synthetic"] is True
    assert stats["num_classes"] == 47 and stats["num_features"] == 100


def _least_squares_accuracy(x, y, train, test, num_classes):
    x = torch.cat([x, torch.ones(x.size(0), 1)], dim=1).double()
    target = torch.nn.functional.one_hot(y, num_classes).double()
    a = x[train]
    reg = 1e-2 * torch.eye(a.size(1), dtype=a.dtype)
    w = torch.linalg.solve(a.T @ a + reg, a.T @ target[train])
    return float(((x[test] @ w).argmax(1) == y[test]).double().mean())


def test_labels_learnable_from_neighbourhoods():
    data = power_law_graph(20_000, 10.0, 64, 10, homophily=0.7, seed=1)
    row, col = data.edge_index
    summed = torch.zeros_like(data.x).index_add_(0, col, data.x[row])
    mean = summed / in_degree(data).clamp(min=1).unsqueeze(1)
    args = (data.y, data.train_mask, data.test_mask, 10)
    acc_x = _least_squares_accuracy(data.x, *args)
    acc_nb = _least_squares_accuracy(torch.cat([data.x, mean], 1), *args)
    assert acc_x > 0.2  # features carry signal ...
    assert acc_nb > acc_x + 0.15, (acc_x, acc_nb)  # ... neighbours much more


def test_papers100m_like_shape():
    from pyg_fusesample.datasets import papers100m_like
    data = papers100m_like(scale=0.0005, seed=0)
    n = data.num_nodes
    assert n == round(111_059_956 * 0.0005) and data.synthetic
    assert data.x.size(1) == 128 and int(data.y.max()) < 172
    assert abs(data.num_edges / n - 1_615_685_872 / 111_059_956) < 1.0
    labelled = data.train_mask | data.val_mask | data.test_mask
    assert abs(float(data.train_mask.float().mean()) - 1_207_179 / 111_059_956) < 2e-3
    assert float(labelled.float().mean()) < 0.03  # most papers in no split


@pytest.mark.cuda
def test_features_generated_pinned():
    # pin_memory=True: x in page-locked memory from the start (no copy),
    # the same values as the default.
    if not torch.cuda.is_available():
        pytest.skip('needs a CUDA GPU')
    from pyg_fusesample.datasets import papers100m_like
    pinned = papers100m_like(scale=0.0005, pin_memory=True)
    plain = papers100m_like(scale=0.0005)
    assert pinned.x.is_pinned() and not plain.x.is_pinned()
    assert torch.equal(pinned.x, plain.x)
    assert pinned.x.pin_memory().data_ptr() == pinned.x.data_ptr()
