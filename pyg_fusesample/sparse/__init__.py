"""Sparse adjacency structures shared by the ops, the scheduler and the samplers."""
from .csr_graph import CSRGraph
from .walk_graph import WalkGraph

__all__ = ['CSRGraph', 'WalkGraph']
