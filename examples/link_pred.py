"""Link prediction with GraphSAGE on a LinkNeighborLoader (homo or hetero).

Mini-batches of supervision edges and as many random negatives (binary
negative sampling, ratio 1) come from a link neighbour loader; a GraphSAGE
encoder (``torch_geometric.nn.to_hetero`` of it on a heterogeneous graph)
embeds the sampled subgraph and an MLP (or dot-product) decoder scores the
edges; binary cross-entropy; validation and test ROC AUC on held-out edges
and as many held-out negatives. The only difference between PyG's loader
and ours is one import::

    from torch_geometric.loader import LinkNeighborLoader                # PyG
    from pyg_fusesample import (                                         # ours
        FusedLinkNeighborLoader as LinkNeighborLoader)

``--loader {pyg,fused}`` picks the line
(``_common.link_neighbor_loader_class``).

Graphs (all SYNTHETIC, from :mod:`pyg_fusesample.datasets`; every printed
line says so):

* ``--graph homo``: ``products_like`` (power-law co-purchase-like graph,
  undirected), edges split by ``T.RandomLinkSplit(is_undirected=True)``;
* ``--graph hetero``: ``user_item_like`` (MovieLens-100k-like users and
  items); the ``('user', 'rates', 'item')`` edges are predicted, split by
  ``T.RandomLinkSplit(edge_types=..., rev_edge_types=('item', 'rev_rates',
  'user'))`` as PyG's MovieLens examples do (the ratings and times are
  dropped: the task is whether a user rates an item).

``--temporal`` (hetero only) predicts FUTURE edges with temporal sampling:
the rating times are kept on the edges (``time_attr='time'``, edge-level),
the edges are split by time (train: the earliest 80%, validation: the next
10%, test: the last 10%; a split's message-passing graph holds only the
edges before it), and each supervision edge's subgraph holds only edges
earlier than it (``edge_label_time`` = its time - 1, so it never sees
itself). PyG's ``LinkNeighborLoader`` needs pyg-lib for that.

::

    python examples/link_pred.py --graph hetero --loader fused
    python examples/link_pred.py --graph homo --scale 0.01 --loader fused
    python examples/link_pred.py --graph hetero --temporal --loader fused
"""
import argparse
import os.path as osp
import sys

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.nn import to_hetero
from torch_geometric.nn.models import GraphSAGE
from tqdm import tqdm

sys.path.insert(0, osp.dirname(osp.realpath(__file__)))
from _common import (add_run_args, autocast,  # noqa: E402
                     link_neighbor_loader_class, run_epochs)

EDGE = ('user', 'rates', 'item')
REV_EDGE = ('item', 'rev_rates', 'user')
DEFAULT_SCALE = {'homo': 0.01, 'hetero': 1.0}


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--graph', choices=['homo', 'hetero'], default='hetero',
                   help="'homo': SYNTHETIC products_like; 'hetero': "
                   "SYNTHETIC user_item_like (user-rates-item)")
    p.add_argument('--scale', type=float, default=None,
                   help='size of the synthetic graph relative to its model '
                   f'(default: {DEFAULT_SCALE})')
    p.add_argument('--loader', choices=['pyg', 'fused'], default='pyg',
                   help="'pyg': torch_geometric.loader.LinkNeighborLoader; "
                   "'fused': pyg_fusesample.FusedLinkNeighborLoader imported "
                   "as LinkNeighborLoader (the one-line swap)")
    p.add_argument('--num-neighbors', type=int, nargs='+', default=[10, 5],
                   help='fan-out per layer (also sets the number of layers)')
    p.add_argument('--batch-size', type=int, default=1024,
                   help='supervision edges per batch (plus as many '
                   'negatives)')
    p.add_argument('--hidden', type=int, default=64)
    p.add_argument('--decoder', choices=['dot', 'mlp'], default='mlp',
                   help="'mlp': Linear-ReLU-Linear on the two embeddings "
                   "(PyG's bipartite_sage.py EdgeDecoder); 'dot': their "
                   "inner product")
    p.add_argument('--epochs', type=int, default=10)
    p.add_argument('--lr', type=float, default=0.005)
    p.add_argument('--num-val', type=float, default=0.1,
                   help='share of the edges held out for validation')
    p.add_argument('--num-test', type=float, default=0.1,
                   help='share of the edges held out for testing')
    p.add_argument('--temporal', action='store_true',
                   help='hetero only: predict future edges (split by time) '
                   'with temporal sampling (time_attr, edge_label_time)')
    add_run_args(p, 'bf16 autocast in training and evaluation (CUDA only)')
    return p


