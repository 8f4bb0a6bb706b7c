"""FusedDistNeighborLoader on a heterogeneous partition (issue 45): rank r's
HeteroData batches, sampled across 1, 2 and 3 gloo processes that each hold
one part of a mag-like graph written by write_partitions, equal
FusedNeighborLoader's on the whole graph for rank r's share of the seeds
(every node type's n_id, x, y, num_sampled_nodes; every edge type's
edge_index, e_id, num_sampled_edges; input_id, batch_size), for one fan-out
list, a dict of fan-outs per edge type (an edge type left at 0, -1),
replacement and disjoint batches; the rules not supported yet are refused."""
import os
import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pyg_fusesample.datasets import mag_like
from pyg_fusesample.distributed import (DistNeighborSampler,
                                        FusedDistNeighborLoader,
                                        read_partition, write_partitions)

from test_dist_sampler import _join


def graph():
    return mag_like(scale=0.001, seed=3, features='all')


def fanouts(kind, data):
    if kind == 'list':
        return [3, 2]
    # a dict: the cites edges all of them at the first hop, one edge type
    # never sampled
    out = {et: [2, 2] for et in data.edge_types}
    out[('paper', 'cites', 'paper')] = [-1, 1]
    out[('author', 'affiliated_with', 'institution')] = [0, 0]
    return out


def _worker(rank, world, root, init, out_dir, kind, replace, disjoint):
    _join(rank, world, init)
    try:
        data = graph()
        part = read_partition(root, rank)
        loader = FusedDistNeighborLoader(
            part, fanouts(kind, data),
            input_nodes=('paper', data['paper'].train_mask), batch_size=8,
            shuffle=True, seed=4, replace=replace, disjoint=disjoint)
        batches = [b.to_dict() for b in loader]
        torch.save((len(loader), batches),
                   os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def on_parts(world, *args):
    data = graph()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(
            root, {nt: data[nt].num_nodes for nt in data.node_types},
            {et: [tuple(data[et].edge_index)] for et in data.edge_types},
            world, assignment='hash',
            node_feats={nt: data[nt].x for nt in data.node_types},
            labels={'paper': data['paper'].y})
        mp.spawn(_worker, args=(world, root, os.path.join(tmp, 'init'), tmp,
                                *args), nprocs=world)
        return [torch.load(os.path.join(tmp, f'{r}.pt'), weights_only=False)
                for r in range(world)]


@pytest.mark.parametrize('world,kind,replace,disjoint', [
    (1, 'list', False, False), (2, 'list', False, False),
    (3, 'dict', False, False), (2, 'list', True, False),
    (2, 'dict', False, True)])
def test_hetero_batches_equal_fused_neighbor_loader(world, kind, replace,
                                                    disjoint):
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    data = graph()
    train = data['paper'].train_mask.nonzero().view(-1)
    got = on_parts(world, kind, replace, disjoint)
    assert len({n for n, _ in got}) == 1  # as many batches on every rank
    for rank, (num_batches, batches) in enumerate(got):
        want = list(FusedNeighborLoader(
            data, fanouts(kind, data),
            input_nodes=('paper', rank_seeds(train, rank, world,
                                             shuffle=False)),
            batch_size=8, shuffle=True, seed=4, replace=replace,
            disjoint=disjoint))
        assert num_batches == len(want) == len(batches) > 0
        for a, b in zip(batches, want):
            for nt in data.node_types:
                keys = ['n_id', 'x'] + (['y'] if nt == 'paper' else []) + (
                    ['batch'] if disjoint else [])
                for key in keys:
                    assert torch.equal(a[nt][key], b[nt][key]), (nt, key)
                assert list(a[nt]['num_sampled_nodes']) == \
                    list(b[nt].num_sampled_nodes), nt
            for et in data.edge_types:
                for key in ('edge_index', 'e_id'):
                    assert torch.equal(a[et][key], b[et][key]), (et, key)
                assert list(a[et]['num_sampled_edges']) == \
                    list(b[et].num_sampled_edges), et
            assert torch.equal(a['paper']['input_id'], b['paper'].input_id)
            assert a['paper']['batch_size'] == b['paper'].batch_size


def _refusal_worker(rank, world, root, init, out_dir, kind, replace,
                    disjoint):
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        said = []
        for kwargs in ({'edge_weight': True}, {'cache_rows': 5},
                       {'edge_time': torch.zeros(1, dtype=torch.long),
                        'disjoint': True}):
            try:
                DistNeighborSampler(part, [2], **kwargs)
            except NotImplementedError as e:
                said.append(str(e))
        try:
            FusedDistNeighborLoader(part, [2], input_nodes=torch.arange(3))
        except ValueError as e:
            said.append(str(e))
        try:
            FusedDistNeighborLoader(part, [2], input_nodes=('venue', None))
        except KeyError as e:
            said.append(str(e))
        torch.save(said, os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def test_hetero_refusals():
    data = graph()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(
            root, {nt: data[nt].num_nodes for nt in data.node_types},
            {et: [tuple(data[et].edge_index)] for et in data.edge_types}, 1,
            node_feats={nt: data[nt].x for nt in data.node_types})
        mp.spawn(_refusal_worker, args=(1, root, os.path.join(tmp, 'init'),
                                        tmp, 'list', False, False), nprocs=1)
        said = torch.load(os.path.join(tmp, '0.pt'))
    assert len(said) == 5
    for rule, msg in zip(('edge_weight', 'cache_rows', 'edge_time'), said):
        assert rule in msg and 'heterogeneous partition' in msg
    assert '(node_type, ids or mask)' in said[3]
    assert 'venue' in said[4]
