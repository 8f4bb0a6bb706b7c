"""FusedDistNeighborLoader on a heterogeneous partition (issue 45): rank r's
HeteroData batches, sampled across 1, 2 and 3 gloo processes that each hold
one part of a mag-like graph written by write_partitions, equal
FusedNeighborLoader's on the whole graph for rank r's share of the seeds
(every node type's n_id, x, y, num_sampled_nodes; every edge type's
edge_index, e_id, num_sampled_edges; input_id, batch_size), for one fan-out
list, a dict of fan-outs per edge type (an edge type left at 0, -1),
replacement and disjoint batches, weights (zero weights among them),
node-level times (two node types timed, two not), edge-level times and a
cache of hot remote rows; bad arguments are refused. The same on GPUs
(NCCL, one GPU a rank, parts read onto it: world 1 on any machine with a
GPU, world 2 where two are visible), every batch tensor on the rank's GPU."""
import os
import tempfile

import pytest
import torch
import torch.distributed as dist

from pyg_fusesample.datasets import mag_like
from pyg_fusesample.distributed import (DistNeighborSampler,
                                        FusedDistNeighborLoader,
                                        read_partition, write_partitions)

from host_reads import HostReads
from spawn_within import spawn_within
from test_dist_sampler import _join, _on_cpu, two_gpus


def graph(rule=None):
    data = mag_like(scale=0.001, seed=3, features='all')
    g = torch.Generator().manual_seed(8)
    if rule == 'weighted':
        for et in data.edge_types:
            w = torch.rand(data[et].num_edges, generator=g,
                           dtype=torch.float64)
            w[torch.rand(w.numel(), generator=g) < 0.2] = 0  # never drawn
            data[et].edge_weight = w
    elif rule == 'node_time':  # papers and authors have times, not the rest
        for nt in ('paper', 'author'):
            data[nt].time = torch.randint(0, 40, (data[nt].num_nodes, ),
                                          generator=g)
    elif rule == 'edge_time':
        for et in data.edge_types:
            data[et].time = torch.randint(0, 40, (data[et].num_edges, ),
                                          generator=g)
    return data


def seed_times(num):
    return torch.randint(10, 50, (num, ),
                         generator=torch.Generator().manual_seed(9))


def fanouts(kind, data):
    if kind == 'list':
        return [3, 2]
    # a dict: the cites edges all of them at the first hop, one edge type
    # never sampled
    out = {et: [2, 2] for et in data.edge_types}
    out[('paper', 'cites', 'paper')] = [-1, 1]
    out[('author', 'affiliated_with', 'institution')] = [0, 0]
    return out


def rule_kwargs(rule, data, train, distributed):
    # the loaders' arguments of a sampling rule (the distributed loader's
    # or FusedNeighborLoader's)
    if rule == 'weighted':
        return {'edge_weight': True} if distributed else {
            'weight_attr': 'edge_weight'}
    if rule == 'node_time':
        return {'time_attr': 'time'}
    if rule == 'edge_time':
        return {'time_attr': 'edge_time' if distributed else 'time',
                'input_time': seed_times(train.numel())}
    if rule == 'cache':  # (rows of hot remote nodes: the same batches)
        return {'cache_rows': 40} if distributed else {}
    if rule in ('ahead', 'thread'):  # (batches made ahead: the same ones)
        return {'prefetch': rule == 'ahead' or rule} if distributed else {}
    if rule == 'grouped':  # (several batches a call: the same ones)
        return {'batches_per_call': 3} if distributed else {}
    if rule == 'grouped-ahead':  # (a group made ahead)
        return {'batches_per_call': 2, 'prefetch': True} \
            if distributed else {}
    return {}


