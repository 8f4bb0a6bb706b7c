"""Loaders: :class:`FusedNeighborLoader`, :class:`FusedLinkNeighborLoader`,
:class:`FusedGraphSAINTRandomWalkSampler`, :class:`FusedShaDowKHopSampler`,
:class:`LayerWiseLoader` (LADIES, FastGCN);
:func:`rank_seeds` and :func:`rank_seed` for data-parallel (DDP) training."""
from .fused_graph_saint import FusedGraphSAINTRandomWalkSampler
from .fused_link_neighbor_loader import FusedLinkNeighborLoader
from .fused_neighbor_loader import FusedNeighborLoader, SeededBatchSampler
from .fused_shadow import FusedShaDowKHopSampler
from .layer_wise_loader import LayerWiseLoader
from .distributed import rank_seed, rank_seeds

__all__ = ['FusedNeighborLoader', 'FusedLinkNeighborLoader',
           'SeededBatchSampler', 'FusedGraphSAINTRandomWalkSampler',
           'FusedShaDowKHopSampler', 'LayerWiseLoader', 'rank_seeds',
           'rank_seed']
