"""GraphSAGE on a graph partitioned over processes: each rank holds one part
(its nodes' in-edges, features and labels) and samples its batches across
all parts with FusedDistNeighborLoader, in PyG's distributed style
(torchrun, DDP, seeds sharded per rank, evaluation, checkpoints).

On the CPU, two processes (gloo):

    torchrun --standalone --nproc_per_node 2 examples/distributed_sage.py \
        --device cpu --synthetic --scale 0.01 --epochs 1

On GPUs, one process per GPU (NCCL; rank r's part on GPU LOCAL_RANK, its
batches sampled and its model trained there):

    torchrun --standalone --nproc_per_node 4 examples/distributed_sage.py \
        --device cuda --synthetic --scale 0.1 --epochs 1

Two torchrun "nodes" on one host, sharing nothing but the process group
(each node writes its own partition files from the same generated graph):

    torchrun --nnodes 2 --node_rank 0 --nproc_per_node 1 \
        --rdzv_backend c10d --rdzv_endpoint localhost:29511 \
        examples/distributed_sage.py --device cpu --synthetic --scale 0.01
    (and the same with --node_rank 1, in another shell)

``--graph mag`` trains PyG's ``to_hetero`` GraphSAGE on a heterogeneous
partition instead (the SYNTHETIC mag-like graph with ``--synthetic``: papers,
authors, institutions, fields; paper labels), seeds the papers, as
``examples/ogbn_mag_sage.py`` does on one process:

    torchrun --standalone --nproc_per_node 2 examples/distributed_sage.py \
        --device cpu --synthetic --graph mag --scale 0.01 --epochs 1

A partition of a real data set, written by PyG's ``Partitioner`` (or
``pyg_fusesample.distributed.write_partitions``) with labels, is read with
``--partition-root DIR`` (one part per rank; its ``META.json`` must say as
many parts as there are ranks). Without it, ``--synthetic`` generates the
SYNTHETIC products-like graph (every printed line says so) and partitions it
by node hash into a folder of each node's own.

``--checkpoint PATH`` saves the model, the optimizer and every rank's RNG
state after each epoch; ``--resume`` continues from it. Each epoch's batches
come from ``--seed`` and the epoch number, so a run killed between epochs
and resumed gives the same later batches and losses as an uninterrupted
run. ``--timeout`` bounds every collective: a rank that dies or never
answers ends the others with an error within it, never a hang.

``--device cuda`` reads each rank's part onto its GPU (``--pin-features``:
node features in pinned host memory instead, read by the GPU in place);
see docs/multi_gpu.md for what the distributed loader does and does not do
yet.
"""
import argparse
import datetime
import os
import os.path as osp
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.nn import to_hetero
from torch_geometric.nn.models import GraphSAGE

from pyg_fusesample.distributed import (FusedDistNeighborLoader,
                                        read_partition, write_partitions)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--device', choices=['cpu', 'cuda'], default='cpu',
                   help='cpu: gloo processes; cuda: NCCL, one GPU per '
                        'process (GPU LOCAL_RANK)')
    p.add_argument('--pin-features', action='store_true',
                   help='--device cuda: node features in pinned host '
                        'memory, the graph on the GPU')
    p.add_argument('--partition-root', default=None,
                   help="a partition folder (META.json) with labels")
    p.add_argument('--synthetic', action='store_true',
                   help='generate the SYNTHETIC products-like graph')
    p.add_argument('--scale', type=float, default=0.01)
    p.add_argument('--graph', choices=['products', 'mag'],
                   default='products',
                   help='the SYNTHETIC graph of --synthetic: products-like '
                        '(homogeneous) or mag-like (heterogeneous, paper '
                        'labels)')
    p.add_argument('--partition-dir', default=None,
                   help='where --synthetic writes its parts, a folder per '
                        'node below it (default: the temporary folder)')
    p.add_argument('--num-neighbors', type=int, nargs='+', default=[10, 5])
    p.add_argument('--batch-size', type=int, default=512)
    p.add_argument('--hidden', type=int, default=128)
    p.add_argument('--lr', type=float, default=0.003)
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--checkpoint', default=None)
    p.add_argument('--resume', action='store_true')
    p.add_argument('--timeout', type=float, default=120.0,
                   help='seconds any collective may wait for a peer')
    return p.parse_args(argv)


