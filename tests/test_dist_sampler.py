"""DistNeighborSampler (issue 45): batches sampled across 1, 2, 3 and 4
gloo processes, each holding one part of a partition written by
write_partitions, equal the single-process op's batches on the whole graph
(nodes, edges, edge ids, per-hop counts) for every partitioning (range,
hash), uniform and weighted (edge_attr; zero weights), disjoint or not,
fan-outs with -1, 0 and replacement, a hub whose in-edges come from
every part, isolated nodes and an empty batch; features gathered from their
owners equal the whole graph's rows; bad setups are refused. The same
batches on GPUs (2 NCCL processes, one GPU each: skipped with fewer than 2
GPUs), and the bytes every rank counts (sent by all == received by all,
and per peer as the batches say)."""
import contextlib
import datetime
import os
import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pyg_fusesample.distributed import (DistNeighborSampler,
                                        FusedDistNeighborLoader, dist_sampler,
                                        read_partition, write_partitions)
from pyg_fusesample.ops import neighbor_sample
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import slot_values, weighted_csc

from host_reads import HostReads
from spawn_within import spawn_within

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


def _join(rank, world, init, seconds=60, backend='gloo'):
    # a worker's process group (file rendezvous): gloo, or NCCL with GPU
    # `rank` made the process's device first (one GPU per rank)
    kwargs = {}
    if backend == 'nccl':
        torch.cuda.set_device(rank)
        kwargs['device_id'] = torch.device('cuda', rank)
    dist.init_process_group(backend, init_method=f'file://{init}', rank=rank,
                            world_size=world,
                            timeout=datetime.timedelta(seconds=seconds),
                            **kwargs)


def _on_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    return value


def _worker(rank, world, root, init, out_dir, fanout, replace,
            weighted=False, disjoint=False, backend='gloo'):
    _join(rank, world, init, backend=backend)
    try:
        device = torch.device('cuda', rank) if backend == 'nccl' else \
            torch.device('cpu')
        part = read_partition(root, rank, device=device)
        sampler = DistNeighborSampler(part, fanout, replace=replace,
                                      edge_weight=weighted,
                                      disjoint=disjoint)
        results = []
        for i, seed in enumerate(seed_batches()):
            # every rank asks for its own batches (here: a rotation)
            mine = seed_batches()[(i + rank) % len(seed_batches())]
            out = sampler.sample(mine, rng_seed=100 + i)
            assert out.node.device == device
            results.append((i, mine, _on_cpu(out._asdict()),
                            sampler.gather(out.node, 'x').cpu(),
                            sampler.gather(out.node, 'y').cpu()))
        torch.save(results, os.path.join(out_dir, f'{rank}.pt'))
    finally:
        dist.destroy_process_group()


def weights(edge_index):
    g = torch.Generator().manual_seed(9)
    w = torch.rand(edge_index.size(1), generator=g, dtype=torch.float64)
    w[torch.rand(w.numel(), generator=g) < 0.2] = 0  # never drawn
    return w


def on_parts(worker, world, name, *args, weighted=False, assignment='hash',
             labels=True):
    # Writes `world` parts of the test graph (its features, its labels
    # unless told otherwise, its weights as edge_attr where `weighted`),
    # runs worker(rank, world, root, init, out_dir, *args) in `world`
    # processes and returns what each rank saved to out_dir/<name><rank>.pt.
    edge_index, x, y = graph()
    chunk = (edge_index[0], edge_index[1]) + (
        (weights(edge_index), ) if weighted else ())
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'part')
        write_partitions(root, N, [chunk], world, assignment=assignment,
                         node_feats=x, labels=y if labels else None)
        spawn_within(worker, args=(world, root, os.path.join(tmp, 'init'),
                                   tmp, *args), nprocs=world)
        return [torch.load(os.path.join(tmp, f'{name}{r}.pt'))
                for r in range(world)]


