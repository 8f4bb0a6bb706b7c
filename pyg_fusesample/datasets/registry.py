"""Builds a synthetic dataset by its short name (``get_dataset``)."""

from __future__ import annotations

from typing import Callable, Dict, Tuple, Union

from torch_geometric.data import Data, HeteroData

from .mag_like import mag_like
from .presets import (arxiv_like, papers100m_like, power_law_1m,
                      products_like, reddit_like)
from .stressors import erdos_renyi, hub_skewed
from .user_item import user_item_like


_REGISTRY: Dict[str, Callable[..., Union[Data, HeteroData]]] = {
    "products": products_like,
    "arxiv": arxiv_like,
    "reddit": reddit_like,
    "hub": hub_skewed,
    "er": erdos_renyi,
    "power_law_1m": power_law_1m,
    "papers100m": papers100m_like,
    "mag": mag_like,
    "user_item": user_item_like,
}
DATASET_NAMES: Tuple[str, ...] = tuple(_REGISTRY)
# The names whose graphs are HeteroData (callers that need a homogeneous
# Data skip these).
HETERO_DATASET_NAMES: Tuple[str, ...] = ("mag", "user_item")


def get_dataset(name: str, **kwargs) -> Union[Data, HeteroData]:
    """Build a synthetic dataset by name.

    Valid names: ``'products'`` (:func:`products_like`), ``'arxiv'``
    (:func:`arxiv_like`), ``'reddit'`` (:func:`reddit_like`), ``'hub'``
    (:func:`hub_skewed`), ``'er'`` (:func:`erdos_renyi`) and
    ``'power_law_1m'`` (:func:`power_law_1m`) build a homogeneous
    :class:`~torch_geometric.data.Data`; ``'mag'`` (:func:`mag_like`) and
    ``'user_item'`` (:func:`user_item_like`) a
    :class:`~torch_geometric.data.HeteroData` (:data:`HETERO_DATASET_NAMES`).
    The function names themselves (e.g. ``'products_like'``) are accepted
    too.  Keyword arguments (``seed``, ``scale``, ...) are passed on.  Every
    result is synthetic (``data.synthetic = True``).

    Raises:
        ValueError: for an unknown name; the message lists the valid names.
    """
    key = str(name).strip().lower().replace("-", "_")
    fn = _REGISTRY.get(key)
    if fn is None:
        fn = {f.__name__: f for f in _REGISTRY.values()}.get(key)
    if fn is None:
        raise ValueError(f"Unknown synthetic dataset {name!r}; valid names: "
                         f"{', '.join(repr(k) for k in DATASET_NAMES)}")
    return fn(**kwargs)
