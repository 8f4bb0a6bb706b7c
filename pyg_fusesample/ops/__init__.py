"""Thin Python wrappers over ``torch.ops.fusesample.*`` with fake kernels."""
from .aggregate import SampleAggregateOutput, sample_aggregate
from .sampling import (NeighborSampleOutput, csc_from_coo, gather_rows,
                       induced_subgraph, neighbor_sample)

__all__ = ['NeighborSampleOutput', 'neighbor_sample', 'induced_subgraph',
           'csc_from_coo', 'gather_rows', 'SampleAggregateOutput',
           'sample_aggregate']
