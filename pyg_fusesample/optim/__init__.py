"""Optimizers whose step is one op (``torch.ops.fusesample``)."""
from .sparse_adam import FusedSparseAdam

__all__ = ['FusedSparseAdam']
