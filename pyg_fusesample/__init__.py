"""pyg_fusesample: fused, GPU-resident neighbour sampling for PyTorch Geometric.

* :class:`FusedNeighborLoader`, :class:`FusedLinkNeighborLoader` and
  :class:`FusedNeighborSampler` -- drop-ins for PyG's ``NeighborLoader``,
  ``LinkNeighborLoader`` and their sampler (``Data`` and ``HeteroData``).
* :class:`FusedSAGEConv`, :class:`FusedGraphSAGE` -- sampling fused into the
  aggregation, exact backward; :class:`CapturedStep` replays a whole training
  step from a CUDA graph.
* :class:`AutoSpMMConv` -- GCN-style aggregation on the SpMM kernel the
  :mod:`~pyg_fusesample.autotune` scheduler picks, never slower than cuSPARSE.
* :mod:`pyg_fusesample.ops` -- the ``torch.ops.fusesample`` ops.
* :mod:`pyg_fusesample.datasets` -- synthetic graphs with real graphs' statistics.
"""
from . import _extension  # noqa: F401  (clear error if the extension is missing)
from ._version import __version__
from . import ops
from . import datasets
from .sampler import FusedNeighborSampler
from .loader import FusedLinkNeighborLoader, FusedNeighborLoader
from . import nn
from .nn import AutoSpMMConv, CapturedStep, FusedGraphSAGE, FusedSAGEConv

__all__ = [
    'FusedNeighborLoader',
    'FusedLinkNeighborLoader',
    'FusedNeighborSampler',
    'FusedSAGEConv',
    'FusedGraphSAGE',
    'CapturedStep',
    'AutoSpMMConv',
    'ops',
    'nn',
    'datasets',
    '__version__',
]
