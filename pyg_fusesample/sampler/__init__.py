"""Samplers: :class:`FusedNeighborSampler` and its CSC graph store."""
from .graph_store import CSCGraph, build_csc
from .fused_neighbor_sampler import FusedNeighborSampler, PendingSamplerOutput

__all__ = ['CSCGraph', 'build_csc', 'FusedNeighborSampler',
           'PendingSamplerOutput']
