"""DistNeighborSampler (issue 45): batches sampled across 1, 2, 3 and 4
gloo processes, each holding one part of a partition written by
write_partitions, equal the single-process op's batches on the whole graph
(nodes, edges, edge ids, per-hop counts) for every partitioning (range,
hash), uniform and weighted (edge_attr; zero weights), disjoint or not,
fan-outs with -1, 0 and replacement, a hub whose in-edges come from
every part, isolated nodes and an empty batch; features gathered from their
owners equal the whole graph's rows; bad setups are refused."""
import datetime
import os
import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pyg_fusesample.distributed import (DistNeighborSampler, read_partition,
                                        write_partitions)
from pyg_fusesample.ops import neighbor_sample
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import slot_values, weighted_csc

N, E = 300, 3000
FANOUTS = [[4, 3], [-1, 2], [0, 5], [3, 3, 3]]


def graph(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (E, ), generator=g)
    dst = torch.randint(0, N - 10, (E, ), generator=g)  # 10 isolated
    hub = torch.stack([torch.arange(N), torch.full((N, ), 7)])  # node 7
    edge_index = torch.cat([torch.stack([src, dst]), hub], 1)
    x = torch.randn(N, 5, generator=g)
    y = torch.randint(0, 4, (N, ), generator=g)
    return edge_index, x, y


def seed_batches():
    g = torch.Generator().manual_seed(1)
    return [torch.randperm(N, generator=g)[:16], torch.tensor([7, 7, 3]),
            torch.empty(0, dtype=torch.long), torch.tensor([295, 296])]


def _join(rank, world, init, seconds=60):
    # a worker's gloo process group (file rendezvous)
    dist.init_process_group('gloo', init_method=f'file://{init}', rank=rank,
                            world_size=world,
                            timeout=datetime.timedelta(seconds=seconds))


def _worker(rank, world, root, init, fanout, replace, out_dir,
            weighted=False, disjoint=False):
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        sampler = DistNeighborSampler(part, fanout, replace=replace,
                                      edge_weight=weighted,
                                      disjoint=disjoint)
        results = []
        for i, seed in enumerate(seed_batches()):
            # every rank asks for its own batches (here: a rotation)
            mine = seed_batches()[(i + rank) % len(seed_batches())]
            out = sampler.sample(mine, rng_seed=100 + i)
            results.append((i, mine, out._asdict(),
                            sampler.gather(out.node, 'x'),
                            sampler.gather(out.node, 'y')))
        torch.save(results, os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def weights(edge_index):
    g = torch.Generator().manual_seed(9)
    w = torch.rand(edge_index.size(1), generator=g, dtype=torch.float64)
    w[torch.rand(w.numel(), generator=g) < 0.2] = 0  # never drawn
    return w


def run(world, fanout, replace, assignment, weighted=False, disjoint=False):
    edge_index, x, y = graph()
    chunk = (edge_index[0], edge_index[1]) + (
        (weights(edge_index), ) if weighted else ())
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [chunk], world, assignment=assignment,
                         node_feats=x, labels=y)
        mp.spawn(_worker, args=(world, root, os.path.join(tmp, 'init'),
                                fanout, replace, tmp, weighted, disjoint),
                 nprocs=world)
        return [torch.load(os.path.join(tmp, f'{r}.pt')) for r in
                range(world)], edge_index, x, y


# (each case starts `world` processes: ~2-3 s)
# (world, assignment, fan-out, replace, weighted, disjoint)
CASES = [(1, 'range', [4, 3], False, False, False),
         (2, 'range', [4, 3], False, False, False),
         (2, 'hash', [4, 3], True, False, False),
         (4, 'hash', [4, 3], False, False, False),
         (2, 'hash', [4, 3], False, True, False),
         (3, 'hash', [-1, 3], True, True, False),
         (2, 'range', [3, 3, 3], False, True, False),
         (2, 'hash', [4, 3], False, False, True),
         (3, 'hash', [3, 3, 3], True, True, True)] + [
    (2, 'hash', fanout, replace, False, False) for fanout in FANOUTS[1:]
    for replace in (False, True)]


@pytest.mark.parametrize('world,assignment,fanout,replace,weighted,disjoint',
                         CASES)