def run(world, fanout, replace, assignment, weighted=False, disjoint=False,
        backend='gloo'):
    results = on_parts(_worker, world, '', fanout, replace, weighted,
                       disjoint, backend, weighted=weighted,
                       assignment=assignment)
    return (results, ) + graph()


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
    check_whole_graph(world, assignment, fanout, replace, weighted, disjoint)


def check_whole_graph(world, assignment, fanout, replace, weighted, disjoint,
                      backend='gloo'):
    results, edge_index, x, y = run(world, fanout, replace, assignment,
                                    weighted, disjoint, backend)
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
    got = on_parts(_loader_worker, world, 'loader', disjoint, cache_rows)
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
        hung = [p for p in procs if p.exitcode is None]
        for p in hung:  # (ended here, not left to outlive the suite)
            p.kill()
        assert not hung, 'a rank hung'
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
        at_once = DistNeighborSampler(part, [4, 3], cache_rows=cache_rows)
        results, reads = [], []
        for i, seed in enumerate(seed_batches()):
            out = plain.sample(seed, rng_seed=100 + i)
            plain.gather(out.node, 'y')  # (as many gathers as cached's)
            results.append((out.node, plain.gather(out.node, 'x'),
                            cached.gather(out.node, 'x'),
                            cached.gather(out.node, 'y')))
            # (both features at once: the misses read once, not per row
            # set; the rows as gathered one by one)
            with HostReads(dist_sampler.__file__, ['_gather_all']) as got:
                both = at_once._gather_all(out.node, ['x', 'y'])
            reads.append(got.count)
            assert all(torch.equal(both[n], r) for n, r in
                       zip('xy', results[-1][2:]))
        src = part.csc[None].row
        remote = src[part.node_map[None][src] != rank]
        torch.save(dict(results=results, plain=plain.remote_rows_fetched,
                        cached=cached.remote_rows_fetched, reads=reads,
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
    got = on_parts(_cache_worker, 3, 'cache', cache_rows)
    for rank, g in enumerate(got):
        # (the cached gather's one host read a call: its misses' positions)
        assert g['reads'] == [1] * len(g['results'])
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
    outcomes = on_parts(_mismatch_worker, 2, 'mismatch', assignment='range',
                        labels=False)
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
    results = on_parts(_temporal_worker, world, 'temporal', fanout, replace,
                       strategy, weighted, weighted=weighted)
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


@contextlib.contextmanager
def one_rank(tmp_path, backend='gloo'):
    # This process as the one rank of a gloo group (or an NCCL one on GPU
    # 0), holding the test graph's single part (with its features): yields
    # the part (on GPU 0 with NCCL).
    edge_index, x, y = graph()
    write_partitions(str(tmp_path), N, [(edge_index[0], edge_index[1])], 1,
                     node_feats=x)
    part = read_partition(str(tmp_path), 0)
    kwargs = {}
    if backend == 'nccl':
        torch.cuda.set_device(0)
        kwargs['device_id'] = torch.device('cuda', 0)
        part = part.to('cuda:0')
    dist.init_process_group(backend, init_method=f'file://{tmp_path}/init',
                            rank=0, world_size=1, **kwargs)
    try:
        yield part
    finally:
        dist.destroy_process_group()


def test_temporal_refusals(tmp_path):
    with one_rank(tmp_path) as part:
        times = torch.zeros(part.csc[None].num_edges, dtype=torch.long)
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


def test_a_request_for_a_node_not_owned_is_refused(tmp_path):
    # A node map that disagrees with the part's nodes (a corrupt partition)
    # sends a rank requests for nodes it does not hold: refused, whether
    # the check is read on its own (a gather) or with a hop's draw sizes
    # (sampling), before any row of the request is used.
    with one_rank(tmp_path) as part:
        sampler = DistNeighborSampler(part, [2, 2])
        assert sampler.sample(torch.tensor([5, 8]), 0).node[:2].tolist() == \
            [5, 8]
        sampler.nodes = sampler.nodes[sampler.nodes != 5]
        with pytest.raises(RuntimeError, match='asked for nodes it does not '
                                               'own'):
            sampler.sample(torch.tensor([8, 5]), 0)
        with pytest.raises(RuntimeError, match='asked for nodes it does not '
                                               'own'):
            sampler.gather(torch.tensor([5]))
        sampler.nodes = sampler.nodes[:0]  # (a part holding nothing)
        with pytest.raises(RuntimeError, match='does not own'):
            sampler.sample(torch.tensor([1]), 0)


def test_ids_out_of_range_are_refused_by_name(tmp_path, monkeypatch):
    # sample's seeds and gather's ids outside [0, N): a ValueError naming
    # them on every device (on a GPU an index out of range in the ops would
    # end in a device-side assert), before any exchange. The loader's
    # seeds are checked once, when it is made: its batches read no range
    # (no host read a batch for it).
    from pyg_fusesample.distributed import dist_sampler
    with one_rank(tmp_path) as part:
        sampler = DistNeighborSampler(part, [2, 2])
        for bad in ([N], [-1], [3, N + 7]):
            with pytest.raises(ValueError, match=rf"'seed' holds ids outside "
                                                 rf"\[0, {N}\)"):
                sampler.sample(torch.tensor(bad), 0)
            with pytest.raises(ValueError, match=rf"'ids' holds ids outside "
                                                 rf"\[0, {N}\)"):
                sampler.gather(torch.tensor(bad))
        assert sampler.gather(torch.tensor([0, N - 1])).shape == (2, 5)
        checks = []
        monkeypatch.setattr(dist_sampler, 'check_ids_in_range',
                            lambda *args, **kw: checks.append(args))
        loader = FusedDistNeighborLoader(part, [2, 2],
                                         input_nodes=torch.arange(40),
                                         batch_size=8, prefetch=False)
        assert sum(b.batch_size for b in loader) == 40
        assert checks == []


def sampled_together_and_alone(part, device):
    # DistNeighborSampler._sample_batches (a loader's batches_per_call):
    # each batch as _sample gives it alone, whatever its neighbours in the
    # call (an empty batch, repeats, no hops; every rule)
    edge_index = graph()[0]
    time = edge_times(edge_index).to(device)[part.csc[None].edge_id]
    cases = [dict(num_neighbors=[3, 2]), dict(num_neighbors=[0, 4]),
             dict(num_neighbors=[2, -1, 2]),
             dict(num_neighbors=[3, 3], replace=True),
             dict(num_neighbors=[3, 2], disjoint=True),
             dict(num_neighbors=[3, 2], disjoint=True, edge_time=time,
                  temporal_strategy='last'),
             dict(num_neighbors=[])]
    seeds = [torch.tensor([5, 8, 7, 70, 5]), torch.tensor([8, 3]),
             torch.tensor([], dtype=torch.long), torch.tensor([7, 7, 1])]
    keys = [3, 11, 5, 2 ** 40 + 1]
    for case in cases:
        s = DistNeighborSampler(part, **case)
        times = [seed_times(0, x.numel()) for x in seeds] \
            if 'edge_time' in case else None
        got, node, index = s._sample_batches(seeds, keys, times)
        assert len(got) == len(seeds)
        for b, g in enumerate(got):
            want = s._sample(seeds[b], keys[b],
                             None if times is None else times[b])
            for name, w, x in zip(want._fields, want, g):
                assert (torch.equal(w, x) if isinstance(w, torch.Tensor)
                        else w == x), (case, b, name)
            assert torch.equal(node[index[b]], want.node)
            assert want.node.device == node.device
            assert node.device.type == device


def test_batches_sampled_together_are_each_sampled_alone(tmp_path):
    with one_rank(tmp_path) as part:
        sampled_together_and_alone(part, 'cpu')


@pytest.mark.cuda
def test_batches_sampled_together_on_a_gpu(tmp_path):
    with one_rank(tmp_path, backend='nccl') as part:
        sampled_together_and_alone(part, 'cuda')


def test_batches_per_call_refuses_what_it_does_not_take(tmp_path):
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    with one_rank(tmp_path) as part:
        for bad in (0, -1, 2.0, True):
            with pytest.raises(ValueError, match="'batches_per_call' must"):
                FusedDistNeighborLoader(part, [2], batch_size=4,
                                        batches_per_call=bad)
        with pytest.raises(ValueError, match="without prefetch='thread'"):
            FusedDistNeighborLoader(part, [2], batch_size=4,
                                    prefetch='thread', batches_per_call=2)
        # (an epoch of 5 batches in calls of 2, 2 and 1, the last batch
        # smaller; more batches a call than an epoch has)
        for per_call in (2, 8):
            loader = FusedDistNeighborLoader(part, [2, 2], batch_size=9,
                                             input_nodes=torch.arange(40),
                                             seed=4, batches_per_call=per_call)
            plain = FusedDistNeighborLoader(part, [2, 2], batch_size=9,
                                            input_nodes=torch.arange(40),
                                            seed=4)
            got, want = list(loader), list(plain)
            assert [b.batch_size for b in got] == [9, 9, 9, 9, 4]
            assert all(torch.equal(a.n_id, b.n_id) and
                       torch.equal(a.edge_index, b.edge_index) and
                       torch.equal(a.x, b.x) for a, b in zip(got, want))
            assert loader.sampler.batches_sampled == 5


def test_batches_per_call_default_is_eight_on_a_gpu_else_one(tmp_path):
    # (decided without a GPU: the rule, then a CPU loader's resolved value)
    from pyg_fusesample.distributed.dist_loader import _batches_per_call
    cuda, cpu = torch.device('cuda', 0), torch.device('cpu')
    assert _batches_per_call(None, cuda, True, 'L') == 8
    assert _batches_per_call(None, cuda, False, 'L') == 8
    assert _batches_per_call(None, cuda, 'thread', 'L') == 1
    assert _batches_per_call(None, cpu, False, 'L') == 1
    assert _batches_per_call(3, cpu, False, 'L') == 3
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    with one_rank(tmp_path) as part:
        assert FusedDistNeighborLoader(part, [2]).batches_per_call == 1


def test_the_ops_behind_sample_and_gather_refuse_bad_arguments(tmp_path):
    # fusesample::dist_sample_hops and dist_fetch_rows (the sampler's C++
    # ops, exchanges included): fan-outs that are not whole hops of
    # num_types, a process group name nothing is registered under, ids of
    # another dtype: clear errors, before any exchange.
    _, x, _ = graph()
    with one_rank(tmp_path) as part:
        s = DistNeighborSampler(part, [2, 2])
        ops = torch.ops.fusesample
        name = dist.group.WORLD.group_name
        key = torch.tensor([5, 8])

        def hops(group, fanouts, num_types, key=key):
            return ops.dist_sample_hops(
                group, key, N, s.owner, s.nodes, s.csc.colptr, s.csc.row,
                s.csc.edge_id, fanouts, num_types, False, 0, False, None,
                None, None, False)
        assert hops(name, [2, 2], 1)[0][:2].tolist() == [5, 8]
        with pytest.raises(RuntimeError, match="'fanouts' must hold "
                                               "'num_types'"):
            hops(name, [2, 2, 2], 2)
        with pytest.raises(RuntimeError, match='no such group'):
            hops('no such group', [2, 2], 1)
        with pytest.raises(RuntimeError, match="'seed_key'"):
            hops(name, [2, 2], 1, key=key.int())
        rows = ops.dist_fetch_rows(name, key, s.owner, s.nodes,
                                   [part.node_feats[None]['x']], 0)[0]
        assert torch.equal(rows[0], x[key])
        with pytest.raises(RuntimeError, match="'ids'"):
            ops.dist_fetch_rows(name, key.int(), s.owner, s.nodes, [], 0)


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
    got = on_parts(_temporal_loader_worker, world, 'tloader', strategy)
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


# ---------------------------------------------------------------- devices

two_gpus = pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason='needs 2 GPUs: NCCL processes, one GPU each')

# FusedDistNeighborLoader's options per case (both loaders: the
# distributed one over 2 parts, FusedNeighborLoader on the whole graph)
PARITY = {
    'uniform': dict(num_neighbors=[4, 3]),
    'all': dict(num_neighbors=[-1, 3]),
    'replace': dict(num_neighbors=[4, 3], replace=True),
    'weighted': dict(num_neighbors=[4, 3], weighted=True),
    'temporal': dict(num_neighbors=[4, 3], temporal=True),
    'cache': dict(num_neighbors=[4, 3], cache_rows=50),
    'pinned': dict(num_neighbors=[4, 3], pinned=True, cache_rows=20),
    # (batches_per_call: several batches sampled in one call, the same
    # batches; the last call of an epoch takes what is left)
    'grouped': dict(num_neighbors=[4, 3], batches_per_call=3),
    'grouped-temporal': dict(num_neighbors=[4, 3], temporal=True,
                             batches_per_call=2),
    'grouped-all-cache': dict(num_neighbors=[-1, 3], cache_rows=50,
                              batches_per_call=4),
}
PARITY_CASES = [(device, case) for device in ('cpu', 'cuda')
                for case in PARITY if device == 'cuda' or case != 'pinned']


def _parity_worker(rank, world, root, init, out_dir, backend, case):
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    _join(rank, world, init, backend=backend)
    try:
        opts = PARITY[case]
        device = torch.device('cuda', rank) if backend == 'nccl' else \
            torch.device('cpu')
        part = read_partition(root, rank, device=device,
                              pin_features=opts.get('pinned', False))
        edge_index, _, _ = graph()
        train = (torch.arange(N) % 3 == 0).nonzero().view(-1)
        kw = {}
        if opts.get('temporal'):
            kw = dict(edge_time=edge_times(edge_index)[
                part.csc[None].edge_id.cpu()],
                      input_time=seed_times(0, train.numel()))
        loader = FusedDistNeighborLoader(
            part, opts['num_neighbors'], input_nodes=train, batch_size=16,
            shuffle=True, seed=5, replace=opts.get('replace', False),
            edge_weight=opts.get('weighted', False),
            cache_rows=opts.get('cache_rows', 0),
            batches_per_call=opts.get('batches_per_call', 1), **kw)
        batches, where = [], set()
        for b in loader:
            batch = {}
            for key, value in b.to_dict().items():
                if isinstance(value, torch.Tensor):
                    if key != 'input_id':
                        where.add(str(value.device))
                    value = value.cpu()
                batch[key] = value
            batches.append(batch)
        s = loader.sampler
        counted = dict(batches=batches, where=where,
                       sent=s.bytes_sent_to, received=s.bytes_received_from,
                       exchanges=s.exchanges, host_reads=s.host_reads,
                       bytes_sent=s.bytes_sent,
                       bytes_received=s.bytes_received,
                       host_seconds=s.host_seconds)
        s.reset_counters()
        counted['host_seconds_reset'] = s.host_seconds
        torch.save(counted, os.path.join(out_dir, f'parity{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('device,case,world', [
    pytest.param(d, c, 2, marks=[pytest.mark.cuda, two_gpus]) if d == 'cuda'
    else (d, c, 2) for d, c in PARITY_CASES] + [
    pytest.param('cuda', c, 1, marks=pytest.mark.cuda) for c in PARITY])
def test_loader_batches_equal_on_the_device(device, case, world):
    # `world` processes, each holding a part on its device (CUDA: NCCL, rank
    # r on GPU r; the CPU: gloo; world 1: one GPU, every exchange a copy to
    # itself, the device path on any machine with a GPU): every batch
    # equals FusedNeighborLoader's on the whole graph (on the CPU and on the
    # device), and every tensor of a batch is on the rank's device; the
    # bytes one rank counts as sent to another are the bytes that one
    # counts as received, and a batch takes 2 host reads a hop and 1 for x
    # and y, and all-to-alls: 3 a hop (4 with a fan-out of -1: replies not
    # padded) and 2 + 2 for x and y.
    from torch_geometric.data import Data

    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.loader import rank_seeds
    opts = PARITY[case]
    edge_index, x, y = graph()
    weighted, temporal = opts.get('weighted', False), opts.get('temporal',
                                                               False)
    got = on_parts(_parity_worker, world, 'parity',
                   'nccl' if device == 'cuda' else 'gloo', case,
                   weighted=weighted)
    train = (torch.arange(N) % 3 == 0).nonzero().view(-1)
    times = seed_times(0, train.numel())
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=N)
    kw = {}
    if weighted:
        data.w = weights(edge_index)
        kw['weight_attr'] = 'w'
    if temporal:
        data.time = edge_times(edge_index)
        kw['time_attr'] = 'time'
    keys = ('x', 'y', 'edge_index', 'n_id', 'e_id', 'input_id') + (
        ('batch', ) if temporal else ())
    hops = len(opts['num_neighbors'])
    for rank, g in enumerate(got):
        assert g['where'] == {f'cuda:{rank}' if device == 'cuda' else 'cpu'}
        mine = rank_seeds(torch.arange(train.numel()), rank, world,
                          shuffle=False)
        if temporal:
            kw['input_time'] = times[mine]
        for ref_device in {'cpu', device}:
            want = list(FusedNeighborLoader(
                data.clone().to(ref_device), opts['num_neighbors'],
                input_nodes=train[mine], batch_size=16, shuffle=True, seed=5,
                replace=opts.get('replace', False), **kw))
            assert len(g['batches']) == len(want) > 0
            for a, b in zip(g['batches'], want):
                for key in keys:
                    assert torch.equal(a[key], b[key].cpu()), (ref_device,
                                                               key)
                assert a['batch_size'] == b.batch_size
                assert list(a['num_sampled_nodes']) == list(
                    b.num_sampled_nodes)
                assert list(a['num_sampled_edges']) == list(
                    b.num_sampled_edges)
        # (exchanges and reads a call, of one batch or of a group)
        B = opts.get('batches_per_call', 1)
        calls = -(-len(g['batches']) // B)
        assert g['exchanges'] == calls * (sum(
            4 if k < 0 else 3 for k in opts['num_neighbors']) + 2 + 2)
        assert g['host_reads'] == calls * (2 * hops + 1)
        # (the ops' host time by part: each within its ops' totals, all
        # zero after a reset)
        h = g['host_seconds']
        assert set(h) == set(dist_sampler.HOST_PARTS) and min(h.values()) >= 0
        assert h['dist_sample_hops'] > 0 and h['dist_fetch_rows'] > 0
        assert h['relabelling'] <= h['dist_sample_hops']
        assert h['reads'] + h['exchanges'] + h['relabelling'] <= \
            h['dist_sample_hops'] + h['dist_fetch_rows']
        assert set(g['host_seconds_reset'].values()) == {0.0}
        assert g['bytes_sent'] == sum(g['sent'])
        assert g['bytes_sent'] > 0 or world == 1  # (no peer to send to)
        assert g['sent'][rank] == g['received'][rank] == 0
    for r in range(world):
        for p in range(world):
            assert got[r]['sent'][p] == got[p]['received'][r]
    assert sum(g['bytes_sent'] for g in got) == \
        sum(g['bytes_received'] for g in got)


def _bytes_worker(rank, world, root, init, out_dir, fanout):
    _join(rank, world, init)
    try:
        sampler = DistNeighborSampler(read_partition(root, rank), fanout)
        results = []
        for i in range(len(seed_batches())):
            mine = seed_batches()[(i + rank) % len(seed_batches())]
            sampler.reset_counters()
            out = sampler.sample(mine, rng_seed=100 + i)
            counted = (list(sampler.bytes_sent_to),
                       list(sampler.bytes_received_from), sampler.exchanges,
                       sampler.host_reads)
            sampler.reset_counters()
            feats = sampler.gather_all(out.node, ['x', 'y'])
            gathered = (list(sampler.bytes_sent_to),
                        list(sampler.bytes_received_from),
                        sampler.exchanges, sampler.host_reads,
                        sampler.remote_rows_fetched)
            results.append((out._asdict(), counted, gathered, feats))
        torch.save(results, os.path.join(out_dir, f'bytes{rank}.pt'))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('world,fanout', [(2, [4, 3]), (3, [-1, 2])])
def test_byte_counters(world, fanout):
    # gloo: every rank's counted bytes per peer are those its batches and
    # its peers' batches imply. Per hop and peer: 8 bytes of sizes; 16 a
    # frontier node the peer owns (the request); then the replies to the
    # peer's requests this rank serves: with fan-out k >= 0, 8 (1 + 2 k) a
    # request (its draw count and k sources and edge ids, padded); with -1,
    # 8 a request (its draw count) and 16 a draw. Per gather of x (5
    # floats) and y (int64): 8 bytes of sizes, 8 an id asked for, 28 a row
    # sent.
    edge_index, x, y = graph()
    got = on_parts(_bytes_worker, world, 'bytes', fanout)
    from pyg_fusesample.distributed import assign_nodes
    owner = assign_nodes(N, world, 'hash')
    hops = len(fanout)
    for i in range(len(seed_batches())):
        outs = [got[r][i][0] for r in range(world)]

        def frontier(out, h):
            start = sum(out['num_sampled_nodes'][:h])
            return out['node'][start:start + out['num_sampled_nodes'][h]]

        def targets(out, h):  # the target of every draw of hop h
            start = sum(out['num_sampled_edges'][:h])
            col = out['col'][start:start + out['num_sampled_edges'][h]]
            return out['node'][col]

        for r in range(world):
            _, (sent, received, exchanges, reads), gathered, feats = got[r][i]
            assert (exchanges, reads) == (
                sum(4 if k < 0 else 3 for k in fanout), 2 * hops)
            for p in range(world):
                if p == r:
                    assert sent[p] == received[p] == 0
                    continue
                want = 0
                for h in range(hops):
                    want += 8
                    want += 16 * int((owner[frontier(outs[r], h)] == p).sum())
                    served = int((owner[frontier(outs[p], h)] == r).sum())
                    if fanout[h] >= 0:
                        want += 8 * (1 + 2 * fanout[h]) * served
                    else:
                        want += 8 * served + 16 * int(
                            (owner[targets(outs[p], h)] == r).sum())
                assert sent[p] == want
                assert received[p] == got[p][i][1][0][r]
            g_sent, g_received, g_exchanges, g_reads, fetched = gathered
            assert (g_exchanges, g_reads) == (4, 1)
            node = outs[r]['node']
            assert fetched == int((owner[node] != r).sum())
            for p in range(world):
                if p != r:
                    asked = int((owner[node] == p).sum())
                    served = int((owner[outs[p]['node']] == r).sum())
                    assert g_sent[p] == 8 + 8 * asked + 28 * served
                    assert g_received[p] == 8 + 8 * served + 28 * asked
            assert torch.equal(feats['x'], x[node])
            assert torch.equal(feats['y'], y[node])


def test_partition_to_the_cpu(tmp_path):
    # Partition.to keeps a part's fields; the CPU reads as before;
    # pin_features needs a GPU.
    edge_index, x, y = graph()
    write_partitions(str(tmp_path), N, [(edge_index[0], edge_index[1])], 2,
                     node_feats=x, labels=y)
    part = read_partition(str(tmp_path), 1)
    moved = read_partition(str(tmp_path), 1, device='cpu')
    assert moved.device == torch.device('cpu')
    assert moved.nbytes() == part.nbytes()
    assert torch.equal(moved.csc[None].row, part.csc[None].row)
    assert torch.equal(moved.node_feats[None]['x'], part.node_feats[None]['x'])
    with pytest.raises(ValueError, match='needs a CUDA device'):
        part.to('cpu', pin_features=True)


@pytest.mark.cuda
def test_ids_out_of_range_on_a_gpu(tmp_path):
    # On a GPU (NCCL, one rank, in this process) the range checks refuse
    # bad seeds and ids before the ops index with them, and the device is
    # still usable afterwards: the next batch and gather are the CPU's.
    edge_index, x, _ = graph()
    with one_rank(tmp_path, backend='nccl') as part:
        sampler = DistNeighborSampler(part, [2, 2])
        with pytest.raises(ValueError, match="'seed' holds ids outside"):
            sampler.sample(torch.tensor([1, N]), 0)
        with pytest.raises(ValueError, match="'ids' holds ids outside"):
            sampler.gather(torch.tensor([-1]))
        out = sampler.sample(torch.tensor([1, 2]), 0)
        g = build_csc(edge_index, N)
        want = neighbor_sample(g.colptr, g.row, g.edge_id,
                               torch.tensor([1, 2]), [2, 2], False, False, 0)
        assert torch.equal(out.node.cpu(), want.node)
        assert torch.equal(sampler.gather(out.node).cpu(), x[want.node])


@pytest.mark.cuda
def test_device_and_backend_must_agree(tmp_path):
    # A part on a GPU under a gloo group, or on the CPU under an NCCL one,
    # is refused with a message saying what to do; so is a part on another
    # GPU than the process's.
    edge_index, x, y = graph()
    write_partitions(str(tmp_path / 'p'), N,
                     [(edge_index[0], edge_index[1])], 1, node_feats=x)
    part = read_partition(str(tmp_path / 'p'), 0)
    torch.cuda.set_device(0)
    for backend in ('gloo', 'nccl'):
        dist.init_process_group(backend,
                                init_method=f'file://{tmp_path}/{backend}',
                                rank=0, world_size=1)
        try:
            wrong = part.to('cuda:0') if backend == 'gloo' else part
            with pytest.raises(ValueError, match=f'backend is {backend}'):
                DistNeighborSampler(wrong, [2])
            if backend == 'nccl':
                sampler = DistNeighborSampler(part.to('cuda:0'), [2])
                out = sampler.sample(torch.tensor([1, 2]), 0)
                assert out.node.device == torch.device('cuda:0')
                if torch.cuda.device_count() > 1:
                    with pytest.raises(ValueError, match='current CUDA'):
                        DistNeighborSampler(part.to('cuda:1'), [2])
        finally:
            dist.destroy_process_group()


@pytest.mark.cuda
@two_gpus
@pytest.mark.parametrize('fanout,replace,weighted,disjoint', [
    ([4, 3], False, False, False), ([-1, 3], True, False, False),
    ([3, 3, 3], False, True, True), ([0, 5], False, False, False)])
def test_batches_equal_the_whole_graph_on_gpus(fanout, replace, weighted,
                                               disjoint):
    # 2 NCCL processes, one GPU each: the sampler's batches (repeated seeds,
    # the hub, isolated nodes, an empty batch among them) and gathers equal
    # the op's on the whole graph
    check_whole_graph(2, 'hash', fanout, replace, weighted, disjoint,
                      backend='nccl')
