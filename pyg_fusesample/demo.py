"""The main demo: GraphSAGE trained with FusedNeighborLoader and with PyG's
NeighborLoader on an embedded default graph, side by side.

    python -m pyg_fusesample.demo            # ~2 min on a 2-core CPU
    python -m pyg_fusesample.demo --help

The default graph is SYNTHETIC (pyg_fusesample.datasets.power_law_graph: a
products-like power-law graph, scaled down); every line that reports a
result says so.
"""
import argparse
import time
import warnings

import torch
import torch.nn.functional as F
from tqdm import tqdm

from .datasets import power_law_graph
from .loader import FusedNeighborLoader


def make_loader(kind, data, args, seed):
    kw = dict(num_neighbors=args.fanout, batch_size=args.batch_size,
              input_nodes=data.train_mask, shuffle=True)
    if kind == 'fused':
        return FusedNeighborLoader(data, seed=seed, **kw)
    from torch_geometric.loader import NeighborLoader
    with warnings.catch_warnings():  # PyG warns when pyg-lib is absent
        warnings.simplefilter('ignore')
        return NeighborLoader(data, **kw)


@torch.no_grad()
def evaluate(model, data, device):
    model.eval()
    out = model(data.x.to(device), data.edge_index.to(device)).argmax(-1).cpu()
    return {split: float((out[mask] == data.y[mask]).float().mean())
            for split, mask in (('val', data.val_mask),
                                ('test', data.test_mask))}


def loader_throughput(loader, batches):
    it = iter(loader)
    next(it)  # the first batch pays one-time costs (CSC build, workers)
    t0 = time.perf_counter()
    n = 0
    for _ in range(batches):
        try:
            next(it)
        except StopIteration:
            break
        n += 1
    return n / (time.perf_counter() - t0)


def train(kind, data, args, device, label):
    from torch_geometric.nn.models import GraphSAGE
    torch.manual_seed(args.seed)
    model = GraphSAGE(data.num_features, args.hidden, len(args.fanout),
                      out_channels=int(data.y.max()) + 1,
                      dropout=0.5).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loader = make_loader(kind, data, args, args.seed)
    epoch_times = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        total = 0.0
        for batch in tqdm(loader, desc=f'{label} epoch {epoch}', leave=False):
            batch = batch.to(device)
            opt.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
            total += loss.item()
        epoch_times.append(time.perf_counter() - t0)
        acc = evaluate(model, data, device)
        print(f'  [{label}] epoch {epoch}: loss {total / len(loader):.3f}, '
              f'val {acc["val"]:.3f}, test {acc["test"]:.3f}, '
              f'{epoch_times[-1]:.1f} s')
    return acc, min(epoch_times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--num-nodes', type=int, default=100_000)
    p.add_argument('--avg-degree', type=float, default=20.0)
    p.add_argument('--fanout', type=int, nargs='+', default=[15, 10])
    p.add_argument('--batch-size', type=int, default=1024)
    p.add_argument('--hidden', type=int, default=128)
    p.add_argument('--epochs', type=int, default=5)
    p.add_argument('--loaders', nargs='+', default=['fused', 'pyg'],
                   choices=['fused', 'pyg'])
    p.add_argument('--throughput-batches', type=int, default=20)
    p.add_argument('--device', default='cuda' if torch.cuda.is_available()
                   else 'cpu')
    p.add_argument('--feature-noise', type=float, default=10.0)
    p.add_argument('--seed', type=int, default=0)
    args = p.parse_args(argv)
    device = torch.device(args.device)

    # Noisy features and a 10% training split: a node's own features are a
    # weak signal, its sampled neighbourhood a strong one.
    data = power_law_graph(args.num_nodes, args.avg_degree, num_features=100,
                           num_classes=47, feature_noise=args.feature_noise,
                           split=(0.1, 0.1, 0.8), seed=args.seed,
                           name='demo_power_law')
    print(f'SYNTHETIC graph {data.name}: {data.num_nodes:,} nodes, '
          f'{data.num_edges:,} edges, 100 features, 47 classes; '
          f'{int(data.train_mask.sum()):,} training seeds; device {device}')
    results = {}
    for kind in args.loaders:
        if kind == 'pyg':
            try:
                import torch_sparse  # noqa: F401
            except ImportError:
                print('NeighborLoader needs torch_sparse (or pyg-lib) for '
                      'its CPU sampler; skipping it')
                continue
        label = 'FusedNeighborLoader' if kind == 'fused' else 'NeighborLoader'
        loader = make_loader(kind, data, args, args.seed + 1)
        bps = loader_throughput(loader, args.throughput_batches)
        print(f'{label}: {bps:.1f} batches/s (sampling + slicing, '
              f'fan-out {args.fanout}, batch {args.batch_size})')
        acc, epoch_s = train(kind, data, args, device, label)
        results[label] = (bps, acc, epoch_s)

    print(f'\nSummary (SYNTHETIC {data.name}, fan-out {args.fanout}, '
          f'batch {args.batch_size}, {args.epochs} epochs, {device}):')
    print(f'{"loader":<22}{"batches/s":>11}{"best epoch s":>14}'
          f'{"val acc":>9}{"test acc":>10}')
    for label, (bps, acc, epoch_s) in results.items():
        print(f'{label:<22}{bps:>11.1f}{epoch_s:>14.2f}{acc["val"]:>9.3f}'
              f'{acc["test"]:>10.3f}')
    if len(results) == 2:
        (f_bps, *_), (p_bps, *_) = results.values()
        print(f'FusedNeighborLoader samples {f_bps / p_bps:.1f}x the batches/s '
              f'of NeighborLoader here.')


if __name__ == '__main__':
    main()
