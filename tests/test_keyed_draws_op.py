"""fusesample::keyed_draws: the draws of neighbor_sample's targets under
their batch positions, hop after hop (the distributed sampler's building
block), with and without replacement, -1 and 0 fan-outs, int32 rows, a
local CSC of a subset of targets; opcheck; bad inputs name the argument."""
import pytest
import torch

import reference as ref
from pyg_fusesample.ops import keyed_draws, neighbor_sample
from pyg_fusesample.sampler.graph_store import build_csc


def whole_graph(dtype=torch.long):
    edge_index = ref.random_graph(80, 900, seed=3, hubs=1, isolated=4)
    g = build_csc(edge_index, 80)
    return g.colptr, g.row.to(dtype), g.edge_id


@pytest.mark.parametrize('fanout', [[3, 2], [-1, 2], [0, 4], [5, 5, 5]])
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('dtype', [torch.long, torch.int])
def test_each_hop_is_the_ops(fanout, replace, dtype):
    colptr, row, edge_id = whole_graph(dtype)
    seed = torch.tensor([5, 17, 17, 40, 79])
    out = neighbor_sample(colptr, row, edge_id, seed, fanout, replace, False,
                          11)
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
        got = keyed_draws(local_ptr, row[slots], edge_id[slots],
                          torch.arange(targets.numel()),
                          torch.arange(begin, end)[keep], k, replace, 11, hop)
        hop_edges = int(out.num_sampled_edges[hop])
        col = out.col[e0:e0 + hop_edges]
        want = torch.isin(col, torch.arange(begin, end)[keep])
        assert torch.equal(got.edge, out.edge[e0:e0 + hop_edges][want])
        assert torch.equal(got.row, out.node[out.row[e0:e0 + hop_edges][want]])
        assert got.count.sum() == got.edge.numel()
        e0 += hop_edges
        begin, end = end, end + int(out.num_sampled_nodes[hop + 1])


def test_opcheck():
    colptr, row, edge_id = whole_graph()
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
])
def test_bad_inputs(change, match):
    colptr, row, edge_id = whole_graph()
    args = dict(colptr=colptr, row=row, edge_id=edge_id,
                target=torch.tensor([3]), key=torch.tensor([0]),
                num_neighbors=2, replace=False, rng_seed=0, hop=0)
    args.update(change)
    with pytest.raises(RuntimeError, match=match):
        keyed_draws(**args)
