"""fusesample::keyed_draws: the draws of neighbor_sample's targets under
their batch positions, hop after hop (the distributed sampler's building
block), uniform and weighted, with and without replacement, -1 and 0
fan-outs, int32 rows, a local CSC of a subset of targets; opcheck; bad
inputs name the argument; on CPU and CUDA, and the CUDA kernel's draws,
counts and error messages equal the CPU kernel's. Also
fusesample::segment_cumsum (the weighted rule's prefix sums): each segment
from zero."""
import pytest
import torch

import reference as ref
from conftest import devices
from pyg_fusesample.ops import keyed_draws, neighbor_sample
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import slot_values, weighted_csc

DEVICES = devices()


def on(device, *tensors):
    return [None if t is None else t.to(device) for t in tensors]


def whole_graph(dtype=torch.long, weighted=False):
    # (weighted: the weighted rule's CSC, zero weights dropped, and its
    # per-segment prefix sums)
    edge_index = ref.random_graph(80, 900, seed=3, hubs=1, isolated=4)
    g = build_csc(edge_index, 80)
    cum = None
    if weighted:
        gen = torch.Generator().manual_seed(4)
        w = torch.rand(edge_index.size(1), generator=gen, dtype=torch.float64)
        w[torch.rand(w.numel(), generator=gen) < 0.2] = 0
        rule = weighted_csc(g, slot_values(g, w))
        g, cum = rule.graph, rule.weight_cumsum
    return g.colptr, g.row.to(dtype), g.edge_id, cum


@pytest.mark.parametrize('fanout', [[3, 2], [-1, 2], [0, 4], [5, 5, 5]])
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('dtype', [torch.long, torch.int])
@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('device', DEVICES)
def test_each_hop_is_the_ops(fanout, replace, dtype, weighted, device):
    # (neighbor_sample on the CPU is the reference; keyed_draws on `device`)
    colptr, row, edge_id, cum = whole_graph(dtype, weighted)
    seed = torch.tensor([5, 17, 17, 40, 79])
    out = neighbor_sample(colptr, row, edge_id, seed, fanout, replace, False,
                          11, weight_cumsum=cum)
    begin, end, e0 = 0, seed.numel(), 0
    for hop, k in enumerate(fanout):
        frontier = out.node[begin:end]
        # a subset's local CSC (odd targets), asked with their positions
        keep = torch.arange(frontier.numel()) % 2 == 1
        targets = frontier[keep]
        deg = colptr[targets + 1] - colptr[targets]
        local_ptr = torch.cat([torch.zeros(1, dtype=torch.long),
                               deg.cumsum(0)])
        slots = torch.cat([torch.arange(int(colptr[v]), int(colptr[v + 1]))
                           for v in targets.tolist()] or
                          [torch.empty(0, dtype=torch.long)])
        # (a segment's prefix sums do not depend on the segments around it)
        got = keyed_draws(*on(device, local_ptr, row[slots], edge_id[slots],
                              torch.arange(targets.numel()),
                              torch.arange(begin, end)[keep]), k, replace, 11,
                          hop, *on(device, None if cum is None else cum[slots]))
        got = type(got)(*(t.cpu() for t in got))
        hop_edges = int(out.num_sampled_edges[hop])
        col = out.col[e0:e0 + hop_edges]
        want = torch.isin(col, torch.arange(begin, end)[keep])
        assert torch.equal(got.edge, out.edge[e0:e0 + hop_edges][want])
        assert torch.equal(got.row, out.node[out.row[e0:e0 + hop_edges][want]])
        assert got.count.sum() == got.edge.numel()
        e0 += hop_edges
        begin, end = end, end + int(out.num_sampled_nodes[hop + 1])


@pytest.mark.parametrize('device', DEVICES)
def test_opcheck(device):
    colptr, row, edge_id, _ = whole_graph()
    torch.library.opcheck(
        torch.ops.fusesample.keyed_draws.default,
        (*on(device, colptr, row, edge_id, torch.tensor([1, 2, 7]),
             torch.tensor([0, 9, 4])), 3, False, 5, 1))