def test_batches_equal_the_whole_graph(world, assignment, fanout, replace,
                                       weighted, disjoint):
    results, edge_index, x, y = run(world, fanout, replace, assignment,
                                    weighted, disjoint)
    g = build_csc(edge_index, N)
    cum = None
    if weighted:  # FusedNeighborLoader(weight_attr=...)'s rule graph
        rule = weighted_csc(g, slot_values(g, weights(edge_index)))
        g, cum = rule.graph, rule.weight_cumsum
    for rank_results in results:
        for i, seed, out, feats, labels in rank_results:
            want = neighbor_sample(g.colptr, g.row, g.edge_id, seed, fanout,
                                   replace, disjoint, 100 + i,
                                   weight_cumsum=cum)
            if disjoint:
                assert torch.equal(out['batch'], want.batch)
            else:
                assert out['batch'] is None
            assert torch.equal(out['node'], want.node)
            assert torch.equal(out['row'], want.row)
            assert torch.equal(out['col'], want.col)
            assert torch.equal(out['edge'], want.edge)
            assert out['num_sampled_nodes'] == want.num_sampled_nodes.tolist()
            assert out['num_sampled_edges'] == want.num_sampled_edges.tolist()
            assert torch.equal(feats, x[want.node])
            assert torch.equal(labels, y[want.node])


def test_refusals(tmp_path):
    edge_index, x, y = graph()
    write_partitions(str(tmp_path / 'p'), N, [(edge_index[0], edge_index[1])],
                     2, node_feats=x)
    part = read_partition(str(tmp_path / 'p'), 1)
    with pytest.raises(RuntimeError, match='process group'):
        DistNeighborSampler(part, [2])


def _loader_worker(rank, world, root, init, out_dir, disjoint, cache_rows):
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        train = torch.arange(N) % 3 == 0
        loader = FusedDistNeighborLoader(part, [4, 3], input_nodes=train,
                                         batch_size=16, shuffle=True, seed=5,
                                         disjoint=disjoint,
                                         cache_rows=cache_rows)
        batches = [dict(b.to_dict()) for b in loader]
        torch.save((len(loader), batches),
                   os.path.join(out_dir, f'loader{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('world,disjoint,cache_rows', [
    (2, False, 0), (3, False, 0), (2, True, 0), (3, False, 50)])
def test_loader_batches_equal_fused_neighbor_loader(world, disjoint,
                                                    cache_rows):
    # Rank r's batches are FusedNeighborLoader's on the whole graph for
    # rank r's share of the seeds (same batch size, shuffle and seed), with
    # or without a cache of hot remote rows.
    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    edge_index, x, y = graph()
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=N)
    train = (torch.arange(N) % 3 == 0).nonzero().view(-1)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [(edge_index[0], edge_index[1])], world,
                         assignment='hash', node_feats=x, labels=y)
        mp.spawn(_loader_worker, args=(world, root, os.path.join(tmp, 'init'),
                                       tmp, disjoint, cache_rows),
                 nprocs=world)
        got = [torch.load(os.path.join(tmp, f'loader{r}.pt'))
               for r in range(world)]
    assert len({n for n, _ in got}) == 1  # as many batches on every rank
    for rank, (num_batches, batches) in enumerate(got):
        want = list(FusedNeighborLoader(
            data, [4, 3], input_nodes=rank_seeds(train, rank, world,
                                                 shuffle=False),
            batch_size=16, shuffle=True, seed=5, disjoint=disjoint))
        assert num_batches == len(want) == len(batches)
        keys = ('x', 'y', 'edge_index', 'n_id', 'e_id', 'input_id') + (
            ('batch', ) if disjoint else ())
        for a, b in zip(batches, want):
            for key in keys:
                assert torch.equal(a[key], b[key]), key
            assert a['batch_size'] == b.batch_size
            assert list(a['num_sampled_nodes']) == list(b.num_sampled_nodes)
            assert list(a['num_sampled_edges']) == list(b.num_sampled_edges)


