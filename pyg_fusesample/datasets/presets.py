"""Stand-ins for ogbn-products, ogbn-arxiv, Reddit, ogbn-papers100M and a
1M-node CPU graph.

Each preset is :func:`~.power_law.power_law_graph` with parameters chosen so
that size, average and maximum in-degree, degree skew, label homophily,
feature width, class count and split match the real dataset
(:func:`power_law_1m`: products-like statistics at 1M nodes).
"""

from __future__ import annotations

from typing import Tuple

from torch_geometric.data import Data

from .power_law import power_law_graph
from .scaling import _preset_name, _scaled, _scaled_max_degree


def _split_from_counts(train: int, val: int, total: int) -> Tuple[float, float, float]:
    """(train, val, test) fractions of a real data set's split sizes."""
    return (train / total, val / total, 1.0 - (train + val) / total)


# ogbn-products: 2,449,029 nodes, 123,718,280 directed (= 2 x 61,859,140
# undirected) edges, 100 features, 47 classes, 196,615 / 39,323 / 2,213,091.
_PRODUCTS_N = 2_449_029
_PRODUCTS_E = 123_718_280


def products_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **ogbn-products** (Amazon co-purchase graph).

    Statistics at ``scale=1``: 2,449,029 nodes, ~123.7M directed edges
    (undirected, both directions stored; average in-degree ~50.5), expected
    maximum in-degree ~20,605, power-law exponent 2.1, edge homophily 0.81,
    100 features, 47 Zipf-skewed classes, split 196,615 train / 39,323 val /
    rest test (~8.0% / 1.6% / 90.4%).  ``scale`` multiplies the node count
    at constant average degree (the maximum degree shrinks with
    ``sqrt(scale)``).  Purely synthetic (``data.synthetic = True``); extra
    keyword arguments override :func:`power_law_graph` parameters.

    Measured (seed 0, full scale): 123,713,516 edges (avg in-degree 50.52),
    max in-degree 21,159, median 17, edge homophily 0.810; ~41 s and
    3.6 GiB peak RSS on 2 CPU cores.
    """
    n = _scaled(_PRODUCTS_N, scale)
    params = dict(
        num_nodes=n, avg_degree=_PRODUCTS_E / _PRODUCTS_N, num_features=100,
        num_classes=47, max_degree=_scaled_max_degree(20_605, scale, n),
        exponent=2.1, homophily=0.81, feature_noise=6.0, class_skew=1.0,
        undirected=True,
        split=_split_from_counts(196_615, 39_323, _PRODUCTS_N),
        seed=seed, name=_preset_name("products_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


_ARXIV_N = 169_343
_ARXIV_E = 1_166_243


def arxiv_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **ogbn-arxiv** (directed citation graph).

    Statistics at ``scale=1``: 169,343 nodes, ~1,166,243 directed edges
    (average in-degree ~6.9), heavy-tailed in-degree with expected maximum
    ~13,155 (exponent 2.1), milder out-degree tail (exponent 3, max ~500),
    edge homophily 0.65, 128 features, 40 Zipf-skewed classes, split
    90,941 / 29,799 / rest (~53.7% / 17.6% / 28.7%).  ``scale`` multiplies
    the node count at constant average degree.  Purely synthetic
    (``data.synthetic = True``); extra keyword arguments override
    :func:`power_law_graph` parameters.

    Measured (seed 0, full scale): 1,166,212 edges, max in-degree 13,046,
    15% of nodes never cited, edge homophily 0.650; ~1 s.
    """
    n = _scaled(_ARXIV_N, scale)
    params = dict(
        num_nodes=n, avg_degree=_ARXIV_E / _ARXIV_N, num_features=128,
        num_classes=40, max_degree=_scaled_max_degree(13_155, scale, n),
        exponent=2.1, source_exponent=3.0,
        max_out_degree=_scaled_max_degree(500, scale, n),
        homophily=0.65, feature_noise=4.0, class_skew=0.7, undirected=False,
        split=_split_from_counts(90_941, 29_799, _ARXIV_N),
        seed=seed, name=_preset_name("arxiv_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


# ogbn-papers100M (OGB's master.csv and paper): 111,059,956 papers,
# 1,615,685,872 directed citation edges, 128 features, 172 classes, split
# 1,207,179 / 125,265 / 214,338 (the other ~98.6% of the nodes unlabelled).
_PAPERS_N = 111_059_956
_PAPERS_E = 1_615_685_872
_PAPERS_SPLIT = (1_207_179, 125_265, 214_338)


def papers100m_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **ogbn-papers100M** (directed citation graph).

    Statistics at ``scale=1``: 111,059,956 nodes, ~1.6B directed edges
    (average in-degree ~14.5), 128 features, 172 classes, split
    1,207,179 / 125,265 / 214,338 with every other node in no split (as
    the real graph's unlabelled papers). The degree shape and homophily are
    :func:`arxiv_like`'s (ogbn-arxiv is a citation graph from the same
    source); the heaviest in-degree is the generator's default,
    ``sqrt(E)``. ``scale`` multiplies the node count at constant average
    degree. Edges are drawn in fixed-size chunks, so the generator's
    temporaries stay bounded; the graph itself at full scale is ~26 GB of
    int64 edges and ~57 GB of float32 features: use a small ``scale``
    unless the host has room. Purely synthetic (``data.synthetic = True``).
    """
    n = _scaled(_PAPERS_N, scale)
    train, val, test = (c / _PAPERS_N for c in _PAPERS_SPLIT)
    params = dict(
        num_nodes=n, avg_degree=_PAPERS_E / _PAPERS_N, num_features=128,
        num_classes=172, exponent=2.1, source_exponent=3.0, homophily=0.65,
        feature_noise=4.0, class_skew=0.7, undirected=False,
        split=(train, val, test), seed=seed,
        name=_preset_name("papers100m_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


_REDDIT_N = 232_965
_REDDIT_E = 114_615_892


def reddit_like(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic stand-in for **Reddit** (GraphSAGE post-to-post graph).

    Statistics at ``scale=1``: 232,965 nodes, ~114.6M directed edges
    (undirected, both directions stored; dense, average in-degree ~492),
    expected maximum in-degree ~21,657, a broad but lighter tail than the
    sparse graphs (exponent 3; a heavier one cannot be this dense *and*
    this homophilous without duplicate edges), edge homophily 0.76, 602
    features, 41 mildly skewed classes, split 153,431 / 23,831 / rest
    (~65.9% / 10.2% / 23.9%).  At full scale the features alone are
    232,965 x 602 float32 (~560 MB).  ``scale`` multiplies the node count at
    constant average degree (tiny versions are very dense and fall short
    of the homophily).  Purely synthetic (``data.synthetic = True``); extra
    keyword arguments override :func:`power_law_graph` parameters.

    Measured (seed 0, full scale): 114,475,398 edges (avg in-degree 491.4),
    max in-degree 21,550, median 357, edge homophily 0.761; ~30-50 s and
    3.1 GiB peak RSS on 2 CPU cores.
    """
    n = _scaled(_REDDIT_N, scale)
    params = dict(
        num_nodes=n, avg_degree=_REDDIT_E / _REDDIT_N, num_features=602,
        num_classes=41, max_degree=_scaled_max_degree(21_657, scale, n),
        exponent=3.0, homophily=0.76, feature_noise=8.0, class_skew=0.5,
        undirected=True,
        split=_split_from_counts(153_431, 23_831, _REDDIT_N),
        seed=seed, name=_preset_name("reddit_like", scale))
    params.update(kwargs)
    return power_law_graph(**params)


def power_law_1m(seed: int = 0, scale: float = 1.0, **kwargs) -> Data:
    """Synthetic 1M-node power-law graph: the CPU benchmark graph.

    Products-like statistics at a size that fits CPU benchmarks: 1,000,000
    nodes, 50M directed edges (undirected, both directions stored; average
    in-degree 50), expected maximum in-degree ~10,000 (exponent 2.1), edge
    homophily 0.8, 100 features, 47 uniform classes, split 60/20/20.
    ``scale`` multiplies the node count.  Purely synthetic
    (``data.synthetic = True``); extra keyword arguments override
    :func:`power_law_graph` parameters.

    Measured (seed 0): 49,995,242 edges, max in-degree 10,228, median 18,
    edge homophily 0.800; ~20-40 s and 2 GiB peak RSS on 2 CPU cores.
    """
    n = _scaled(1_000_000, scale)
    params = dict(
        num_nodes=n, avg_degree=50.0, num_features=100, num_classes=47,
        max_degree=_scaled_max_degree(10_000, scale, n), exponent=2.1,
        homophily=0.8, feature_noise=6.0, class_skew=0.0, undirected=True,
        split=(0.6, 0.2, 0.2), seed=seed,
        name=_preset_name("power_law_1m", scale))
    params.update(kwargs)
    return power_law_graph(**params)
