"""Synthetic graph generators with real graphs' statistics.

Every graph returned here is SYNTHETIC: it is drawn from a random model whose
parameters were chosen so that its size, average in-degree, maximum in-degree,
degree skew, label homophily, feature width, class count and train/val/test
split resemble a well-known real dataset.  None of them contains any real data,
and every returned :class:`~torch_geometric.data.Data` (or
:class:`~torch_geometric.data.HeteroData`) carries
``data.synthetic = True`` and a ``data.name`` such as ``"products_like"`` so
that benchmarks, logs and plots can label the numbers as coming from a
synthetic stand-in.

Public generators: :mod:`.power_law` (the core model), :mod:`.presets` (real
graphs' stand-ins), :mod:`.stressors`, and the heterogeneous stand-ins
:mod:`.mag_like` (ogbn-mag) and :mod:`.user_item` (MovieLens-100k);
:mod:`.registry` names them and
:mod:`.stats` measures any graph.  The model is described where it is built:
:mod:`.chung_lu`, :mod:`.degrees`, :mod:`.edge_sampler`, :mod:`.edges`,
:mod:`.homophily`, :mod:`.labels`, :mod:`.features`, :mod:`.splits`.
This subpackage depends only on torch and torch_geometric, so it can be used
without the compiled extension.
"""

from .mag_like import mag_like
from .power_law import power_law_graph
from .presets import (arxiv_like, papers100m_like, power_law_1m,
                      products_like, reddit_like)
from .registry import DATASET_NAMES, HETERO_DATASET_NAMES, get_dataset
from .stats import graph_stats
from .stressors import erdos_renyi, hub_skewed
from .user_item import user_item_like

__all__ = [
    "power_law_graph",
    "products_like",
    "arxiv_like",
    "reddit_like",
    "papers100m_like",
    "hub_skewed",
    "erdos_renyi",
    "power_law_1m",
    "mag_like",
    "user_item_like",
    "get_dataset",
    "graph_stats",
    "DATASET_NAMES",
    "HETERO_DATASET_NAMES",
]
