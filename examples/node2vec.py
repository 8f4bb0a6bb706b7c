"""Node2Vec on Cora, PyG's examples/node2vec.py with FusedNode2Vec.

The changes to PyG's code are the import and the optimizer's class:

    from torch_geometric.nn import Node2Vec                        # PyG
    from pyg_fusesample import FusedNode2Vec as Node2Vec           # ours

    optimizer = torch.optim.SparseAdam(params, lr=0.01)            # PyG
    optimizer = pyg_fusesample.optim.FusedSparseAdam(params, lr=0.01)  # ours

(``FusedSparseAdam`` is ``SparseAdam``'s update in one op a parameter;
``--torch-adam`` keeps torch's),

with PyG's hyper-parameters (embedding_dim=128, walk_length=20,
context_size=10, walks_per_node=10, num_negative_samples=1, p=q=1,
sparse=True, SparseAdam lr=0.01, batch_size=128, 100 epochs). The walks
run on the model's device (``--device cuda``: on the GPU), and no pyg-lib is
needed. Each epoch prints the loss, the test accuracy of a logistic
regression on the embeddings (``model.test``, scikit-learn) and the epoch's
training time.

Nothing is downloaded: the Planetoid raw files must be present as
``<root>/Cora/raw/ind.cora.*`` (they are copied there from
``../shared/data/planetoid/Cora/raw`` beside the repository when that
exists), e.g. from the repository root::

    python examples/node2vec.py                        # Cora, 100 epochs
    python examples/node2vec.py --epochs 5 --device cpu
    python examples/node2vec.py --baseline pyg         # also PyG's Node2Vec
    python examples/node2vec.py --graph products-like --scale 0.01  # SYNTHETIC

``--graph products-like`` trains on the SYNTHETIC products-like power-law
graph of :mod:`pyg_fusesample.datasets` (every line it prints says so).
``--baseline pyg`` then trains PyG's own ``Node2Vec`` the same way, or says
why it cannot (it needs pyg-lib).
"""
import argparse
import os.path as osp
import shutil
import sys
import time

import torch

from pyg_fusesample import FusedNode2Vec as Node2Vec
from pyg_fusesample.optim import FusedSparseAdam

from _data_checks import MalformedData, read_planetoid  # (examples/)

REPO = osp.normpath(osp.join(osp.dirname(osp.realpath(__file__)), '..'))
DEFAULT_ROOT = osp.join(REPO, 'data', 'planetoid')
SHARED_CORA_RAW = osp.join(REPO, '..', 'shared', 'data', 'planetoid', 'Cora',
                           'raw')

parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
parser.add_argument('--graph', choices=['cora', 'products-like'],
                    default='cora',
                    help="'cora': real Cora (Planetoid); 'products-like': the "
                    "SYNTHETIC ogbn-products-like graph of "
                    "pyg_fusesample.datasets (see --scale)")
parser.add_argument('--scale', type=float, default=0.01,
                    help='--graph products-like: node count as a fraction of '
                    "ogbn-products' 2.45M (default: 0.01, ~24k nodes)")
parser.add_argument(
    '--root', default=DEFAULT_ROOT,
    help=f'Planetoid root folder (default: {osp.normpath(DEFAULT_ROOT)}). '
    f'Nothing can be downloaded, so the raw files must be present there as '
    f'<root>/Cora/raw/* (ind.cora.x, ind.cora.y, ...); they are copied from '
    f'../shared/data/planetoid/Cora/raw when that exists.')
parser.add_argument('--epochs', type=int, default=100)
parser.add_argument('--device', default=None,
                    help="e.g. 'cpu' or 'cuda' (default: cuda if available)")
parser.add_argument('--baseline', choices=['none', 'pyg'], default='none',
                    help="'pyg': afterwards train torch_geometric.nn.Node2Vec "
                    "the same way (needs pyg-lib; skipped, with the reason, "
                    "without it)")
parser.add_argument('--num-workers', type=int, default=None,
                    help="loader workers (default: PyG's 4, 0 on Windows; 0 "
                    "with the model on a GPU, where the walks run on the GPU "
                    "-- a worker process cannot use CUDA and walks on the CPU)")
parser.add_argument('--torch-adam', action='store_true',
                    help='train FusedNode2Vec with torch.optim.SparseAdam '
                    '(default: pyg_fusesample.optim.FusedSparseAdam, the same '
                    'update; the --baseline pyg model always uses torch\'s)')
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()

device = torch.device(args.device or
                      ('cuda' if torch.cuda.is_available() else 'cpu'))
if args.num_workers is None:
    args.num_workers = (0 if sys.platform.startswith('win')
                        or device.type == 'cuda' else 4)
torch.manual_seed(args.seed)