@pytest.mark.parametrize('change,match', [
    (dict(target=torch.tensor([80])), "'target' holds ids"),
    (dict(target=torch.tensor([-1])), "'target' holds ids"),
    (dict(key=torch.tensor([1, 2])), "one entry per target"),
    (dict(key=torch.tensor([1.0])), "'key' must be Long"),
    (dict(num_neighbors=-2), "'num_neighbors' must be >= -1"),
    (dict(hop=-1), "'hop' must be >= 0"),
    (dict(colptr=torch.tensor([0, 5, 3] + [900] * 78)), "colptr"),
    (dict(weight_cumsum=torch.ones(3, dtype=torch.float64)),
     "'weight_cumsum' must have"),
    (dict(weight_cumsum=torch.ones(900)), "'weight_cumsum' must be Double"),
])
@pytest.mark.parametrize('device', DEVICES)
def test_bad_inputs(change, match, device):
    colptr, row, edge_id, _ = whole_graph()
    args = dict(colptr=colptr, row=row, edge_id=edge_id,
                target=torch.tensor([3]), key=torch.tensor([0]),
                num_neighbors=2, replace=False, rng_seed=0, hop=0)
    args.update(change)
    args = {name: v.to(device) if isinstance(v, torch.Tensor) else v
            for name, v in args.items()}
    with pytest.raises(RuntimeError, match=match):
        keyed_draws(**args)


def test_segment_cumsum_sums_each_segment_from_zero():
    from pyg_fusesample.ops import segment_cumsum
    g = torch.Generator().manual_seed(0)
    ptr = torch.tensor([0, 3, 3, 7, 8])
    values = torch.rand(8, generator=g, dtype=torch.float64) * 1e6
    out = segment_cumsum(ptr, values)
    for s in range(4):
        total = 0.0
        for i in range(int(ptr[s]), int(ptr[s + 1])):
            total += float(values[i])
            assert float(out[i]) == total  # bitwise: left to right from 0
    with pytest.raises(RuntimeError, match="'values' must be Double"):
        segment_cumsum(ptr, values.float())
    with pytest.raises(RuntimeError, match="ptr"):
        segment_cumsum(torch.tensor([0, 9]), values)


def temporal_whole_graph(weighted=False):
    # The temporal rule's CSC (segments sorted by edge time; with weights,
    # zero weights dropped and prefix sums in time order).
    from pyg_fusesample.sampler.rule_graph import (temporal_csc,
                                                   weighted_temporal_csc)
    edge_index = ref.random_graph(80, 900, seed=5, hubs=1, isolated=4)
    g = build_csc(edge_index, 80)
    gen = torch.Generator().manual_seed(6)
    t = torch.randint(0, 50, (edge_index.size(1), ), generator=gen)
    if weighted:
        w = torch.rand(edge_index.size(1), generator=gen, dtype=torch.float64)
        w[torch.rand(w.numel(), generator=gen) < 0.2] = 0
        rule = weighted_temporal_csc(g, slot_values(g, w), slot_values(g, t))
    else:
        rule = temporal_csc(g, slot_values(g, t))
    return rule.graph, rule.edge_time, rule.weight_cumsum


