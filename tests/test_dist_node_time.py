"""Node-level times in partitions (issue 45): write_partitions stores them as
PyG's Partitioner does (every node's time in every part's node_feats.pt as
'time'), read_partition reads them into Partition.node_time (counted in
nbytes; PyG's own partitioner's output too), and FusedDistNeighborLoader(...,
time_attr='time') over 2 gloo processes gives FusedNeighborLoader's
temporal batches on the whole graph (an in-edge's time is its source's; the
seeds' own times by default, or given ones), 'uniform' and 'last'."""
import os
import tempfile

import pytest
import torch
import torch.distributed as dist

from pyg_fusesample.distributed import read_partition, write_partitions

from spawn_within import spawn_within
from test_dist_sampler import N, _join, graph


def node_times():
    return torch.randint(0, 50, (N, ), generator=torch.Generator()
                         .manual_seed(11))


def write(root, world):
    edge_index, x, y = graph()
    write_partitions(root, N, [(edge_index[0], edge_index[1])], world,
                     assignment='hash', node_feats=x, labels=y,
                     node_time=node_times())


def train_nodes():
    return (torch.arange(N) % 3 == 0).nonzero().view(-1)


def given_times():
    return torch.randint(10, 60, (train_nodes().numel(), ),
                         generator=torch.Generator().manual_seed(12))


def _worker(rank, world, root, init, out_dir, strategy, given):
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        loader = FusedDistNeighborLoader(
            part, [4, 3], input_nodes=train_nodes(), batch_size=16,
            shuffle=True, seed=5, time_attr='time',
            temporal_strategy=strategy,
            input_time=given_times() if given else None)
        torch.save([b.to_dict() for b in loader],
                   os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('strategy,given', [('uniform', False),
                                            ('last', False),
                                            ('uniform', True)])
def test_node_time_loader_equals_fused_neighbor_loader(strategy, given):
    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    edge_index, x, y = graph()
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=N,
                time=node_times())
    world = 2
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write(root, world)
        spawn_within(_worker, args=(world, root, os.path.join(tmp, 'init'),
                                    tmp, strategy, given), nprocs=world)
        got = [torch.load(os.path.join(tmp, f'{r}.pt'), weights_only=False)
               for r in range(world)]
    train, times = train_nodes(), given_times()
    for rank, batches in enumerate(got):
        mine = rank_seeds(torch.arange(train.numel()), rank, world,
                          shuffle=False)
        want = list(FusedNeighborLoader(
            data, [4, 3], input_nodes=train[mine],
            input_time=times[mine] if given else None, time_attr='time',
            temporal_strategy=strategy, batch_size=16, shuffle=True, seed=5))
        assert len(batches) == len(want) > 0
        for a, b in zip(batches, want):
            for key in ('x', 'y', 'edge_index', 'n_id', 'e_id', 'batch'):
                assert torch.equal(a[key], b[key]), key


def test_write_and_read_node_times(tmp_path):
    root = str(tmp_path / 'part')
    write(root, 2)
    for p in range(2):
        part = read_partition(root, p)
        assert torch.equal(part.node_time[None], node_times())
        assert part.nbytes()['node_time'] == 8 * N
        assert torch.equal(part.to('cpu').node_time[None], node_times())
    raw = torch.load(os.path.join(root, 'part_0', 'node_feats.pt'))
    assert torch.equal(raw['time'], node_times())  # PyG's layout


def test_reads_pyg_partitioner_node_times(tmp_path, monkeypatch):
    # PyG's own Partitioner with a node-level 'time' (it stores every
    # node's time in every part; its METIS call replaced by a fixed
    # assignment, as tests/test_partition_files.py does)
    from torch_geometric.data import Data

    from test_partition_files import pyg_partition
    edge_index, x, _ = graph()
    data = Data(x=x, edge_index=edge_index, num_nodes=N, time=node_times())
    pyg_partition(data, 2, tmp_path, monkeypatch)
    part = read_partition(str(tmp_path), 1)
    assert torch.equal(part.node_time[None], node_times())


def test_time_attr_refusals(tmp_path):
    from pyg_fusesample.distributed.dist_sampler import partition_times
    root = str(tmp_path / 'part')
    edge_index, x, y = graph()
    write_partitions(root, N, [(edge_index[0], edge_index[1])], 1,
                     node_feats=x)
    part = read_partition(root, 0)
    with pytest.raises(ValueError, match='holds no times'):
        partition_times(part, None, 'time')
    with pytest.raises(ValueError, match='no edge-level times'):
        partition_times(part, None, 'edge_time')
    with pytest.raises(ValueError, match="must be 'time'"):
        partition_times(part, None, 'year')
    with pytest.raises(ValueError, match="'node_time' names the node type"):
        write_partitions(str(tmp_path / 'p2'), {'a': 3},
                         {('a', 'to', 'a'): []}, 1,
                         node_time={'b': torch.zeros(3, dtype=torch.long)})
