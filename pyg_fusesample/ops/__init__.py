"""Thin Python wrappers over ``torch.ops.fusesample.*`` with fake kernels."""
from .aggregate import SampleAggregateOutput, sample_aggregate
from .keyed_draws import KeyedDraws, keyed_draws
from .prefix_sums import segment_cumsum
from .layer import (LayerBatchOutput, LayerSampleOutput, layer_batch,
                    layer_sample)
from .sampling import (NeighborSampleOutput, PendingNeighborSample,
                       csc_from_coo, gather_rows, gather_rows_cached,
                       gather_rows_list,
                       induced_subgraph,
                       neighbor_sample, neighbor_sample_async)
from .sage_tree import sage_tree
from .search import in_set_entries, segment_search
from .skipgram import skipgram_loss
from .sparse_adam import sparse_adam_
from .split import TypeSplit, split_by_type
from .walk import random_walk

__all__ = ['NeighborSampleOutput', 'neighbor_sample', 'PendingNeighborSample',
           'neighbor_sample_async', 'induced_subgraph',
           'csc_from_coo', 'gather_rows', 'gather_rows_cached',
           'gather_rows_list', 'SampleAggregateOutput',
           'TypeSplit', 'split_by_type',
           'sample_aggregate', 'sage_tree', 'random_walk', 'skipgram_loss', 'sparse_adam_',
           'LayerSampleOutput', 'layer_sample', 'LayerBatchOutput',
           'layer_batch', 'segment_search', 'in_set_entries', 'KeyedDraws',
           'keyed_draws', 'segment_cumsum']