def synthetic_partition(args, rank: int) -> str:
    # Every node generates the same graph (seeded) and its first process
    # writes the parts into the node's own folder; nothing is shared but
    # the process group.
    node = int(os.environ.get('GROUP_RANK', os.environ.get('NODE_RANK', 0)))
    base = args.partition_dir or osp.join(
        tempfile.gettempdir(), f'pyg_fusesample_dist_sage_{os.getuid()}')
    root = osp.join(base, f'{args.graph}_scale{args.scale:g}_seed{args.seed}'
                          f'_parts{dist.get_world_size()}_node{node}')
    if int(os.environ.get('LOCAL_RANK', 0)) == 0 and \
            not osp.exists(osp.join(root, 'META.json')):
        if osp.exists(root):  # (a run cut short: no META.json)
            import shutil
            shutil.rmtree(root)
        if args.graph == 'mag':
            write_mag(args, root)
        else:
            from pyg_fusesample.datasets import products_like
            data = products_like(scale=args.scale, seed=args.seed)
            write_partitions(root, data.num_nodes,
                             [(data.edge_index[0], data.edge_index[1])],
                             dist.get_world_size(), assignment='hash',
                             node_feats=data.x, labels=data.y)
            torch.save({k: data[k] for k in ('train_mask', 'val_mask',
                                             'test_mask')},
                       osp.join(root, 'masks.pt'))
    dist.barrier()
    return root


def write_mag(args, root: str):
    # The SYNTHETIC mag-like graph (features for every node type, as PyG's
    # to_hetero_mag.py takes metapath2vec ones), the papers' labels and
    # masks.
    from pyg_fusesample.datasets import mag_like
    data = mag_like(scale=args.scale, seed=args.seed, features='all')
    write_partitions(
        root, {nt: data[nt].num_nodes for nt in data.node_types},
        {et: [tuple(data[et].edge_index)] for et in data.edge_types},
        dist.get_world_size(), assignment='hash',
        node_feats={nt: data[nt].x for nt in data.node_types},
        labels={'paper': data['paper'].y})
    torch.save({k: data['paper'][k] for k in ('train_mask', 'val_mask',
                                              'test_mask')},
               osp.join(root, 'masks.pt'))


def splits(root: str, num_nodes: int, seed: int):
    path = osp.join(root, 'masks.pt')
    if osp.exists(path):
        masks = torch.load(path)
        return masks['train_mask'], masks['test_mask']
    # A partition without masks: a seeded 80/20 split of the nodes.
    g = torch.Generator().manual_seed(seed)
    train = torch.rand(num_nodes, generator=g) < 0.8
    return train, ~train


def save_checkpoint(path: str, epoch: int, model, optimizer, rank: int,
                    device: torch.device):
    # The model and optimizer (the same on every rank under DDP) from rank 0,
    # every rank's RNG state (dropout: the CPU's, and its GPU's on CUDA) from
    # that rank.
    rng = {'cpu': torch.get_rng_state()}
    if device.type == 'cuda':
        rng['cuda'] = torch.cuda.get_rng_state(device)
    torch.save(rng, f'{path}.rng{rank}')
    if rank == 0:
        torch.save({'epoch': epoch, 'model': model.state_dict(),
                    'optimizer': optimizer.state_dict()}, f'{path}.tmp')
        os.replace(f'{path}.tmp', path)
    dist.barrier()