def _dying_worker(rank, world, root, init, out_dir, how):
    dist.init_process_group('gloo', init_method=f'file://{init}', rank=rank,
                            world_size=world,
                            timeout=datetime.timedelta(seconds=10))
    sampler = DistNeighborSampler(read_partition(root, rank), [3, 2])
    import time
    if rank == 1:
        if how == 'hang':  # alive, but never answers
            time.sleep(14)
        os._exit(0)  # dies before the batch
    start = time.monotonic()
    try:
        sampler.sample(torch.arange(8), rng_seed=1)
        outcome = ('returned', '')
    except RuntimeError as e:
        outcome = ('raised', str(e))
    torch.save((outcome, time.monotonic() - start),
               os.path.join(out_dir, 'dying.pt'))
    os._exit(0)


@pytest.mark.parametrize('how', ['die', 'hang'])
def test_a_dead_or_silent_peer_ends_the_batch_with_an_error(how):
    edge_index, x, y = graph()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [(edge_index[0], edge_index[1])], 2,
                         node_feats=x)
        ctx = mp.get_context('spawn')
        procs = [ctx.Process(target=_dying_worker,
                             args=(r, 2, root, os.path.join(tmp, 'init'),
                                   tmp, how)) for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            assert p.exitcode is not None, 'a rank hung'
        (kind, message), seconds = torch.load(os.path.join(tmp, 'dying.pt'))
    assert kind == 'raised' and 'rank 0 of 2' in message
    assert 'died' in message
    assert seconds < 10 + 5  # within the process group's timeout


@pytest.mark.parametrize('parts', [2, 4])
def test_resident_bytes_are_a_share_plus_the_node_map(tmp_path, parts):
    # What a rank holds to sample and gather (read without the edge map),
    # counted: its n nodes' ids, their e in-edges as CSC, their features and
    # labels (8 n + 8 (n + 1) + 16 e + n (F 4 + 8) bytes), which over the
    # ranks add up to the whole graph's (plus one CSC end per extra part),
    # and the node -> part map, 8 bytes a node of the whole graph (the halo
    # of this design: no remote rows are cached).
    edge_index, x, y = graph()
    write_partitions(str(tmp_path), N, [(edge_index[0], edge_index[1])],
                     parts, assignment='hash', node_feats=x, labels=y)
    E, F = edge_index.size(1), x.size(1)
    whole = 8 * N + 8 * (N + 1) + 16 * E + N * (4 * F + 8)
    total = 0
    for rank in range(parts):
        part = read_partition(str(tmp_path), rank, with_edge_map=False)
        held = part.nbytes()
        n, e = part.nodes[None].numel(), part.csc[None].num_edges
        assert held['node_map'] == 8 * N and held['edge_map'] == 0
        share = held['nodes'] + held['csc'] + held['node_feats']
        assert share == 8 * n + 8 * (n + 1) + 16 * e + n * (4 * F + 8)
        total += share
    assert total == whole + 8 * (parts - 1)


def _cache_worker(rank, world, root, init, out_dir, cache_rows):
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        plain = DistNeighborSampler(part, [4, 3])
        cached = DistNeighborSampler(part, [4, 3], cache_rows=cache_rows)
        results = []
        for i, seed in enumerate(seed_batches()):
            out = plain.sample(seed, rng_seed=100 + i)
            plain.gather(out.node, 'y')  # (as many gathers as cached's)
            results.append((out.node, plain.gather(out.node, 'x'),
                            cached.gather(out.node, 'x'),
                            cached.gather(out.node, 'y')))
        src = part.csc[None].row
        remote = src[part.node_map[None][src] != rank]
        torch.save(dict(results=results, plain=plain.remote_rows_fetched,
                        cached=cached.remote_rows_fetched,
                        cache_ids=cached.cache_ids, remote=remote,
                        nbytes=cached.cache_nbytes()),
                   os.path.join(out_dir, f'cache{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('cache_rows', [40, 10 * N])
def test_cache_of_hot_remote_rows(cache_rows):
    # Gathers served from the cache equal the owners' rows; fewer rows cross
    # the ranks; the cache holds the remote nodes most of the part's
    # in-edges come from, and its bytes are counted: per row its id (8),
    # x (5 floats) and y (8).
    edge_index, x, y = graph()
    world = 3
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [(edge_index[0], edge_index[1])], world,
                         assignment='hash', node_feats=x, labels=y)
        mp.spawn(_cache_worker, args=(world, root, os.path.join(tmp, 'init'),
                                      tmp, cache_rows), nprocs=world)
        got = [torch.load(os.path.join(tmp, f'cache{r}.pt'))
               for r in range(world)]
    for rank, g in enumerate(got):
        for node, plain_x, cached_x, cached_y in g['results']:
            assert torch.equal(plain_x, x[node])
            assert torch.equal(cached_x, x[node])
            assert torch.equal(cached_y, y[node])
        assert g['cached'] < g['plain']
        ids, hits = torch.unique(g['remote'], return_counts=True)
        k = g['cache_ids'].numel()
        assert k == min(cache_rows, ids.numel())
        assert set(g['cache_ids'].tolist()) <= set(ids.tolist())
        # no remote node left out is hotter than one kept
        kept = torch.isin(ids, g['cache_ids'])
        if (~kept).any():
            assert int(hits[~kept].max()) <= int(hits[kept].min())
        assert g['nbytes'] == k * (8 + 4 * x.size(1) + 8)


def _mismatch_worker(rank, world, root, init, out_dir):
    _join(rank, world, init)
    try:
        DistNeighborSampler(read_partition(root, rank), [2],
                            cache_rows=5 * rank)
        outcome = ''
    except ValueError as e:
        outcome = str(e)
    finally:
        dist.destroy_process_group()
    torch.save(outcome, os.path.join(out_dir, f'mismatch{rank}.pt'))


def test_cache_rows_must_agree():
    edge_index, x, y = graph()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [(edge_index[0], edge_index[1])], 2,
                         node_feats=x)
        mp.spawn(_mismatch_worker, args=(2, root, os.path.join(tmp, 'init'),
                                         tmp), nprocs=2)
        outcomes = [torch.load(os.path.join(tmp, f'mismatch{r}.pt'))
                    for r in range(2)]
    assert all("'cache_rows' differs between the ranks" in o
               for o in outcomes)


def edge_times(edge_index):
    g = torch.Generator().manual_seed(12)
    return torch.randint(0, 40, (edge_index.size(1), ), generator=g)


def seed_times(i, n):
    g = torch.Generator().manual_seed(20 + i)
    return torch.randint(0, 45, (n, ), generator=g)


def _temporal_worker(rank, world, root, init, out_dir, fanout, replace,
                     strategy, weighted):
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        edge_index, _, _ = graph()
        times = edge_times(edge_index)[part.csc[None].edge_id]
        sampler = DistNeighborSampler(part, fanout, replace=replace,
                                      edge_weight=weighted, disjoint=True,
                                      edge_time=times,
                                      temporal_strategy=strategy)
        results = []
        for i, seed in enumerate(seed_batches()):
            mine = seed_batches()[(i + rank) % len(seed_batches())]
            t = seed_times(i, mine.numel())
            out = sampler.sample(mine, rng_seed=100 + i, seed_time=t)
            results.append((i, mine, t, out._asdict()))
        torch.save(results, os.path.join(out_dir, f'temporal{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('world,fanout,replace,strategy,weighted', [
    (2, [4, 3], False, 'uniform', False),
    (3, [-1, 3], True, 'uniform', False),
    (2, [4, 3], False, 'last', False),
    (3, [3, 3, 3], False, 'uniform', True),
    (2, [4, 3], False, 'last', True)])
def test_temporal_batches_equal_the_whole_graph(world, fanout, replace,
                                                strategy, weighted):
    # Each part's in-edges sorted by time as the whole graph's temporal
    # rule sorts them; every node draws under its root seed's time.
    from pyg_fusesample.sampler.rule_graph import (temporal_csc,
                                                   weighted_temporal_csc)
    edge_index, x, y = graph()
    chunk = (edge_index[0], edge_index[1]) + (
        (weights(edge_index), ) if weighted else ())
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [chunk], world, assignment='hash',
                         node_feats=x, labels=y)
        mp.spawn(_temporal_worker,
                 args=(world, root, os.path.join(tmp, 'init'), tmp, fanout,
                       replace, strategy, weighted), nprocs=world)
        results = [torch.load(os.path.join(tmp, f'temporal{r}.pt'))
                   for r in range(world)]
    g = build_csc(edge_index, N)
    t = slot_values(g, edge_times(edge_index))
    rule = weighted_temporal_csc(g, slot_values(g, weights(edge_index)), t) \
        if weighted else temporal_csc(g, t)
    for rank_results in results:
        for i, seed, st, out in rank_results:
            want = neighbor_sample(rule.graph.colptr, rule.graph.row,
                                   rule.graph.edge_id, seed, fanout, replace,
                                   True, 100 + i, edge_time=rule.edge_time,
                                   seed_time=st, temporal_strategy=strategy,
                                   weight_cumsum=rule.weight_cumsum)
            for key in ('node', 'row', 'col', 'edge', 'batch'):
                assert torch.equal(out[key], getattr(want, key)), key
            assert out['num_sampled_nodes'] == want.num_sampled_nodes.tolist()


