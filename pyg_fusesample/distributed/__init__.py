"""Partitioned graphs (issue 45): PyG's ``Partitioner`` files read one part
per rank and written from edge chunks; neighbour sampling across the ranks'
parts over ``torch.distributed``."""
from .dist_loader import FusedDistNeighborLoader
from .dist_sampler import DistNeighborSampler, DistSample
from .partition_files import (Partition, PartCSC, assign_nodes, read_meta,
                              read_partition, write_partitions)

__all__ = ['FusedDistNeighborLoader', 'DistNeighborSampler',
           'DistSample', 'Partition', 'PartCSC', 'assign_nodes', 'read_meta',
           'read_partition', 'write_partitions']
