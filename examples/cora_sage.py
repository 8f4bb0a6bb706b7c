"""GraphSAGE mini-batch training on Cora, the standard PyG way.

The only change between PyG's script and ours is the import of the loader:

    from torch_geometric.loader import NeighborLoader                  # PyG
    from pyg_fusesample import FusedNeighborLoader as NeighborLoader   # ours

``--loader {pyg,fused}`` makes that swap from the command line; every other
line is the same for both.

Nothing is downloaded: the Planetoid raw files must already be present as
``<root>/Cora/raw/ind.cora.*``, e.g. from the repository root::

    mkdir -p data/planetoid/Cora
    cp -r ../shared/data/planetoid/Cora/raw data/planetoid/Cora/
    python examples/cora_sage.py --loader fused
"""
import argparse
import os.path as osp
import time

import torch
import torch.nn.functional as F
from torch_geometric.nn.models import GraphSAGE

from _data_checks import MalformedData, read_planetoid  # (examples/)

from torch_geometric.loader import NeighborLoader            # PyG
# from pyg_fusesample import FusedNeighborLoader as NeighborLoader   # the one-line swap

DEFAULT_ROOT = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data',
                        'planetoid')

parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
parser.add_argument(
    '--root', default=DEFAULT_ROOT,
    help=f'Planetoid root folder (default: {osp.normpath(DEFAULT_ROOT)}). '
    f'Nothing can be downloaded, so the raw files must be present there as '
    f'<root>/Cora/raw/* (ind.cora.x, ind.cora.y, ...), e.g. copy '
    f'../shared/data/planetoid/Cora to <root>/Cora.')
parser.add_argument('--epochs', type=int, default=30)
parser.add_argument('--loader', choices=['pyg', 'fused'], default='pyg',
                    help="'pyg': torch_geometric.loader.NeighborLoader; "
                    "'fused': pyg_fusesample.FusedNeighborLoader imported as "
                    "NeighborLoader (the one-line swap)")
parser.add_argument('--device', default=None,
                    help="e.g. 'cpu' or 'cuda' (default: cuda if available)")
parser.add_argument('--batch-size', type=int, default=32)
parser.add_argument('--num-neighbors', type=int, nargs='+', default=[10, 10])
parser.add_argument('--hidden', type=int, default=64)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--num-workers', type=int, default=0)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()

if args.loader == 'fused':  # the same one-line swap, picked by the flag
    from pyg_fusesample import FusedNeighborLoader as NeighborLoader  # noqa

raw_dir = osp.join(args.root, 'Cora', 'raw')
if not osp.isdir(raw_dir):
    parser.error(f"no Cora raw files in '{raw_dir}': copy "
                 f"../shared/data/planetoid/Cora/raw there (nothing can be "
                 f"downloaded)")

device = torch.device(args.device or
                      ('cuda' if torch.cuda.is_available() else 'cpu'))
torch.manual_seed(args.seed)

try:  # Planetoid(args.root, 'Cora'), a damaged file said clearly
    dataset = read_planetoid(args.root, 'Cora')
except MalformedData as e:
    parser.error(str(e))
data = dataset[0]

train_loader = NeighborLoader(
    data,
    num_neighbors=args.num_neighbors,
    input_nodes=data.train_mask,
    batch_size=args.batch_size,
    shuffle=True,
    num_workers=args.num_workers,
)

model = GraphSAGE(dataset.num_features, args.hidden, num_layers=2,
                  out_channels=dataset.num_classes, dropout=0.5).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr,
                             weight_decay=5e-4)


def train():
    model.train()
    total_loss = total_examples = 0
    for batch in train_loader:
        batch = batch.to(device)
        optimizer.zero_grad()
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * batch.batch_size
        total_examples += batch.batch_size
    return total_loss / total_examples


@torch.no_grad()
def test(full):
    model.eval()
    pred = model(full.x, full.edge_index).argmax(dim=-1)
    return [float((pred[mask] == full.y[mask]).float().mean())
            for mask in (full.val_mask, full.test_mask)]


print(f'Loader: {NeighborLoader.__module__}.{NeighborLoader.__name__}, '
      f'device: {device}, batches per epoch: {len(train_loader)}')
full_data = data.clone().to(device)  # full-batch evaluation
test_acc = 0.0
for epoch in range(1, args.epochs + 1):
    start = time.perf_counter()
    loss = train()
    train_time = time.perf_counter() - start
    val_acc, test_acc = test(full_data)
    print(f'Epoch: {epoch:03d}, Loss: {loss:.4f}, Val: {val_acc:.4f}, '
          f'Test: {test_acc:.4f}, Time: {train_time:.2f}s')
print(f'Final test accuracy: {test_acc:.4f}')
