"""GraphSAGE on Reddit (233k posts, 115M edges, 602 features, 41 classes).

Reads ``<root>/Reddit/raw/reddit_{data,graph}.npz`` with
``torch_geometric.datasets.Reddit``; nothing is downloaded. Evaluation is
exact layer-wise full-neighbour inference::

    python examples/reddit_sage.py --loader fused
    python examples/reddit_sage.py --model fused-sage
    python examples/reddit_sage.py --synthetic --scale 0.1   # no data here
"""
from _common import main

if __name__ == '__main__':
    # PyG's examples/reddit.py: fan-out [25, 10], hidden 256, batch 1024.
    main('Reddit', __doc__.split('\n')[0], num_neighbors=[25, 10],
         hidden=256, batch_size=1024, lr=0.01, epochs=10)