def test_temporal_refusals(tmp_path):
    edge_index, x, y = graph()
    write_partitions(str(tmp_path), N, [(edge_index[0], edge_index[1])], 1,
                     node_feats=x)
    part = read_partition(str(tmp_path), 0)
    times = torch.zeros(part.csc[None].num_edges, dtype=torch.long)
    dist.init_process_group('gloo', init_method=f'file://{tmp_path}/init',
                            rank=0, world_size=1)
    try:
        with pytest.raises(ValueError, match='needs disjoint=True'):
            DistNeighborSampler(part, [2], edge_time=times)
        with pytest.raises(ValueError, match="must be int64 with one time"):
            DistNeighborSampler(part, [2], disjoint=True,
                                edge_time=times[:-1])
        with pytest.raises(ValueError, match="'temporal_strategy' must be"):
            DistNeighborSampler(part, [2], disjoint=True, edge_time=times,
                                temporal_strategy='first')
        sampler = DistNeighborSampler(part, [2], disjoint=True,
                                      edge_time=times)
        with pytest.raises(ValueError, match="'seed_time' is needed"):
            sampler.sample(torch.tensor([1, 2]), 0)
        with pytest.raises(ValueError, match='one entry per seed'):
            sampler.sample(torch.tensor([1, 2]), 0, torch.tensor([3]))
        plain = DistNeighborSampler(part, [2])
        with pytest.raises(ValueError, match='has no edge_time'):
            plain.sample(torch.tensor([1]), 0, torch.tensor([3]))
    finally:
        dist.destroy_process_group()


