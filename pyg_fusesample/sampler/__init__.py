"""Samplers: :class:`FusedNeighborSampler` and its CSC graph store;
:class:`GPUFeatureCache`, hot feature rows on the GPU in front of host ones."""
from .graph_store import CSCGraph, build_csc
from .fused_neighbor_sampler import FusedNeighborSampler, PendingSamplerOutput
from .feature_cache import GPUFeatureCache

__all__ = ['CSCGraph', 'build_csc', 'FusedNeighborSampler',
           'PendingSamplerOutput', 'GPUFeatureCache']
