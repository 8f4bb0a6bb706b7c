"""fusesample::split_by_type against a plain reference (per-type masks),
CPU and CUDA, edge cases and bad inputs."""
import pytest
import torch

from pyg_fusesample.ops import split_by_type

from conftest import devices


def _sample(num_nodes, num_edges, node_sizes, edge_sizes, seed=0):
    # A typed sample: distinct global node ids in random type order, edges
    # between sample positions with random global edge ids.
    g = torch.Generator().manual_seed(seed)
    node_offset = torch.tensor([0] + node_sizes).cumsum(0)
    edge_offset = torch.tensor([0] + edge_sizes).cumsum(0)
    node = torch.randperm(int(node_offset[-1]), generator=g)[:num_nodes]
    row = torch.randint(0, max(num_nodes, 1), (num_edges,), generator=g)
    col = torch.randint(0, max(num_nodes, 1), (num_edges,), generator=g)
    edge = torch.randint(0, max(int(edge_offset[-1]), 1), (num_edges,),
                         generator=g)
    return node, node_offset, row, col, edge, edge_offset


def _reference(node, node_offset, row, col, edge, edge_offset):
    # Per type, in sample order: local node ids, and each edge type's
    # [2, n] edge_index (endpoints' positions in their type's list) and
    # local edge ids.
    ntype = torch.searchsorted(node_offset, node, right=True) - 1
    etype = torch.searchsorted(edge_offset, edge, right=True) - 1
    position = torch.empty_like(node)
    nodes, edge_index, edges = [], [], []
    for t in range(node_offset.numel() - 1):
        where = (ntype == t).nonzero().view(-1)
        position[where] = torch.arange(where.numel())
        nodes.append(node[where] - node_offset[t])
    for t in range(edge_offset.numel() - 1):
        where = (etype == t).nonzero().view(-1)
        edge_index.append(torch.stack([position[row[where]],
                                       position[col[where]]]))
        edges.append(edge[where] - edge_offset[t])
    return nodes, edge_index, edges


def _per_type(out, node_offset, edge_offset, node, edge):
    ntype = torch.searchsorted(node_offset, node, right=True) - 1
    etype = torch.searchsorted(edge_offset, edge, right=True) - 1
    sizes = torch.bincount(ntype, minlength=node_offset.numel() - 1).tolist()
    esizes = torch.bincount(etype, minlength=edge_offset.numel() - 1).tolist()
    blocks = out.edge_index.split([2 * n for n in esizes])
    return (list(out.node.split(sizes)),
            [b.view(2, n) for b, n in zip(blocks, esizes)],
            list(out.edge.split(esizes)))


CASES = [  # num_nodes, num_edges, node type sizes, edge type sizes
    (50, 300, [30, 40, 20], [100, 50, 0, 80]),
    (1, 0, [5], [7]),
    (0, 0, [3, 4], [2]),
    (40, 0, [30, 40], []),           # a graph without edge types
    (2000, 20000, [700] * 300, [50] * 3),  # > 256 node types: int32 keys
]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('case', CASES)
def test_split_matches_reference(device, case):
    args = _sample(*case)
    out = split_by_type(*(a.to(device) for a in args))
    got = _per_type(out, args[1].to(device), args[5].to(device),
                    args[0].to(device), args[4].to(device))
    for got_part, ref_part in zip(got, _reference(*args)):
        assert len(got_part) == len(ref_part)
        for a, b in zip(got_part, ref_part):
            assert torch.equal(a.cpu(), b)
    # node_order names the sample positions, grouped by type, in order.
    node, node_offset = args[0], args[1]
    grouped = [n + o for n, o in zip(_reference(*args)[0], node_offset[:-1])]
    assert torch.equal(node[out.node_order.cpu()], torch.cat(grouped))


@pytest.mark.cuda
def test_cuda_equals_cpu_on_a_large_sample():
    args = _sample(300_000, 2_000_000, [200_000, 150_000, 5_000, 60_000],
                   [1_000_000] * 7, seed=3)
    cpu = split_by_type(*args)
    cuda = split_by_type(*(a.cuda() for a in args))
    for a, b in zip(cpu, cuda):
        assert torch.equal(a, b.cpu())


def test_opcheck():
    args = _sample(50, 300, [30, 40, 20], [100, 50, 80])
    node, node_offset, row, col, edge, edge_offset = args
    key = lambda ids, off: torch.sort(  # noqa: E731
        (torch.searchsorted(off, ids, right=True) - 1).to(torch.uint8),
        stable=True)
    nkey, norder = key(node, node_offset)
    ekey, eorder = key(edge, edge_offset)
    torch.library.opcheck(torch.ops.fusesample.split_by_type,
                          (node, norder, nkey, node_offset, row, col, edge,
                           eorder, ekey, edge_offset))


def _raw_args(**change):
    node, node_offset, row, col, edge, edge_offset = _sample(
        10, 20, [6, 6], [15, 15])
    norder = torch.arange(10)
    nkey = torch.sort((torch.searchsorted(node_offset, node, right=True) - 1)
                      .to(torch.uint8), stable=True)
    args = dict(node=node[nkey.indices], node_order=norder,
                node_type=nkey.values, node_offset=node_offset, row=row,
                col=col, edge=edge, edge_order=torch.arange(20),
                edge_type=torch.zeros(20, dtype=torch.uint8),
                edge_offset=torch.tensor([0, 30]))
    args.update(change)
    return args


@pytest.mark.parametrize('change,message', [
    (dict(node=torch.zeros(10, dtype=torch.int32)), "'node' must be Long"),
    (dict(node_order=torch.arange(9)), "must have one length"),
    (dict(node_type=torch.zeros(10)), "'node_type' must be uint8 or int32"),
    (dict(row=torch.zeros(19, dtype=torch.long)), "'row' must have as many"),
    (dict(edge_offset=torch.zeros(0, dtype=torch.long)), "at least one entry"),
    (dict(edge_type=torch.ones(20, dtype=torch.uint8)), "must lie in \\[0, 1\\)"),
    (dict(node_type=torch.tensor([1] * 5 + [0] * 5, dtype=torch.uint8)),
     "'node_type' must be sorted"),
    (dict(edge_order=torch.full((20,), 20)), "'edge_order' holds 20"),
    (dict(col=torch.full((20,), -1)), "'col' holds -1"),
])
def test_bad_inputs_name_the_argument(change, message):
    with pytest.raises(RuntimeError, match=message):
        torch.ops.fusesample.split_by_type(**_raw_args(**change))


@pytest.mark.cuda
def test_cuda_device_mismatch_and_out_of_range_values():
    args = {k: v.cuda() for k, v in _raw_args().items()}
    with pytest.raises(RuntimeError, match="'row' is on cpu"):
        torch.ops.fusesample.split_by_type(**{**args, 'row': args['row'].cpu()})
    # Out-of-range values are not read: -1 where they land.
    bad = {**args, 'col': torch.full((20,), 99, device='cuda')}
    _, edge_index, _ = torch.ops.fusesample.split_by_type(**bad)
    assert (edge_index[20:] == -1).all()
