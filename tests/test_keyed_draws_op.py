"""fusesample::keyed_draws: the draws of neighbor_sample's targets under
their batch positions, hop after hop (the distributed sampler's building
block), uniform and weighted, with and without replacement, -1 and 0
fan-outs, int32 rows, a local CSC of a subset of targets; opcheck; bad
inputs name the argument. Also fusesample::segment_cumsum (the weighted
rule's prefix sums): each segment from zero."""
import pytest
import torch

import reference as ref
from pyg_fusesample.ops import keyed_draws, neighbor_sample
from pyg_fusesample.sampler.graph_store import build_csc
from pyg_fusesample.sampler.rule_graph import slot_values, weighted_csc


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
def test_each_hop_is_the_ops(fanout, replace, dtype, weighted):
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
        got = keyed_draws(local_ptr, row[slots], edge_id[slots],
                          torch.arange(targets.numel()),
                          torch.arange(begin, end)[keep], k, replace, 11, hop,
                          None if cum is None else cum[slots])
        hop_edges = int(out.num_sampled_edges[hop])
        col = out.col[e0:e0 + hop_edges]
        want = torch.isin(col, torch.arange(begin, end)[keep])
        assert torch.equal(got.edge, out.edge[e0:e0 + hop_edges][want])
        assert torch.equal(got.row, out.node[out.row[e0:e0 + hop_edges][want]])
        assert got.count.sum() == got.edge.numel()
        e0 += hop_edges
        begin, end = end, end + int(out.num_sampled_nodes[hop + 1])


def test_opcheck():
    colptr, row, edge_id, _ = whole_graph()
    torch.library.opcheck(
        torch.ops.fusesample.keyed_draws.default,
        (colptr, row, edge_id, torch.tensor([1, 2, 7]),
         torch.tensor([0, 9, 4]), 3, False, 5, 1))


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
def test_bad_inputs(change, match):
    colptr, row, edge_id, _ = whole_graph()
    args = dict(colptr=colptr, row=row, edge_id=edge_id,
                target=torch.tensor([3]), key=torch.tensor([0]),
                num_neighbors=2, replace=False, rng_seed=0, hop=0)
    args.update(change)
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
def test_each_temporal_hop_is_the_ops(fanout, replace, strategy, weighted):
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
        got = keyed_draws(g.colptr, g.row, g.edge_id, frontier,
                          torch.arange(begin, end), k, replace, 11, hop, cum,
                          edge_time, seed_time[out.batch[begin:end]],
                          strategy)
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


def test_temporal_bad_inputs():
    g, edge_time, _ = temporal_whole_graph()
    args = (g.colptr, g.row, g.edge_id, torch.tensor([1, 2]),
            torch.tensor([0, 1]), 3, False, 5, 0)
    with pytest.raises(RuntimeError, match="come together"):
        keyed_draws(*args, edge_time=edge_time)
    with pytest.raises(RuntimeError, match="'seed_time' must have 2"):
        keyed_draws(*args, edge_time=edge_time, seed_time=torch.tensor([4]))
    with pytest.raises(ValueError, match="'temporal_strategy' must be"):
        keyed_draws(*args, edge_time=edge_time,
                    seed_time=torch.tensor([4, 4]), temporal_strategy='x')
    shuffled = edge_time.clone()
    seg = int((g.colptr[1:] - g.colptr[:-1]).argmax())
    a, b = int(g.colptr[seg]), int(g.colptr[seg + 1]) - 1
    shuffled[a], shuffled[b] = edge_time[b] + 1, edge_time[a]
    with pytest.raises(RuntimeError, match="not sorted within the in-edges"):
        keyed_draws(g.colptr, g.row, g.edge_id, torch.tensor([seg]),
                    torch.tensor([0]), 3, False, 5, 0, edge_time=shuffled,
                    seed_time=torch.tensor([100]))
