"""Partitioned graphs (issue 45): PyG's ``Partitioner`` files read one part
per rank and written from edge chunks."""
from .partition_files import (Partition, PartCSC, assign_nodes, read_meta,
                              read_partition, write_partitions)

__all__ = ['Partition', 'PartCSC', 'assign_nodes', 'read_meta',
           'read_partition', 'write_partitions']