@pytest.mark.parametrize('fanout', [[3, 2], [-1, 2], [0, 4]])
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('strategy', ['uniform', 'last'])
@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('device', DEVICES)
def test_each_temporal_hop_is_the_ops(fanout, replace, strategy, weighted,
                                      device):
    # The op's disjoint temporal batch, hop by hop: each frontier node's
    # draws under its position and its root seed's time.
    if weighted and strategy == 'last' and replace:
        pytest.skip("refused by the rule (tested in test_bad_inputs)")
    g, edge_time, cum = temporal_whole_graph(weighted)
    seed = torch.tensor([5, 17, 17, 40, 79])
    seed_time = torch.tensor([10, 49, 3, 25, 40])
    out = neighbor_sample(g.colptr, g.row, g.edge_id, seed, fanout, replace,
                          True, 11, edge_time=edge_time, seed_time=seed_time,
                          temporal_strategy=strategy, weight_cumsum=cum)
    begin, end, e0 = 0, seed.numel(), 0
    for hop, k in enumerate(fanout):
        frontier = out.node[begin:end]
        got = keyed_draws(*on(device, g.colptr, g.row, g.edge_id, frontier,
                              torch.arange(begin, end)), k, replace, 11, hop,
                          *on(device, cum, edge_time,
                              seed_time[out.batch[begin:end]]), strategy)
        got = type(got)(*(t.cpu() for t in got))
        hop_edges = int(out.num_sampled_edges[hop])
        assert torch.equal(got.edge, out.edge[e0:e0 + hop_edges])
        assert torch.equal(got.row,
                           out.node[out.row[e0:e0 + hop_edges]])
        # no draw later than its root's time
        root_time = seed_time[out.batch[out.col[e0:e0 + hop_edges]]]
        slot_of = torch.full((int(g.edge_id.max()) + 1, ), -1)
        slot_of[g.edge_id] = torch.arange(g.edge_id.numel())
        assert bool((edge_time[slot_of[got.edge]] <= root_time).all())
        e0 += hop_edges
        begin, end = end, end + int(out.num_sampled_nodes[hop + 1])


@pytest.mark.parametrize('device', DEVICES)
def test_temporal_bad_inputs(device):
    g, edge_time, _ = temporal_whole_graph()
    g, edge_time = g.to(device), edge_time.to(device)
    args = (g.colptr, g.row, g.edge_id, *on(device, torch.tensor([1, 2]),
                                            torch.tensor([0, 1])), 3, False,
            5, 0)
    with pytest.raises(RuntimeError, match="come together"):
        keyed_draws(*args, edge_time=edge_time)
    with pytest.raises(RuntimeError, match="'seed_time' must have 2"):
        keyed_draws(*args, edge_time=edge_time,
                    seed_time=torch.tensor([4], device=device))
    with pytest.raises(ValueError, match="'temporal_strategy' must be"):
        keyed_draws(*args, edge_time=edge_time,
                    seed_time=torch.tensor([4, 4], device=device),
                    temporal_strategy='x')
    shuffled = edge_time.clone()
    seg = int((g.colptr[1:] - g.colptr[:-1]).argmax())
    a, b = int(g.colptr[seg]), int(g.colptr[seg + 1]) - 1
    shuffled[a], shuffled[b] = edge_time[b] + 1, edge_time[a]
    with pytest.raises(RuntimeError, match="not sorted within the in-edges"):
        keyed_draws(g.colptr, g.row, g.edge_id,
                    *on(device, torch.tensor([seg]), torch.tensor([0])), 3,
                    False, 5, 0, edge_time=shuffled,
                    seed_time=torch.tensor([100], device=device))


@pytest.mark.parametrize('device', DEVICES)
def test_no_targets_and_no_draws(device):
    colptr, row, edge_id, _ = whole_graph()
    colptr, row, edge_id = on(device, colptr, row, edge_id)
    none = torch.empty(0, dtype=torch.long, device=device)
    got = keyed_draws(colptr, row, edge_id, none, none, 3, False, 5, 0)
    assert [t.numel() for t in got] == [0, 0, 0]
    # k = 0, and isolated targets: counts of 0, no draws
    target = torch.tensor([3, 79, 78], device=device)
    for k, want in ((0, [0, 0, 0]), (4, None)):
        got = keyed_draws(colptr, row, edge_id, target,
                          torch.tensor([0, 1, 2], device=device), k, True, 5,
                          0)
        assert got.count.device == target.device
        if want is not None:
            assert got.count.tolist() == want and got.row.numel() == 0
        assert got.count[1:].tolist() == [0, 0]  # 78, 79: isolated