def roc_auc(score: torch.Tensor, label: torch.Tensor) -> float:
    """Area under the ROC curve from ranks (Mann-Whitney U; tied scores
    share their mean rank), as ``sklearn.metrics.roc_auc_score``; NaN
    without both classes."""
    score = score.detach().double().view(-1).cpu()
    label = label.detach().view(-1).cpu() > 0.5
    n_pos = int(label.sum())
    n_neg = label.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return float('nan')
    order = torch.argsort(score)
    _, inverse, counts = torch.unique_consecutive(
        score[order], return_inverse=True, return_counts=True)
    last = counts.cumsum(0).double()           # 1-based rank of each run's end
    mean_rank = last - (counts.double() - 1) / 2
    ranks = torch.empty_like(score)
    ranks[order] = mean_rank[inverse]
    u = float(ranks[label].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


# -- data -------------------------------------------------------------------
def load(args):
    """The synthetic graph and its (train, val, test) link split."""
    if args.graph == 'homo':
        from pyg_fusesample.datasets import products_like
        full = products_like(scale=args.scale, seed=args.seed)
        data = Data(x=full.x, edge_index=full.edge_index,
                    num_nodes=full.num_nodes)
        split = T.RandomLinkSplit(
            num_val=args.num_val, num_test=args.num_test, is_undirected=True,
            add_negative_train_samples=False, neg_sampling_ratio=1.0)
        return full.name, data, split(data)
    from pyg_fusesample.datasets import user_item_like
    full = user_item_like(scale=args.scale, seed=args.seed)
    data = full.clone()
    for edge_type in (EDGE, REV_EDGE):  # existence (and times) only
        store = data[edge_type]
        for key in list(store.keys()):
            if key != 'edge_index' and not (args.temporal and key == 'time'):
                del store[key]
    if args.temporal:
        return full.name, data, temporal_split(data, args)
    split = T.RandomLinkSplit(
        num_val=args.num_val, num_test=args.num_test,
        add_negative_train_samples=False, neg_sampling_ratio=1.0,
        edge_types=[EDGE], rev_edge_types=[REV_EDGE])
    return full.name, data, split(data)


def temporal_split(data, args):
    """(train, val, test) of future-link prediction: each split's graph
    holds the rating edges (and reverses) before its supervision edges,
    which carry edge_label_time = their time - 1; validation and test add a
    negative per positive (its user, a random item), at its time."""
    time = data[EDGE].time
    order = torch.argsort(time, stable=True)
    n = order.numel()
    n_val, n_test = int(args.num_val * n), int(args.num_test * n)
    cut = [n - n_val - n_test, n - n_test, n]
    g = torch.Generator().manual_seed(args.seed)
    splits = []
    for i, (lo, hi) in enumerate(zip([0] + cut[:2], cut)):
        past, label_ids = order[:lo if i else hi], order[lo:hi]
        d = data.clone()
        for edge_type, flip in ((EDGE, False), (REV_EDGE, True)):
            store = d[edge_type]
            ei = data[EDGE].edge_index[:, past]
            store.edge_index = ei.flip(0) if flip else ei
            store.time = time[past]
        index = data[EDGE].edge_index[:, label_ids]
        label_time = time[label_ids] - 1
        label = torch.ones(index.size(1))
        if i > 0:  # evaluation: each positive's user with a random item
            # (users who arrive late have little past: random users as
            # negatives would score by activity, not by fit)
            neg = torch.stack([index[0], torch.randint(
                data['item'].num_nodes, (index.size(1),), generator=g)])
            index = torch.cat([index, neg], 1)
            label = torch.cat([label, torch.zeros(neg.size(1))])
            label_time = torch.cat([label_time, label_time])
        d[EDGE].edge_label_index, d[EDGE].edge_label = index, label
        d[EDGE].edge_label_time = label_time
        splits.append(d)
    return splits


def labelled(data, hetero: bool):
    store = data[EDGE] if hetero else data
    return store.edge_label_index, store.edge_label


# -- model ------------------------------------------------------------------
class Decoder(torch.nn.Module):
    def __init__(self, kind: str, hidden: int):
        super().__init__()
        self.mlp = None
        if kind == 'mlp':
            self.mlp = torch.nn.Sequential(
                torch.nn.Linear(2 * hidden, hidden), torch.nn.ReLU(),
                torch.nn.Linear(hidden, 1))

    def forward(self, z_src, z_dst):
        if self.mlp is None:
            return (z_src * z_dst).sum(dim=-1)
        return self.mlp(torch.cat([z_src, z_dst], dim=-1)).view(-1)


class Model(torch.nn.Module):
    """GraphSAGE encoder (made heterogeneous by to_hetero) + decoder."""
    def __init__(self, args, data, hetero: bool):
        super().__init__()
        layers = len(args.num_neighbors)
        self.hetero = hetero
        if hetero:
            self.encoder = to_hetero(
                GraphSAGE((-1, -1), args.hidden, num_layers=layers),
                data.metadata(), aggr='sum')
        else:
            self.encoder = GraphSAGE(data.num_features, args.hidden,
                                     num_layers=layers)
        self.decoder = Decoder(args.decoder, args.hidden)

    def forward(self, batch) -> torch.Tensor:
        if self.hetero:
            z = self.encoder(batch.x_dict, batch.edge_index_dict)
            src, dst = batch[EDGE].edge_label_index
            return self.decoder(z[EDGE[0]][src], z[EDGE[2]][dst])
        z = self.encoder(batch.x, batch.edge_index)
        src, dst = batch.edge_label_index
        return self.decoder(z[src], z[dst])


def main(argv=None) -> float:
    parser = make_parser()
    args = parser.parse_args(argv)
    hetero = args.graph == 'hetero'
    if args.temporal and not hetero:
        parser.error('--temporal predicts future user-item ratings: it '
                     'needs --graph hetero')
    if args.scale is None:
        args.scale = DEFAULT_SCALE[args.graph]
    device = torch.device(args.device or
                          ('cuda' if torch.cuda.is_available() else 'cpu'))
    torch.manual_seed(args.seed)  # the split and the model's initialisation

    name, data, (train_data, val_data, test_data) = load(args)
    prefix = f'[SYNTHETIC {name}] '

    def say(msg):
        print(f'{prefix}{msg}', flush=True)

    sizes = [labelled(d, hetero)[0].size(1)
             for d in (train_data, val_data, test_data)]
    if hetero:
        what = (f"users {data['user'].num_nodes:,}, items "
                f"{data['item'].num_nodes:,}, {data[EDGE].num_edges:,} "
                f"{'-'.join(EDGE)} edges (and their reverse)")
    else:
        what = (f'{data.num_nodes:,} nodes, {data.num_edges:,} directed '
                f'edges ({data.num_edges // 2:,} undirected), '
                f'{data.num_features} features')
    say(f'Data: SYNTHETIC {name} ({args.graph}): {what}; supervision '
        f'edges train/val/test {sizes[0]:,}/{sizes[1]:,}/{sizes[2]:,} (val '
        f'and test with as many negatives; training draws 1 negative per '
        f'positive each batch)'
        + ('; split by time, temporal sampling (future links)'
           if args.temporal else ''))

    LinkNeighborLoader = link_neighbor_loader_class(args.loader)
    if args.loader == 'fused':  # ours samples where the graph lives
        train_data, val_data, test_data = (
            d.to(device) for d in (train_data, val_data, test_data))
    on_cpu = device.type == 'cpu' or args.loader == 'pyg'
    workers = args.num_workers if on_cpu else 0
    kwargs = dict(num_neighbors=args.num_neighbors,
                  batch_size=args.batch_size, num_workers=workers,
                  persistent_workers=workers > 0)
    if args.temporal:
        kwargs['time_attr'] = 'time'

    def seeds(d):
        index, label = labelled(d, hetero)
        return (EDGE, index) if hetero else index, label

    def times(d):
        return ({'edge_label_time': d[EDGE].edge_label_time}
                if args.temporal else {})

    train_index, _ = seeds(train_data)
    train_loader = LinkNeighborLoader(
        train_data, edge_label_index=train_index, neg_sampling='binary',
        shuffle=True, **times(train_data), **kwargs)
    eval_loaders = []
    for d in (val_data, test_data):
        index, label = seeds(d)
        eval_loaders.append(LinkNeighborLoader(
            d, edge_label_index=index, edge_label=label, shuffle=False,
            **times(d), **kwargs))
    val_loader, test_loader = eval_loaders

    model = Model(args, train_data, hetero).to(device)
    if hetero:  # initialise the lazy parameters on one batch
        with torch.no_grad():
            model(next(iter(val_loader)).to(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    amp = ('bf16 autocast' if args.amp and device.type == 'cuda' else
           'off' + (' (--amp needs CUDA)' if args.amp else ''))
    say(f"Model: {'to_hetero(GraphSAGE)' if hetero else 'GraphSAGE'}, "
        f'{len(args.num_neighbors)} layers, hidden {args.hidden}, '
        f'{args.decoder} decoder, fan-out {args.num_neighbors}, loader: '
        f'{LinkNeighborLoader.__module__}.{LinkNeighborLoader.__name__}, '
        f'device: {device}, AMP: {amp}')

    def label_of(batch):
        return (batch[EDGE] if hetero else batch).edge_label.float()

    def train(epoch: int) -> float:
        model.train()
        total_loss, total = torch.zeros((), device=device), 0
        for batch in tqdm(train_loader, desc=f'{prefix}Epoch {epoch:02d}',
                          disable=None):
            batch = batch.to(device)
            optimizer.zero_grad()
            with autocast(device, args.amp):
                out = model(batch)
            y = label_of(batch)
            loss = F.binary_cross_entropy_with_logits(out.float(), y)
            loss.backward()
            optimizer.step()
            total_loss += loss.detach() * y.numel()
            total += y.numel()
        return float(total_loss) / max(total, 1)

    @torch.no_grad()
    def test(loader) -> float:
        model.eval()
        scores, labels = [], []
        for batch in loader:
            batch = batch.to(device)
            with autocast(device, args.amp):
                scores.append(model(batch).float())
            labels.append(label_of(batch))
        return roc_auc(torch.cat(scores), torch.cat(labels))

    return run_epochs(
        args.epochs, train,
        lambda: {'Val': test(val_loader), 'Test': test(test_loader)},
        device, say, metric='AUC')

if __name__ == '__main__':
    main()
