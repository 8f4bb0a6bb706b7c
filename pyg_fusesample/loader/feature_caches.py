"""The loaders' ``feature_cache`` argument: which node attributes a batch
gathers through a :class:`~pyg_fusesample.sampler.GPUFeatureCache`."""
from typing import Dict, Optional

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from ..sampler import GPUFeatureCache


def check_feature_cache(feature_cache, data, device: torch.device,
                        transform_sampler_output, num_workers: int
                        ) -> Dict[Optional[str], Dict[str, GPUFeatureCache]]:
    # The node attributes the batches gather through a GPUFeatureCache, as
    # {node type: {attribute: cache}} (node type None for a Data), in the
    # main process. A Data's are keyed by attribute name, a HeteroData's by
    # (node type, attribute), as a FeatureStore names them.
    if not feature_cache:
        return {}
    hetero = isinstance(data, HeteroData)
    key_ok = ((lambda k: isinstance(k, tuple) and len(k) == 2
               and all(isinstance(part, str) for part in k)) if hetero
              else (lambda k: isinstance(k, str)))
    if not isinstance(feature_cache, dict) or not all(
            key_ok(k) and isinstance(v, GPUFeatureCache)
            for k, v in feature_cache.items()):
        raise TypeError("'feature_cache' must map " + (
            "(node type, attribute) pairs" if hetero else "attribute names")
            + " to GPUFeatureCache objects")
    if type(data) not in (Data, HeteroData) or \
            transform_sampler_output is not None:
        raise NotImplementedError("'feature_cache' serves Data and "
                                  "HeteroData batches (no "
                                  "transform_sampler_output) for now")
    if num_workers > 0:
        raise ValueError("'feature_cache' gathers in the main process: use "
                         "num_workers=0")
    out: Dict[Optional[str], Dict[str, GPUFeatureCache]] = {}
    for key, cache in feature_cache.items():
        node_type, attr = key if hetero else (None, key)
        if hetero and node_type not in data.node_types:
            raise ValueError(f"'feature_cache' names node type "
                             f"'{node_type}', which 'data' does not have "
                             f"({', '.join(map(repr, data.node_types))})")
        store = data[node_type] if hetero else data
        value = store.get(attr)
        if not isinstance(value, Tensor) or not store.is_node_attr(attr):
            raise ValueError(f"'feature_cache' names '{attr}', which is not a "
                             f"node attribute of 'data"
                             + (f"['{node_type}']'" if hetero else "'"))
        if cache.num_rows != value.size(0) or cache.src.shape != value.shape:
            raise ValueError(f"the cache of '{attr}' holds rows of shape "
                             f"{list(cache.src.shape)}, but the attribute "
                             f"has shape {list(value.shape)}")
        if cache.device != device:
            raise ValueError(f"the cache of '{attr}' is on {cache.device}, but "
                             f"the loader samples on {device}")
        out.setdefault(node_type, {})[attr] = cache
    return out
