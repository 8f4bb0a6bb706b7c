"""Loaders: :class:`FusedNeighborLoader`."""
from .fused_neighbor_loader import FusedNeighborLoader, SeededBatchSampler

__all__ = ['FusedNeighborLoader', 'SeededBatchSampler']
