"""Sparse adjacency structures shared by the ops, the scheduler and the samplers."""
from .csr_graph import CSRGraph
from .walk_graph import WalkGraph
from .padded_batch import BatchCapacity, PaddedBatch

__all__ = ['CSRGraph', 'WalkGraph', 'BatchCapacity', 'PaddedBatch']
