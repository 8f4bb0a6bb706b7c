"""Heterogeneous GraphSAGE on ogbn-mag (to_hetero, venue of 736k papers).

PyG's ``examples/hetero/to_hetero_mag.py``: a homogeneous GraphSAGE
(``SAGEConv((-1, -1), hidden)`` layers and a ``Linear`` head) turned
heterogeneous by ``torch_geometric.nn.to_hetero(model, metadata,
aggr='sum')``, on the graph made undirected by ``T.ToUndirected(merge=True)``,
trained on mini-batches of training papers from a neighbour loader and
evaluated with the same loader on the validation and test papers. The only
difference between PyG's loader and ours is one import::

    from torch_geometric.loader import NeighborLoader                  # PyG
    from pyg_fusesample import FusedNeighborLoader as NeighborLoader   # ours

``--loader {pyg,fused}`` picks the line (``_common.neighbor_loader_class``);
``--layers fused`` passes the same model through
``pyg_fusesample.nn.to_fused`` (its per-edge-type ``SAGEConv`` copies
swapped for the mini-batch layer, weights kept).

No ``trim_to_layer`` here, with either layer choice: PyG trims a
heterogeneous model only where the model's own ``forward`` calls
``trim_to_layer`` between its layers with the batch's
``num_sampled_nodes_dict`` / ``num_sampled_edges_dict`` (as PyG's
``examples/hetero/hierarchical_sage.py`` does with ``HeteroConv``). This
example's model is PyG's ``to_hetero_mag.py`` one, a ``Sequential('x,
edge_index', ...)`` traced into one graph by ``to_hetero``: its forward takes
only the feature and edge dicts, so it has nowhere to take the counts, and
``to_fused``'s trimming is for homogeneous ``BasicGNN`` models only.
Trimming would mean rewriting the model as ``HeteroConv`` layers, no longer
the model PyG's example runs.

Data: ``<root>/ogbn_mag`` (or ``ogbn_mag_pyg``) as OGB unpacks it, read with
``ogb.nodeproppred.PygNodePropPredDataset('ogbn-mag', root)`` when the ``ogb``
package is installed (and the folder has OGB's ``RELEASE_v2.txt``), else
from the same raw files by ``_common.read_ogb_hetero_raw``; nothing is
downloaded. Only papers have features in OGB's files; like PyG's example
(``OGB_MAG(preprocess='metapath2vec')``) the other node types take
metapath2vec embeddings where PyG's ``mag_metapath2vec_emb.pt`` is present
(``--features metapath2vec``), otherwise (``mean``, also the default
without the file) each takes the mean of its neighbours' features,
authors and fields of study from their papers, institutions from their
authors. ``--synthetic`` trains on the SYNTHETIC stand-in
``pyg_fusesample.datasets.mag_like`` instead (every printed line says so)::

    python examples/ogbn_mag_sage.py --loader fused
    python examples/ogbn_mag_sage.py --synthetic --scale 0.05 --loader fused
"""
import argparse
import os.path as osp
import sys
from typing import Optional

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch.nn import ReLU
from torch_geometric.nn import Linear, SAGEConv, Sequential, to_hetero
from tqdm import tqdm

sys.path.insert(0, osp.dirname(osp.realpath(__file__)))
from _common import (  # noqa: E402
    LAYER_NAMES, SPECS, DataMissing, MalformedData, add_layers_arg,
    add_root_arg, add_run_args, autocast, dataset_dir, neighbor_loader_class,
    load_real, run_epochs, with_layers)
from _data_checks import check_rows, load_torch_file  # noqa: E402

SPEC = SPECS['ogbn-mag']
EMBEDDINGS = 'mag_metapath2vec_emb.pt'   # PyG's OGB_MAG(preprocess=...)


