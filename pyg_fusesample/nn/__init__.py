"""PyG layers built on the fused ops."""
from .fused_sage_conv import FusedSAGEConv
from .fused_graph_sage import FusedGraphSAGE
from .captured_step import CapturedStep
from .captured_batch_step import CapturedBatchStep
from .auto_spmm_conv import AutoSpMMConv
from .fused_node2vec import FusedNode2Vec
from .sage_conv import SAGEConv
from .gcn_conv import GCNConv
from .gat_conv import GATConv
from .rgcn_conv import RGCNConv
from .to_fused import register_swap, to_fused

__all__ = ['FusedSAGEConv', 'FusedGraphSAGE', 'CapturedStep',
           'CapturedBatchStep',
           'AutoSpMMConv', 'FusedNode2Vec', 'SAGEConv', 'GCNConv', 'GATConv',
           'RGCNConv', 'to_fused', 'register_swap']
