"""GraphSAGE on ogbn-arxiv (169k papers, 1.2M citations made undirected).

Reads the OGB data set from ``<root>/ogbn_arxiv`` with
``ogb.nodeproppred.PygNodePropPredDataset`` (or, without the ``ogb``
package, from the same raw files with ``_common.read_ogb_raw``); nothing is
downloaded. Evaluation is exact layer-wise full-neighbour inference::

    python examples/ogbn_arxiv_sage.py --loader fused
    python examples/ogbn_arxiv_sage.py --model fused-sage
    python examples/ogbn_arxiv_sage.py --model autospmm-gcn
    python examples/ogbn_arxiv_sage.py --synthetic    # no data here
"""
from _common import main

if __name__ == '__main__':
    main('ogbn-arxiv', __doc__.split('\n')[0], num_neighbors=[15, 10, 5],
         hidden=256, batch_size=1024, lr=0.003, epochs=50)