def make_parser() -> argparse.ArgumentParser:
    where = osp.join('<root>', osp.relpath(dataset_dir('/r', SPEC), '/r'))
    p = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_root_arg(p, SPEC)
    p.add_argument('--synthetic', action='store_true',
                   help='train on the SYNTHETIC mag_like graph '
                   '(pyg_fusesample.datasets) instead of ogbn-mag; every '
                   'printed line is then labelled [SYNTHETIC mag_like]')
    p.add_argument('--scale', type=float, default=0.05,
                   help='--synthetic: node and edge counts of mag_like '
                   'relative to ogbn-mag')
    p.add_argument('--reader', choices=['auto', 'ogb', 'raw'],
                   default='auto',
                   help="'ogb': PygNodePropPredDataset; 'raw': "
                   "_common.read_ogb_hetero_raw (the same raw files, no ogb "
                   "package); 'auto': ogb if installed")
    p.add_argument('--features', choices=['auto', 'metapath2vec', 'mean'],
                   default='auto',
                   help=f"features of the node types OGB gives none: "
                   f"'metapath2vec': PyG's {EMBEDDINGS} (in {where}/raw/ or "
                   f"--embeddings); 'mean': mean of the neighbours' "
                   f"features; 'auto': metapath2vec if the file is there")
    p.add_argument('--embeddings', default=None,
                   help=f'path of {EMBEDDINGS} (a dict node type -> tensor)')
    p.add_argument('--loader', choices=['pyg', 'fused'], default='pyg',
                   help="'pyg': torch_geometric.loader.NeighborLoader; "
                   "'fused': pyg_fusesample.FusedNeighborLoader imported as "
                   "NeighborLoader (the one-line swap)")
    add_layers_arg(p)
    p.add_argument('--num-neighbors', type=int, nargs='+', default=[15, 10],
                   help='fan-out per layer (also sets the number of layers)')
    p.add_argument('--eval-num-neighbors', type=int, nargs='+', default=None,
                   help='fan-out of the validation/test loaders (default: '
                   'as in training; -1 takes every neighbour)')
    p.add_argument('--batch-size', type=int, default=1024)
    p.add_argument('--hidden', type=int, default=256)
    p.add_argument('--epochs', type=int, default=20)
    p.add_argument('--lr', type=float, default=0.003,
                   help="PyG's example: 0.01 at hidden 64")
    add_run_args(p, 'bf16 autocast in training and evaluation (CUDA only)')
    return p


# -- features of the featureless node types ----------------------------------
def mean_features(data) -> list:
    """Gives every node type without ``x`` the mean ``x`` of its neighbours
    over all relations from types that have one, in rounds (authors and
    fields from papers, then institutions from authors); nodes without such
    neighbours get zeros. Returns the types filled."""
    filled = []
    while True:
        have = {t for t in data.node_types if 'x' in data[t]}
        todo = [t for t in data.node_types if t not in have]
        round_x = {}
        for t in todo:
            n = data[t].num_nodes
            total, count = None, torch.zeros(n)
            for (src, rel, dst) in data.edge_types:
                if dst != t or src not in have:
                    continue
                x = data[src].x
                if total is None:
                    total = torch.zeros(n, x.size(1))
                # in chunks of edges: ogbn-mag has 7M writes
                edge_index = data[src, rel, dst].edge_index
                for ei in edge_index.split(1 << 20, dim=1):
                    total.index_add_(0, ei[1], x[ei[0]].float())
                    count += torch.bincount(ei[1], minlength=n).float()
            if total is not None:
                round_x[t] = total / count.clamp(min=1).unsqueeze(-1)
        if not round_x:
            break
        for t, x in round_x.items():
            data[t].x = x
            filled.append(t)
    for t in data.node_types:   # unreachable types (none in ogbn-mag)
        if 'x' not in data[t]:
            width = next(data[s].x.size(1) for s in data.node_types
                         if 'x' in data[s])
            data[t].x = torch.zeros(data[t].num_nodes, width)
            filled.append(t)
    return filled