# -- data -------------------------------------------------------------------
prefix = ''
if args.graph == 'cora':
    raw_dir = osp.join(args.root, 'Cora', 'raw')
    if not osp.isdir(raw_dir) and osp.isdir(SHARED_CORA_RAW):
        print(f'Copying the Cora raw files from '
              f'{osp.normpath(SHARED_CORA_RAW)} to {raw_dir}')
        shutil.copytree(SHARED_CORA_RAW, raw_dir)
    if not osp.isdir(raw_dir):
        parser.error(f"no Cora raw files in '{raw_dir}': copy "
                     f"../shared/data/planetoid/Cora/raw there (nothing can "
                     f"be downloaded)")
    try:  # Planetoid(args.root, 'Cora'), a damaged file said clearly
        dataset = read_planetoid(args.root, 'Cora')
    except MalformedData as e:
        parser.error(str(e))
    data = dataset[0]
    label = 'Cora (Planetoid)'
else:
    from pyg_fusesample.datasets import products_like
    data = products_like(scale=args.scale, seed=args.seed)
    prefix = f'[SYNTHETIC {data.name}] '
    label = (f'SYNTHETIC {data.name} (pyg_fusesample.datasets.products_like, '
             f'scale {args.scale}): a generated graph of ogbn-products\' '
             f'shape; its numbers say nothing about ogbn-products or Cora')


def say(msg):
    print(f'{prefix}{msg}', flush=True)


say(f'Data: {label}: {data.num_nodes:,} nodes, {data.num_edges:,} edges, '
    f'train/test {int(data.train_mask.sum()):,}/'
    f'{int(data.test_mask.sum()):,}')


# -- training (PyG's example, for either class) ------------------------------
def run(Model, name, SparseAdam=torch.optim.SparseAdam):
    torch.manual_seed(args.seed)
    model = Model(
        data.edge_index,
        embedding_dim=128,
        walk_length=20,
        context_size=10,
        walks_per_node=10,
        num_negative_samples=1,
        p=1,
        q=1,
        sparse=True,
    ).to(device)

    loader = model.loader(batch_size=128, shuffle=True,
                          num_workers=args.num_workers)
    optimizer = SparseAdam(list(model.parameters()), lr=0.01)

    def train():
        model.train()
        total_loss = 0
        for pos_rw, neg_rw in loader:
            optimizer.zero_grad()
            loss = model.loss(pos_rw.to(device), neg_rw.to(device))
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        return total_loss / len(loader)

    @torch.no_grad()
    def test():
        model.eval()
        z = model()
        acc = model.test(z[data.train_mask], data.y[data.train_mask],
                         z[data.test_mask], data.y[data.test_mask],
                         max_iter=150)
        return acc

    say(f'Model: {name}, device: {device}, walks on: '
        f'{getattr(model, "sample_device", "cpu")}, optimizer: '
        f'{type(optimizer).__name__}, loader workers: '
        f'{args.num_workers}, batches per epoch: {len(loader)}')
    times = []
    acc = float('nan')
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        loss = train()
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        acc = test()
        test_time = time.perf_counter() - start
        say(f'Epoch: {epoch:03d}, Loss: {loss:.4f}, Acc: {acc:.4f}, '
            f'Time: {times[-1]:.2f}s, Test: {test_time:.2f}s')
    mean = sum(times[1:] or times) / max(len(times[1:] or times), 1)
    say(f'{name}: final test accuracy {acc:.4f} after {args.epochs} epochs; '
        f'epoch time {mean:.2f}s (mean' + (' after the first' if
                                          len(times) > 1 else '') + ')')
    return acc, mean


results = {'FusedNode2Vec': run(
    Node2Vec, 'FusedNode2Vec',
    torch.optim.SparseAdam if args.torch_adam else FusedSparseAdam)}

if args.baseline == 'pyg':
    from torch_geometric.nn import Node2Vec as PyGNode2Vec
    from torch_geometric.typing import WITH_PYG_LIB
    try:
        import torch_cluster  # noqa: F401
        have_cluster = 'installed'
    except ImportError:
        have_cluster = 'not installed'
    try:
        results["PyG's Node2Vec"] = run(PyGNode2Vec, "PyG's Node2Vec")
    except ImportError as e:
        say(f"--baseline pyg: skipped: PyG's Node2Vec raised ImportError "
            f"({e}); pyg-lib: "
            f"{'installed' if WITH_PYG_LIB else 'not installed'}, "
            f"torch_cluster: {have_cluster} (PyG 2.8's Node2Vec walks with "
            f"torch.ops.pyg.random_walk of pyg-lib)")

for name, (acc, mean) in results.items():
    say(f'{name}: Acc {acc:.4f}, epoch time {mean:.2f}s')