def hub_graph(weights, temporal, dtype):
    # Two hubs of in-degree ~300 (> 32 * kRegisterChunks = 128: weighted
    # draws without replacement search them in memory, and k = 200 leaves
    # picks to the exponential keys), isolated nodes; 'skewed' weights
    # (10^0 .. 10^12) send small segments to the exponential keys too.
    from pyg_fusesample.sampler.rule_graph import (temporal_csc,
                                                   weighted_temporal_csc)
    edge_index = ref.random_graph(600, 3000, seed=7, hubs=2, isolated=10)
    g = build_csc(edge_index, 600)
    gen = torch.Generator().manual_seed(8)
    E = edge_index.size(1)
    w = None
    if weights is not None:
        w = torch.rand(E, generator=gen, dtype=torch.float64)
        if weights == 'skewed':
            w = 10 ** (12 * w)
        w[torch.rand(E, generator=gen) < 0.1] = 0
    t = torch.randint(0, 50, (E, ), generator=gen)
    if temporal is None:
        rule = weighted_csc(g, slot_values(g, w)) if w is not None else None
        edge_time = None
    elif w is not None:
        rule = weighted_temporal_csc(g, slot_values(g, w), slot_values(g, t))
    else:
        rule = temporal_csc(g, slot_values(g, t))
    if rule is not None:
        g, edge_time, cum = rule.graph, rule.edge_time, rule.weight_cumsum
    else:
        cum = None
    return g.colptr, g.row.to(dtype), g.edge_id, cum, edge_time


@pytest.mark.cuda
@pytest.mark.parametrize('k', [-1, 0, 1, 3, 200])
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('weights', [None, 'uniform', 'skewed'])
@pytest.mark.parametrize('temporal', [None, 'uniform', 'last'])
@pytest.mark.parametrize('dtype', [torch.long, torch.int])
def test_cuda_equals_cpu(k, replace, weights, temporal, dtype):
    if weights is not None and temporal == 'last' and replace:
        pytest.skip("refused by the rule (tested in test_bad_inputs)")
    colptr, row, edge_id, cum, edge_time = hub_graph(weights, temporal, dtype)
    n = colptr.numel() - 1
    deg = colptr[1:] - colptr[:-1]
    assert int(deg.max()) > 200 and int((deg == 0).sum()) >= 10
    gen = torch.Generator().manual_seed(9)
    # every node (the isolated ones too), the hubs (0, 1) again and again,
    # and some repeats, in a random order, under random keys
    target = torch.cat([torch.arange(n), torch.tensor([0, 1] * 8),
                        torch.randint(n, (200, ), generator=gen)])
    target = target[torch.randperm(target.numel(), generator=gen)]
    key = torch.randint(0, 1 << 40, (target.numel(), ), generator=gen)
    seed_time = None
    if temporal is not None:
        # (half of them later than every edge: the hubs' whole segments)
        seed_time = torch.randint(0, 100, (target.numel(), ), generator=gen)
    for eid in (edge_id, None):
        args = (colptr, row, eid, target, key)
        rule = (cum, edge_time, seed_time)
        want = keyed_draws(*args, k, replace, 12345, 2, *rule,
                           temporal or 'uniform')
        got = keyed_draws(*on('cuda', *args), k, replace, 12345, 2,
                          *on('cuda', *rule), temporal or 'uniform')
        assert got.count.is_cuda and got.row.is_cuda and got.edge.is_cuda
        for name, w, g in zip(('count', 'row', 'edge'), want, got):
            assert g.dtype == w.dtype == torch.long
            assert torch.equal(g.cpu(), w), name
        assert int(want.count.sum()) == want.row.numel()


