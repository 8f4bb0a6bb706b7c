"""pyg_fusesample: fused, GPU-resident neighbour sampling for PyTorch Geometric.

* :class:`FusedNeighborLoader`, :class:`FusedLinkNeighborLoader` and
  :class:`FusedNeighborSampler` -- drop-ins for PyG's ``NeighborLoader``,
  ``LinkNeighborLoader`` and their sampler (``Data`` and ``HeteroData``).
* :class:`FusedGraphSAINTRandomWalkSampler`, :class:`FusedShaDowKHopSampler`
  -- drop-ins for PyG's subgraph samplers, sampling on the graph's device;
  :class:`LayerWiseLoader` -- layer-wise (LADIES, FastGCN) mini-batches.
* :class:`FusedSAGEConv`, :class:`FusedGraphSAGE` -- sampling fused into the
  aggregation, exact backward; :class:`CapturedStep` replays a whole training
  step from a CUDA graph.
* :class:`AutoSpMMConv` -- GCN-style aggregation on the SpMM kernel the
  :mod:`~pyg_fusesample.autotune` scheduler picks, never slower than cuSPARSE.
* :class:`FusedNode2Vec` -- a drop-in for PyG's ``Node2Vec`` whose walks run
  on ``ops.random_walk`` (CPU or GPU, no pyg-lib);
  :class:`~pyg_fusesample.optim.FusedSparseAdam` -- ``SparseAdam``'s update
  in one op a parameter.
* :func:`rank_seeds`, :func:`rank_seed` -- each rank's shard of the seeds
  and seed of its batch stream, for DDP training (one process per GPU).
* :mod:`pyg_fusesample.ops` -- the ``torch.ops.fusesample`` ops.
* :mod:`pyg_fusesample.datasets` -- synthetic graphs with real graphs' statistics.
"""
from . import _extension  # noqa: F401  (clear error if the extension is missing)
from ._version import __version__
from . import ops
from . import datasets
from .sampler import FusedNeighborSampler
from .loader import (FusedGraphSAINTRandomWalkSampler, FusedLinkNeighborLoader,
                     FusedNeighborLoader, FusedShaDowKHopSampler,
                     LayerWiseLoader)
from .loader import rank_seed, rank_seeds
from . import nn
from . import optim
from .nn import (AutoSpMMConv, CapturedBatchStep, CapturedStep,
                 FusedGraphSAGE, FusedNode2Vec, FusedSAGEConv)

__all__ = [
    'FusedNeighborLoader',
    'FusedLinkNeighborLoader',
    'FusedNeighborSampler',
    'FusedGraphSAINTRandomWalkSampler',
    'FusedShaDowKHopSampler',
    'LayerWiseLoader',
    'FusedSAGEConv',
    'FusedGraphSAGE',
    'CapturedStep',
    'CapturedBatchStep',
    'AutoSpMMConv',
    'FusedNode2Vec',
    'rank_seeds',
    'rank_seed',
    'ops',
    'nn',
    'datasets',
    '__version__',
]