def load_checkpoint(path: str, model, optimizer, rank: int,
                    device: torch.device) -> int:
    state = torch.load(path, weights_only=True, map_location=device)
    model.load_state_dict(state['model'])
    optimizer.load_state_dict(state['optimizer'])
    rng = torch.load(f'{path}.rng{rank}', weights_only=True)
    torch.set_rng_state(rng['cpu'])
    if device.type == 'cuda':
        if 'cuda' not in rng:
            raise SystemExit(f'--resume: {path} was saved by a CPU run')
        torch.cuda.set_rng_state(rng['cuda'], device)
    return state['epoch']


def forward(model, batch, seed_type):
    # The seeds' outputs and labels (a HeteroData batch: its seed type's).
    if seed_type is None:
        return (model(batch.x, batch.edge_index)[:batch.batch_size],
                batch.y[:batch.batch_size])
    store = batch[seed_type]
    out = model(batch.x_dict, batch.edge_index_dict)[seed_type]
    return out[:store.batch_size], store.y[:store.batch_size]


@torch.no_grad()
def accuracy(model, loader, device: torch.device) -> float:
    model.eval()
    counts = torch.zeros(2, device=device)
    for batch in loader:
        out, y = forward(model, batch, loader.seed_type)
        counts[0] += (out.argmax(-1) == y).sum()
        counts[1] += y.numel()
    dist.all_reduce(counts)
    return float(counts[0] / counts[1].clamp_min(1))


def main(argv=None):
    args = parse_args(argv)
    if args.partition_root is None and not args.synthetic:
        raise SystemExit('distributed_sage.py: give --partition-root DIR (a '
                         'partition with labels) or --synthetic')
    device = rank_device(args)
    timeout = datetime.timedelta(seconds=args.timeout)
    if device.type == 'cuda':
        # (device_id: the communicator is this GPU's from the start)
        dist.init_process_group('nccl', timeout=timeout, device_id=device)
    else:
        dist.init_process_group('gloo', timeout=timeout)
    try:
        run(args, device)
    finally:
        # (after run() returned: DDP's reducer freed while the group
        # lives; freed after it, it could hang the process at exit)
        dist.destroy_process_group()


def rank_device(args) -> torch.device:
    # The CPU, or GPU LOCAL_RANK made this process's current device (one
    # GPU per rank, as NCCL wants it).
    if args.device == 'cpu':
        if args.pin_features:
            raise SystemExit('distributed_sage.py: --pin-features needs '
                             '--device cuda')
        return torch.device('cpu')
    if not torch.cuda.is_available():
        raise SystemExit('distributed_sage.py: --device cuda, but no CUDA '
                         'GPU is visible; run it with --device cpu')
    local = int(os.environ.get('LOCAL_RANK', 0))
    if local >= torch.cuda.device_count():
        raise SystemExit(f'distributed_sage.py: local rank {local} has no '
                         f'GPU of its own ({torch.cuda.device_count()} '
                         f'visible): start at most that many processes a '
                         f'node')
    device = torch.device('cuda', local)
    torch.cuda.set_device(device)
    return device