def _temporal_loader_worker(rank, world, root, init, out_dir, strategy):
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    _join(rank, world, init)
    try:
        part = read_partition(root, rank)
        edge_index, _, _ = graph()
        train = (torch.arange(N) % 3 == 0).nonzero().view(-1)
        loader = FusedDistNeighborLoader(
            part, [4, 3], input_nodes=train,
            input_time=seed_times(0, train.numel()), batch_size=16,
            shuffle=True, seed=5,
            edge_time=edge_times(edge_index)[part.csc[None].edge_id],
            temporal_strategy=strategy)
        batches = [dict(b.to_dict()) for b in loader]
        torch.save(batches, os.path.join(out_dir, f'tloader{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('strategy', ['uniform', 'last'])
def test_temporal_loader_equals_fused_neighbor_loader(strategy):
    # FusedNeighborLoader with an edge-level time_attr on the whole graph,
    # for each rank's share of the seeds and their times.
    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    edge_index, x, y = graph()
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=N,
                time=edge_times(edge_index))
    train = (torch.arange(N) % 3 == 0).nonzero().view(-1)
    times = seed_times(0, train.numel())
    world = 2
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [(edge_index[0], edge_index[1])], world,
                         assignment='hash', node_feats=x, labels=y)
        mp.spawn(_temporal_loader_worker,
                 args=(world, root, os.path.join(tmp, 'init'), tmp,
                       strategy), nprocs=world)
        got = [torch.load(os.path.join(tmp, f'tloader{r}.pt'))
               for r in range(world)]
    for rank, batches in enumerate(got):
        mine = rank_seeds(torch.arange(train.numel()), rank, world,
                          shuffle=False)
        want = list(FusedNeighborLoader(
            data, [4, 3], input_nodes=train[mine], input_time=times[mine],
            time_attr='time', temporal_strategy=strategy, batch_size=16,
            shuffle=True, seed=5))
        assert len(batches) == len(want) > 0
        for a, b in zip(batches, want):
            for key in ('x', 'y', 'edge_index', 'n_id', 'e_id', 'batch'):
                assert torch.equal(a[key], b[key]), key
