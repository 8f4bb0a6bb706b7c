"""Core generator: a Chung-Lu power-law graph with homophilous labels."""

from __future__ import annotations

from typing import Optional

from torch import Tensor
from torch_geometric.data import Data

from .chung_lu import _build, _check_positive_int
from .degrees import _rank_weights
from .splits import SplitT


def power_law_graph(num_nodes: int, avg_degree: float, num_features: int,
                    num_classes: int, max_degree: Optional[float] = None,
                    exponent: float = 2.1, homophily: float = 0.7,
                    feature_noise: float = 5.0, class_skew: float = 0.0,
                    undirected: bool = False,
                    source_exponent: Optional[float] = None,
                    max_out_degree: Optional[float] = None,
                    dedup: bool = True,
                    split: SplitT = (0.6, 0.2, 0.2), seed: int = 0,
                    name: Optional[str] = None,
                    pin_memory: bool = False) -> Data:
    r"""A synthetic Chung-Lu power-law graph with homophilous labels.

    This is the core generator behind all presets.  It mimics the statistics
    of real sparse graphs (heavy-tailed in-degree, label homophily, noisy
    class-dependent features); it contains no real data and the result is
    marked ``data.synthetic = True``.

    Args:
        num_nodes: Number of nodes ``N``.
        avg_degree: Target average in-degree; ``E = round(N * avg_degree)``
            directed edges are drawn (with ``dedup``, typically <0.1% fewer
            remain: duplicates that cannot be replaced are dropped).
        num_features: Feature width ``F``.
        num_classes: Number of classes ``C``.
        max_degree: Expected in-degree of the heaviest node (the weights'
            offset is solved for it); the realised maximum is usually within
            a few percent.  ``None`` uses ``sqrt(E)``; capped at ``N - 1``.
        exponent: Power-law exponent of the in-degree tail
            (``P(k) ~ k ** -exponent``); ``None`` gives uniform weights.
        homophily: Target edge homophily, the fraction of edges whose
            endpoints share a label; realised to within ~0.01 unless it is
            below the chance level (which is then what you get) or
            infeasible without duplicates (dense graphs whose classes are
            not much larger than the degrees).
        feature_noise: Std of the Gaussian noise added to the unit-variance
            class centroids.
        class_skew: ``0`` for uniform labels, otherwise Zipf exponent of the
            class frequencies (class 0 most frequent).
        undirected: Draw ``E // 2`` pairs and store both directions (in-degree
            equals out-degree).
        source_exponent: Directed graphs only.  ``None`` draws sources with
            the same weights as targets (independently); a float gives the
            out-degrees their own power law with this exponent and
            ``max_out_degree`` (default ``sqrt(E)``).
        max_out_degree: See ``source_exponent``.
        dedup: Remove duplicate edges, replacing each by a new edge that
            keeps one endpoint (see the module docstring).  ``False`` keeps
            the raw multigraph draw (exact edge count and homophily in
            expectation, a few percent duplicates).
        split: ``(train, val, test)`` fractions; if they sum to 1 the test
            set is all remaining nodes.
        seed: Seed of the local generator; same seed, same tensors.
        name: ``data.name``; defaults to ``"power_law(N=..,d=..)"``.
        pin_memory: Generate ``x`` straight into pinned (page-locked) host
            memory, for a GPU to read in place: ``x.pin_memory()`` would copy
            it, which for papers100M's 57 GB of features does not fit a
            128 GiB host beside the graph. Needs CUDA. Same values.

    Returns:
        ``Data(x float32 [N, F], edge_index int64 [2, E], y int64 [N],
        train_mask, val_mask, test_mask)`` plus ``name``, ``synthetic=True``
        and ``seed``.  ``edge_index[0]`` is the source and ``edge_index[1]``
        the target; edges are in no meaningful order.
    """
    num_nodes = _check_positive_int("num_nodes", num_nodes)
    if avg_degree < 0:
        raise ValueError(f"avg_degree must be >= 0, got {avg_degree}")
    num_edges = int(round(num_nodes * avg_degree))
    if name is None:
        name = f"power_law(N={num_nodes},d={avg_degree:g})"
    avg = max(avg_degree, 1e-12)

    def in_weights() -> Tensor:
        return _rank_weights(num_nodes, avg, max_degree, exponent)

    out_weights = None
    if source_exponent is not None:
        if undirected:
            raise ValueError("source_exponent only applies to directed graphs")

        def out_weights() -> Tensor:
            return _rank_weights(num_nodes, avg, max_out_degree,
                                 source_exponent)

    return _build(num_nodes=num_nodes, num_edges=num_edges,
                  num_features=num_features, num_classes=num_classes,
                  in_weights=in_weights, out_weights=out_weights,
                  homophily=homophily, feature_noise=feature_noise,
                  class_skew=class_skew, undirected=undirected, dedup=dedup,
                  split=split, seed=seed, name=name, pin_memory=pin_memory)