def run(args, device: torch.device):
    rank, world = dist.get_rank(), dist.get_world_size()
    root = args.partition_root or synthetic_partition(args, rank)
    label = '' if args.partition_root else \
        f'SYNTHETIC {args.graph}-like: '
    say = (lambda msg: print(f'{label}{msg}', flush=True)) if rank == 0 \
        else (lambda msg: None)
    # (the part read on the CPU, checked, then moved to this rank's GPU)
    part = read_partition(root, rank, with_edge_map=False,
                          device=device, pin_features=args.pin_features)
    # The labelled node type (a heterogeneous part: the one with labels)
    # seeds the batches.
    seed_type = None
    if part.is_hetero:
        labelled = [nt for nt in part.node_types
                    if 'y' in part.node_feats.get(nt, {})]
        seed_type = labelled[0] if labelled else None
    key = seed_type if part.is_hetero else None
    if key not in part.node_map or 'y' not in part.node_feats.get(key, {}):
        raise SystemExit(f'{root}: the partition holds no labels')
    num_nodes = part.node_map[key].numel()
    train_nodes, test_nodes = splits(root, num_nodes, args.seed)
    if seed_type is not None:
        train_nodes, test_nodes = (seed_type, train_nodes), \
            (seed_type, test_nodes)
    # (the labels a rank holds may miss a class: the largest of all)
    # (on the device: NCCL reduces CUDA tensors; pinned labels are not)
    classes = part.node_feats[key]['y'].max().view(1).to(device) + 1
    dist.all_reduce(classes, op=dist.ReduceOp.MAX)
    held = sum(n.numel() for n in part.nodes.values())
    say(f'{world} ranks ({device.type}, {dist.get_backend()}), '
        f'{sum(m.numel() for m in part.node_map.values()):,} nodes; rank 0 '
        f'holds {held:,} nodes and '
        f'{sum(c.num_edges for c in part.csc.values()):,} in-edges '
        f'({sum(part.nbytes().values()) / 2**20:.1f} MiB)')

    torch.manual_seed(args.seed)  # the same initial weights everywhere
    if part.is_hetero:
        # PyG's to_hetero of a lazy GraphSAGE (to_hetero_mag.py's model),
        # its shapes from one batch (collective), before DDP sees them
        model = to_hetero(GraphSAGE(-1, args.hidden, len(args.num_neighbors),
                                    int(classes), dropout=0.5),
                          (part.node_types, part.edge_types),
                          aggr='sum').to(device)
        first = next(iter(FusedDistNeighborLoader(
            part, args.num_neighbors, input_nodes=train_nodes,
            batch_size=args.batch_size, seed=args.seed)))
        model.eval()  # (no dropout draws: every rank's RNG stays seeded)
        with torch.no_grad():
            model(first.x_dict, first.edge_index_dict)
    else:
        model = GraphSAGE(part.node_feats[None]['x'].size(1), args.hidden,
                          len(args.num_neighbors), int(classes),
                          dropout=0.5).to(device)
    torch.manual_seed(args.seed + 1 + rank)  # each rank's dropout
    # (to_hetero: the last layer's convs into other types than the seeds'
    # get no gradient)
    model = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == 'cuda' else None,
        find_unused_parameters=part.is_hetero)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    start = 0
    if args.resume:
        if not args.checkpoint or not osp.exists(args.checkpoint):
            raise SystemExit(f'--resume: no checkpoint at '
                             f'{args.checkpoint!r}')
        start = load_checkpoint(args.checkpoint, model, optimizer, rank,
                                device)
        say(f'resumed after epoch {start}')
    for epoch in range(start + 1, args.epochs + 1):
        loader = FusedDistNeighborLoader(
            part, args.num_neighbors, input_nodes=train_nodes,
            batch_size=args.batch_size, shuffle=True,
            seed=args.seed * 1000 + epoch)
        model.train()
        t0, total, steps = time.perf_counter(), torch.zeros(
            1, device=device), 0
        for batch in loader:
            optimizer.zero_grad()
            out, y = forward(model, batch, seed_type)
            loss = F.cross_entropy(out, y)
            loss.backward()
            optimizer.step()
            total += loss.detach()
            steps += 1
        dist.all_reduce(total)
        total = total.cpu()  # (waits for the GPU: the epoch's end)
        seconds = time.perf_counter() - t0
        # (the same evaluation batches every epoch, resumed or not)
        acc = accuracy(model, FusedDistNeighborLoader(
            part, args.num_neighbors, input_nodes=test_nodes,
            batch_size=args.batch_size, seed=args.seed), device)
        say(f'epoch {epoch:02d}: loss {float(total) / (steps * world):.4f}'
            f', {steps} steps a rank, {seconds:.1f} s, test accuracy '
            f'{acc:.4f}')
        if args.checkpoint:
            save_checkpoint(args.checkpoint, epoch, model, optimizer,
                            rank, device)


if __name__ == '__main__':
    main()