def add_features(data, args, folder: Optional[str]) -> str:
    """Fills the featureless node types (of the undirected graph); returns
    what was done."""
    path = args.embeddings or (osp.join(folder, 'raw', EMBEDDINGS) if folder
                               else f'<no data folder>/{EMBEDDINGS}')
    if args.features == 'metapath2vec' or (args.features == 'auto' and
                                           osp.exists(path)):
        if not osp.exists(path):
            raise DataMissing(f'--features metapath2vec: no {path} (PyG\'s '
                              f'OGB_MAG(preprocess="metapath2vec") file)')
        emb = load_torch_file(path, 'a dict node type -> embeddings')
        if not isinstance(emb, dict):
            raise MalformedData(f"'{path}' holds a {type(emb).__name__}, "
                                f"not a dict node type -> embeddings")
        for t in data.node_types:
            if 'x' not in data[t] and t in emb:
                x = emb[t]
                if not (isinstance(x, torch.Tensor) and x.dim() == 2
                        and x.is_floating_point()):
                    raise MalformedData(
                        f"'{path}': the embeddings of '{t}' must be a 2-D "
                        f"float tensor, got {getattr(x, 'shape', type(x))}")
                check_rows(f"'{path}'", f"the embeddings of '{t}'",
                           x.size(0), data[t].num_nodes)
                data[t].x = x.float()
        missing = [t for t in data.node_types if 'x' not in data[t]]
        if missing:
            raise DataMissing(f'{path} has no embeddings of {missing}')
        return f'metapath2vec embeddings ({path})'
    filled = mean_features(data)
    why = ('' if args.features == 'mean' or not folder else
           f' (no {path})')
    return (f"mean of the neighbours' features for "
            f"{', '.join(filled) or 'no type'}{why}")


# -- model --------------------------------------------------------------------
def build_model(metadata, hidden: int, num_layers: int, num_classes: int):
    """PyG's to_hetero_mag.py model: SAGEConv+ReLU per hop, a Linear head,
    one copy per node/edge type summed (``aggr='sum'``)."""
    layers = []
    for _ in range(num_layers):
        layers += [(SAGEConv((-1, -1), hidden), 'x, edge_index -> x'),
                   ReLU(inplace=True)]
    layers.append((Linear(-1, num_classes), 'x -> x'))
    model = Sequential('x, edge_index', layers)
    return to_hetero(model, metadata, aggr='sum')


