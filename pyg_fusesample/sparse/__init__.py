"""Sparse adjacency structures shared by the SpMM/SDDMM ops and the scheduler."""
from .csr_graph import CSRGraph

__all__ = ['CSRGraph']
