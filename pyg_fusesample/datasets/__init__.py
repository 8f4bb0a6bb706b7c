"""Synthetic graph generators with real graphs' statistics.

Every dataset produced here is SYNTHETIC (``data.synthetic = True``, see
``data.name``); see :mod:`pyg_fusesample.datasets.synthetic` for the model.
This subpackage depends only on torch and torch_geometric, so it can be used
without the compiled extension.
"""

from .synthetic import (  # __all__: the one list of the public names
    __all__,
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
