"""pyg_fusesample: fused, GPU-ready neighbour sampling for PyTorch Geometric.

* :class:`~pyg_fusesample.loader.FusedNeighborLoader` -- a drop-in for
  :class:`torch_geometric.loader.NeighborLoader`.
* :class:`~pyg_fusesample.nn.FusedSAGEConv` and
  :class:`~pyg_fusesample.nn.FusedGraphSAGE` -- sampling fused into the
  aggregation, exact backward.
* :mod:`pyg_fusesample.ops` -- the ``torch.ops.fusesample`` ops.
* :mod:`pyg_fusesample.datasets` -- synthetic graphs with real graphs' statistics.
"""
from . import _extension  # noqa: F401  (clear error if the extension is missing)
from . import ops
from . import datasets
from .sampler import FusedNeighborSampler
from .loader import FusedNeighborLoader
from . import nn
from .nn import FusedGraphSAGE, FusedSAGEConv

__version__ = '0.1.0'

__all__ = ['ops', 'datasets', 'FusedNeighborSampler', 'FusedNeighborLoader',
           'nn', 'FusedSAGEConv', 'FusedGraphSAGE',
           '__version__']
