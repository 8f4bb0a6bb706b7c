"""Loaders: :class:`FusedNeighborLoader`, :class:`FusedLinkNeighborLoader`."""
from .fused_link_neighbor_loader import FusedLinkNeighborLoader
from .fused_neighbor_loader import FusedNeighborLoader, SeededBatchSampler

__all__ = ['FusedNeighborLoader', 'FusedLinkNeighborLoader',
           'SeededBatchSampler']
