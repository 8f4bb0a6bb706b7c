"""Thin Python wrappers over ``torch.ops.fusesample.*`` with fake kernels."""
from .aggregate import SampleAggregateOutput, sample_aggregate
from .sampling import (NeighborSampleOutput, PendingNeighborSample,
                       csc_from_coo, gather_rows, gather_rows_list,
                       induced_subgraph,
                       neighbor_sample, neighbor_sample_async)

__all__ = ['NeighborSampleOutput', 'neighbor_sample', 'PendingNeighborSample',
           'neighbor_sample_async', 'induced_subgraph',
           'csc_from_coo', 'gather_rows', 'gather_rows_list', 'SampleAggregateOutput',
           'sample_aggregate']