@pytest.mark.cuda
def test_cuda_error_messages_are_the_cpus():
    # The CUDA kernel finds these on the device; its messages are the CPU
    # kernel's (all targets' range; the first unsorted request's segment).
    def message(device, *args, **kwargs):
        args = [a.to(device) if isinstance(a, torch.Tensor) else a
                for a in args]
        kwargs = {n: v.to(device) if isinstance(v, torch.Tensor) else v
                  for n, v in kwargs.items()}
        with pytest.raises(RuntimeError) as info:
            keyed_draws(*args, **kwargs)
        return str(info.value).splitlines()[0]

    colptr, row, edge_id, _ = whole_graph()
    for target in ([3, 80, 5], [-1], [-4, 2, 90]):
        target = torch.tensor(target)
        args = (colptr, row, edge_id, target, torch.arange(target.numel()),
                2, False, 0, 0)
        cpu = message('cpu', *args)
        assert "'target' holds ids" in cpu
        assert message('cuda', *args) == cpu
    g, edge_time, _ = temporal_whole_graph()
    deg = g.colptr[1:] - g.colptr[:-1]
    segs = torch.argsort(deg, descending=True)[:3].tolist()
    shuffled = edge_time.clone()
    for seg in segs[:2]:  # two unsorted segments, asked for after a sorted one
        a, b = int(g.colptr[seg]), int(g.colptr[seg + 1]) - 1
        shuffled[a], shuffled[b] = edge_time[b] + 1, edge_time[a]
    target = torch.tensor([segs[2], segs[1], segs[0], segs[1]])
    args = (g.colptr, g.row, g.edge_id, target, torch.arange(4), 3, False, 5,
            0)
    kwargs = dict(edge_time=shuffled, seed_time=torch.full((4, ), 100))
    cpu = message('cpu', *args, **kwargs)
    assert f'CSC segment {segs[1]} ' in cpu
    assert message('cuda', *args, **kwargs) == cpu
    # a bad target is reported before an unsorted segment, as on the CPU
    bad = torch.tensor([segs[0], 80])
    args = (g.colptr, g.row, g.edge_id, bad, torch.arange(2), 3, False, 5, 0)
    kwargs = dict(edge_time=shuffled, seed_time=torch.full((2, ), 100))
    cpu = message('cpu', *args, **kwargs)
    assert "'target' holds ids" in cpu
    assert message('cuda', *args, **kwargs) == cpu


@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('device', DEVICES)
def test_per_target_rng_seeds_are_each_batchs_draws(weighted, device):
    # rng_seeds: target i drawn under its own seed, as a call of its batch's
    # alone under that seed (several batches' requests in one call)
    colptr, row, edge_id, cum = whole_graph(weighted=weighted)
    gen = torch.Generator().manual_seed(2)
    target = torch.randint(80, (60, ), generator=gen)
    key = torch.randint(0, 1 << 40, (60, ), generator=gen)
    batch_seed = torch.tensor([7, 123456789, 2 ** 40 + 3])
    which = torch.randint(3, (60, ), generator=gen)
    args = on(device, colptr, row, edge_id, target, key)
    got = keyed_draws(*args, 3, False, 0, 1, *on(device, cum),
                      rng_seeds=batch_seed[which].to(device))
    want_count = torch.empty(60, dtype=torch.long)
    rows, edges = [[] for _ in range(60)], [[] for _ in range(60)]
    for b, seed in enumerate(batch_seed.tolist()):
        mine = (which == b).nonzero().view(-1)
        one = keyed_draws(colptr, row, edge_id, target[mine], key[mine], 3,
                          False, seed, 1, weight_cumsum=cum)
        at = 0
        for j, i in enumerate(mine.tolist()):
            c = int(one.count[j])
            want_count[i] = c
            rows[i] = one.row[at:at + c].tolist()
            edges[i] = one.edge[at:at + c].tolist()
            at += c
    assert torch.equal(got.count.cpu(), want_count)
    assert got.row.cpu().tolist() == [v for r in rows for v in r]
    assert got.edge.cpu().tolist() == [v for e in edges for v in e]
    with pytest.raises(RuntimeError, match="'rng_seeds' must have one entry"):
        keyed_draws(*args, 3, False, 0, 1, rng_seeds=batch_seed.to(device))
