"""Builds a synthetic dataset by its short name (``get_dataset``)."""

from __future__ import annotations

from typing import Callable, Dict, Tuple

from torch_geometric.data import Data

from .presets import arxiv_like, power_law_1m, products_like, reddit_like
from .stressors import erdos_renyi, hub_skewed


_REGISTRY: Dict[str, Callable[..., Data]] = {
    "products": products_like,
    "arxiv": arxiv_like,
    "reddit": reddit_like,
    "hub": hub_skewed,
    "er": erdos_renyi,
    "power_law_1m": power_law_1m,
}
DATASET_NAMES: Tuple[str, ...] = tuple(_REGISTRY)


def get_dataset(name: str, **kwargs) -> Data:
    """Build a synthetic dataset by name.

    Valid names: ``'products'`` (:func:`products_like`), ``'arxiv'``
    (:func:`arxiv_like`), ``'reddit'`` (:func:`reddit_like`), ``'hub'``
    (:func:`hub_skewed`), ``'er'`` (:func:`erdos_renyi`) and
    ``'power_law_1m'`` (:func:`power_law_1m`).  The function names
    themselves (e.g. ``'products_like'``) are accepted too.  Keyword
    arguments (``seed``, ``scale``, ...) are passed on.  Every result is
    synthetic (``data.synthetic = True``).

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
