"""PyG layers built on the fused ops."""
from .fused_sage_conv import FusedSAGEConv
from .fused_graph_sage import FusedGraphSAGE

__all__ = ['FusedSAGEConv', 'FusedGraphSAGE']