def _worker(rank, world, root, init, out_dir, kind, replace, disjoint,
            rule, backend='gloo'):
    _join(rank, world, init, backend=backend)
    try:
        data = graph(rule)
        device = torch.device('cuda', rank) if backend == 'nccl' else \
            torch.device('cpu')
        part = read_partition(root, rank, device=device)
        if rule == 'edge_time':  # (the whole graph's, at the part's edges)
            for et in data.edge_types:
                part.csc[et].edge_time = data[et].time[
                    part.csc[et].edge_id.cpu()].to(device)
        train = data['paper'].train_mask.nonzero().view(-1)
        loader = FusedDistNeighborLoader(
            part, fanouts(kind, data), input_nodes=('paper', train),
            batch_size=8, shuffle=True, seed=4, replace=replace,
            disjoint=disjoint, **rule_kwargs(rule, data, train, True))
        batches, where = [], set()
        for b in loader:
            where |= {str(v.device) for s in b.stores for k, v in s.items()
                      if isinstance(v, torch.Tensor) and k != 'input_id'}
            batches.append(_on_cpu(b.to_dict()))
        if rule == 'cache':
            # every node type's cached rows, gathered (all hits: no row
            # crosses the ranks), are the whole graph's
            s = loader.sampler
            assert s.cache_nbytes() > 0
            for i, nt in enumerate(s.typed.node_types):
                ids, _ = s._cached(nt)
                ids = ids - s.typed.node_offset[i]
                before = s.remote_rows_fetched
                got = s.gather_all(ids.to(device), ['x'], node_type=nt)['x']
                assert s.remote_rows_fetched == before
                assert torch.equal(got.cpu(), data[nt].x[ids.cpu()])
        torch.save((len(loader), batches, where),
                   os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def on_parts(world, *args, rule=None, backend='gloo'):
    data = graph(rule)
    weighted = rule == 'weighted'
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(
            root, {nt: data[nt].num_nodes for nt in data.node_types},
            {et: [tuple(data[et].edge_index) + (
                (data[et].edge_weight, ) if weighted else ())]
             for et in data.edge_types},
            world, assignment='hash',
            node_feats={nt: data[nt].x for nt in data.node_types},
            labels={'paper': data['paper'].y},
            node_time={nt: data[nt].time for nt in data.node_types
                       if 'time' in data[nt]} or None)
        spawn_within(_worker, args=(world, root, os.path.join(tmp, 'init'),
                                    tmp, *args, rule, backend),
                     nprocs=world)
        return [torch.load(os.path.join(tmp, f'{r}.pt'), weights_only=False)
                for r in range(world)]


@pytest.mark.parametrize('world,kind,replace,disjoint,rule', [
    (1, 'list', False, False, None), (2, 'list', False, False, None),
    (3, 'dict', False, False, None), (2, 'list', True, False, None),
    (2, 'dict', False, True, None), (2, 'list', False, False, 'weighted'),
    (3, 'dict', True, False, 'weighted'), (2, 'list', False, True,
                                          'node_time'),
    (2, 'dict', False, True, 'edge_time'), (3, 'list', False, False,
                                            'cache'),
    (2, 'dict', False, False, 'ahead'), (2, 'list', False, True, 'thread'),
    (2, 'dict', False, False, 'grouped'),
    (3, 'list', False, True, 'grouped-ahead')])
def test_hetero_batches_equal_fused_neighbor_loader(world, kind, replace,
                                                    disjoint, rule):
    check_batches(world, kind, replace, disjoint, rule, 'gloo')


# (fan-outs, replace, disjoint, rule) on GPUs: every rule once (the cache
# of remote rows where there are remote rows: world size 2)
GPU_CASES = [('list', False, False, None), ('dict', True, False, 'weighted'),
             ('list', False, True, 'node_time'),
             ('dict', False, True, 'edge_time')]


@pytest.mark.cuda
@pytest.mark.parametrize('world,kind,replace,disjoint,rule', [
    (1, *case) for case in GPU_CASES] + [
    pytest.param(2, *case, marks=two_gpus)
    for case in GPU_CASES + [('list', False, False, 'cache'),
                             ('dict', False, False, 'grouped')]])
def test_hetero_batches_equal_on_gpus(world, kind, replace, disjoint, rule):
    check_batches(world, kind, replace, disjoint, rule, 'nccl')


def check_batches(world, kind, replace, disjoint, rule, backend):
    # rank r's batches (world processes, `backend`) against
    # FusedNeighborLoader's on the whole graph for r's share of the seeds
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    data = graph(rule)
    train = data['paper'].train_mask.nonzero().view(-1)
    got = on_parts(world, kind, replace, disjoint, rule=rule,
                   backend=backend)
    assert len({n for n, _, _ in got}) == 1  # as many batches on every rank
    for rank, (num_batches, batches, where) in enumerate(got):
        assert where == {f'cuda:{rank}' if backend == 'nccl' else 'cpu'}
        mine = rank_seeds(torch.arange(train.numel()), rank, world,
                          shuffle=False)
        extra = rule_kwargs(rule, data, train, False)
        if 'input_time' in extra:
            extra['input_time'] = extra['input_time'][mine]
        want = list(FusedNeighborLoader(
            data, fanouts(kind, data), input_nodes=('paper', train[mine]),
            batch_size=8, shuffle=True, seed=4, replace=replace,
            disjoint=disjoint, **extra))
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
        for kwargs in ({'edge_weight': True},
                       {'time_attr': 'time', 'disjoint': True}):
            try:  # (the partition has no weights, no times)
                DistNeighborSampler(part, [2], **kwargs)
            except ValueError as e:
                said.append(str(e))
        try:
            FusedDistNeighborLoader(part, [2], input_nodes=torch.arange(3))
        except ValueError as e:
            said.append(str(e))
        try:
            FusedDistNeighborLoader(part, [2], input_nodes=('venue', None))
        except KeyError as e:
            said.append(str(e))
        sampler = DistNeighborSampler(part, [2])
        nt = sampler.typed.node_types[0]
        try:  # (a type-local id one past the type's nodes)
            sampler.gather_all(torch.tensor([part.node_map[nt].numel()]),
                               ['x'], node_type=nt)
        except ValueError as e:
            said.append(f'{nt} {part.node_map[nt].numel()}: {e}')
        torch.save(said, os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def _paper_features_worker(rank, world, root, init, out_dir):
    _join(rank, world, init)
    try:
        data = graph()
        train = data['paper'].train_mask.nonzero().view(-1)
        loader = FusedDistNeighborLoader(
            read_partition(root, rank), [3, 2],
            input_nodes=('paper', train), batch_size=8, shuffle=True,
            seed=4)
        batches = [b.to_dict() for b in loader]
        s = loader.sampler
        torch.save((batches, s.exchanges, s.batches_sampled),
                   os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def test_types_without_features_exchange_nothing():
    # Features on papers only (as in ogbn-mag): a batch's all-to-alls are
    # its hops' (3 each: replies padded) and the papers' x and y (2 + 2);
    # the other types' batches carry no features, as the whole graph's.
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    data = graph()
    for nt in data.node_types:
        if nt != 'paper':
            del data[nt].x
    world = 2
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(
            root, {nt: data[nt].num_nodes for nt in data.node_types},
            {et: [tuple(data[et].edge_index)] for et in data.edge_types},
            world, node_feats={'paper': data['paper'].x},
            labels={'paper': data['paper'].y})
        spawn_within(_paper_features_worker,
                     args=(world, root, os.path.join(tmp, 'init'), tmp),
                     nprocs=world)
        got = [torch.load(os.path.join(tmp, f'{r}.pt'), weights_only=False)
               for r in range(world)]
    train = data['paper'].train_mask.nonzero().view(-1)
    for rank, (batches, exchanges, sampled) in enumerate(got):
        mine = rank_seeds(torch.arange(train.numel()), rank, world,
                          shuffle=False)
        want = list(FusedNeighborLoader(
            data, [3, 2], input_nodes=('paper', train[mine]), batch_size=8,
            shuffle=True, seed=4))
        assert len(batches) == len(want) == sampled > 0
        for a, b in zip(batches, want):
            for nt in data.node_types:
                assert ('x' in a[nt]) == (nt == 'paper') == ('x' in b[nt])
                assert torch.equal(a[nt]['n_id'], b[nt].n_id), nt
            assert torch.equal(a['paper']['x'], b['paper'].x)
            assert torch.equal(a['paper']['y'], b['paper'].y)
        assert exchanges == sampled * (3 * 2 + 2 + 2)


def test_hetero_refusals():
    data = graph()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(
            root, {nt: data[nt].num_nodes for nt in data.node_types},
            {et: [tuple(data[et].edge_index)] for et in data.edge_types}, 1,
            node_feats={nt: data[nt].x for nt in data.node_types})
        spawn_within(_refusal_worker,
                     args=(1, root, os.path.join(tmp, 'init'), tmp, 'list',
                           False, False), nprocs=1)
        said = torch.load(os.path.join(tmp, '0.pt'))
    assert len(said) == 5
    assert "no 'edge_attr'" in said[0]
    assert 'holds no times' in said[1]
    assert '(node_type, ids or mask)' in said[2]
    assert 'venue' in said[3]
    nt, n = said[4].split(':')[0].split()
    assert f"'ids' holds ids outside [0, {n})" in said[4], said[4]


def test_hetero_batches_read_the_host_once_a_call(tmp_path):
    # Splitting a call's batches by node and edge type reads their type
    # counts once (a stable sort by type, not a nonzero per type and batch)
    from pyg_fusesample.distributed import hetero_batch
    data = graph()
    root = str(tmp_path / 'part')
    write_partitions(
        root, {nt: data[nt].num_nodes for nt in data.node_types},
        {et: [tuple(data[et].edge_index)] for et in data.edge_types}, 1,
        node_feats={nt: data[nt].x for nt in data.node_types})
    dist.init_process_group('gloo', init_method=f'file://{tmp_path}/init',
                            rank=0, world_size=1)
    try:
        s = DistNeighborSampler(read_partition(root, 0), [3, 2])
        offset = s.typed.node_offset[s.typed.type_of('paper')]
        for B in (1, 3):
            seeds = [torch.arange(4) + 4 * b for b in range(B)]
            outs, _, _ = s._sample_batches([x + offset for x in seeds],
                                           list(range(B)))
            with HostReads(hetero_batch.__file__) as reads:
                got = hetero_batch.hetero_batches(
                    s, outs, 'paper', seeds, hetero_batch.feature_names_of(s))
            assert reads.count == 1, B
            assert len(got) == B and got[-1]['paper'].batch_size == 4
    finally:
        dist.destroy_process_group()
