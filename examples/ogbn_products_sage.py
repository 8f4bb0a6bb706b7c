"""GraphSAGE on ogbn-products (2.4M nodes, 124M directed edges, 47 classes).

Reads the OGB data set from ``<root>/ogbn_products`` with
``ogb.nodeproppred.PygNodePropPredDataset`` (or, without the ``ogb``
package, from the same raw files with ``_common.read_ogb_raw``); nothing is
downloaded. Evaluation is exact layer-wise full-neighbour inference::

    python examples/ogbn_products_sage.py --loader fused         # PyG GraphSAGE
    python examples/ogbn_products_sage.py --loader fused --layers fused  # to_fused
    python examples/ogbn_products_sage.py --model fused-sage     # FusedGraphSAGE
    python examples/ogbn_products_sage.py --model autospmm-gcn   # full-batch GCN
    python examples/ogbn_products_sage.py --synthetic --scale 0.1  # no data here
"""
from _common import main

if __name__ == '__main__':
    # PyG's examples/ogbn_products_sage.py: fan-out [15, 10, 5], hidden 256.
    main('ogbn-products', __doc__.split('\n')[0], num_neighbors=[15, 10, 5],
         hidden=256, batch_size=1024, lr=0.001, epochs=20)