def main(argv=None) -> float:
    parser = make_parser()
    args = parser.parse_args(argv)
    device = torch.device(args.device or
                          ('cuda' if torch.cuda.is_available() else 'cpu'))
    torch.manual_seed(args.seed)

    prefix = ''
    if args.synthetic:
        from pyg_fusesample.datasets import mag_like
        prefix = '[SYNTHETIC mag_like] '
        # mag_like applies T.ToUndirected() itself (merge=True, the default).
        data = mag_like(scale=args.scale, seed=args.seed)
        label = f'SYNTHETIC {data.name}, not ogbn-mag'
        reader = 'pyg_fusesample.datasets.mag_like'
        folder = None
    else:
        try:
            data, reader = load_real(args.root, SPEC, args.reader)
        except MalformedData as e:
            parser.error(str(e))
        except DataMissing as e:
            parser.error(f'{e}. (--synthetic trains on the SYNTHETIC '
                         f'mag_like graph instead)')
        label, folder = SPEC.name, dataset_dir(args.root, SPEC)
        # As PyG's example: add the reverse relations (rev_writes, ...) and
        # make 'cites' undirected.
        data = T.ToUndirected(merge=True)(data)
    try:
        features = add_features(data, args, folder)
    except (DataMissing, MalformedData) as e:
        parser.error(str(e))

    def say(msg):
        print(f'{prefix}{msg}', flush=True)

    paper = data['paper']
    num_classes = max(SPEC.num_classes, int(paper.y.max()) + 1)
    nodes = ', '.join(f'{t} {data[t].num_nodes:,}' for t in data.node_types)
    say(f'Data: {label} ({reader}): nodes {nodes}; '
        f'{len(data.edge_types)} relations, {data.num_edges:,} edges; '
        f'{paper.x.size(1)} paper features, {num_classes} classes, '
        f'train/val/test papers {int(paper.train_mask.sum()):,}/'
        f'{int(paper.val_mask.sum()):,}/{int(paper.test_mask.sum()):,}')
    say(f'Features of the other node types: {features}')

    NeighborLoader = neighbor_loader_class(args.loader)
    # PyG's loader samples on the CPU; ours where the graph lives.
    src = data.to(device) if args.loader == 'fused' else data
    on_cpu = device.type == 'cpu' or args.loader == 'pyg'
    workers = args.num_workers if on_cpu else 0
    kwargs = dict(batch_size=args.batch_size, num_workers=workers,
                  persistent_workers=workers > 0)
    eval_fanout = args.eval_num_neighbors or args.num_neighbors
    if len(eval_fanout) != len(args.num_neighbors):
        parser.error('--eval-num-neighbors needs one fan-out per layer')
    train_loader = NeighborLoader(
        src, num_neighbors=args.num_neighbors, shuffle=True,
        input_nodes=('paper', src['paper'].train_mask), **kwargs)
    val_loader = NeighborLoader(
        src, num_neighbors=eval_fanout,
        input_nodes=('paper', src['paper'].val_mask), **kwargs)
    test_loader = NeighborLoader(
        src, num_neighbors=eval_fanout,
        input_nodes=('paper', src['paper'].test_mask), **kwargs)

    args.layers = args.layers or 'pyg'
    # Called without per-hop counts, untrimmed: the to_hetero model cannot
    # take them (the module docstring says why).
    model = with_layers(build_model(data.metadata(), args.hidden,
                                    len(args.num_neighbors), num_classes),
                        args.layers).to(device)
    with torch.no_grad():  # initialise the lazy parameters on one batch
        batch = next(iter(val_loader)).to(device)
        model(batch.x_dict, batch.edge_index_dict)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    amp = ('bf16 autocast' if args.amp and device.type == 'cuda' else
           'off' + (' (--amp needs CUDA)' if args.amp else ''))
    say(f'Model: to_hetero(GraphSAGE, aggr=sum), {len(args.num_neighbors)} '
        f'layers ({LAYER_NAMES[args.layers]}, no trim: see the docstring), '
        f'hidden {args.hidden}, fan-out {args.num_neighbors} '
        f'(eval {eval_fanout}), loader: {NeighborLoader.__module__}.'
        f'{NeighborLoader.__name__}, device: {device}, AMP: {amp}')

    def train(epoch: int) -> float:
        model.train()
        total_loss, total = torch.zeros((), device=device), 0
        for batch in tqdm(train_loader, desc=f'{prefix}Epoch {epoch:02d}',
                          disable=None):
            batch = batch.to(device)
            n = batch['paper'].batch_size
            optimizer.zero_grad()
            with autocast(device, args.amp):
                out = model(batch.x_dict, batch.edge_index_dict)['paper'][:n]
                loss = F.cross_entropy(out.float(), batch['paper'].y[:n])
            loss.backward()
            optimizer.step()
            total_loss += loss.detach() * n
            total += n
        return float(total_loss) / max(total, 1)

    @torch.no_grad()
    def test(loader) -> float:
        model.eval()
        correct, total = torch.zeros((), device=device), 0
        for batch in loader:
            batch = batch.to(device)
            n = batch['paper'].batch_size
            with autocast(device, args.amp):
                out = model(batch.x_dict, batch.edge_index_dict)['paper'][:n]
            correct += (out.argmax(dim=-1) == batch['paper'].y[:n]).sum()
            total += n
        return float(correct) / max(total, 1)

    return run_epochs(
        args.epochs, train,
        lambda: {'Val': test(val_loader), 'Test': test(test_loader)},
        device, say)


if __name__ == '__main__':
    main()
