"""Partition files in PyG's ``Partitioner`` format (issue 45, first piece).

(a) PyG's own ``Partitioner`` writes the partitions that
:func:`read_partition` reads back. METIS is not installed here (no pyg-lib,
torch_sparse without METIS), so ``ClusterData._metis`` -- the one METIS call
``Partitioner`` makes, through ``ClusterData`` -- is monkeypatched to return
a fixed node -> part assignment; everything after it is PyG's code.
(b) :func:`write_partitions` writes the same graphs from edge chunks: the same
META.json and maps as (a), and PyG's ``LocalGraphStore.from_partition`` /
``LocalFeatureStore.from_partition`` load the whole graph back from them.
(c) Malformed partitions are refused with a message naming the file and
what is wrong.

The graphs have isolated nodes, a hub whose in-edges come from every part,
edge attributes, and (heterogeneous) an edge type without edges and a node
type without edges.
"""
import json
import os
import shutil

import pytest
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.distributed import (LocalFeatureStore, LocalGraphStore,
                                         Partitioner)
from torch_geometric.loader import ClusterData

from pyg_fusesample.distributed import (assign_nodes, read_partition,
                                        write_partitions)

N, E, HUB = 40, 160, 3
PAPERS, AUTHORS, INSTS = 30, 20, 4
EMPLOYS = ('inst', 'employs', 'author')  # no edges
EDGE_TYPES = [('author', 'writes', 'paper'), ('paper', 'cites', 'paper'),
              ('paper', 'rev_writes', 'author'), EMPLOYS]


def _edges(num_src, num_dst, count, hub, gen, isolated=0):
    """Random edges among the first ``num - isolated`` nodes; every node
    sends one edge to ``hub``."""
    src = torch.randint(0, num_src - isolated, (count,), generator=gen)
    dst = torch.randint(0, num_dst - isolated, (count,), generator=gen)
    if hub is not None:
        src = torch.cat([src, torch.arange(num_src - isolated)])
        dst = torch.cat([dst, torch.full((num_src - isolated,), hub)])
    return torch.stack([src, dst])


def homo_graph():
    gen = torch.Generator().manual_seed(0)
    edge_index = _edges(N, N, E - (N - 4), HUB, gen, isolated=4)
    return Data(x=torch.randn(N, 5, generator=gen), y=torch.arange(N) % 3,
                edge_index=edge_index,
                edge_attr=torch.randn(edge_index.size(1), 2, generator=gen),
                num_nodes=N)


def hetero_graph():
    gen = torch.Generator().manual_seed(1)
    data = HeteroData()
    for t, n in (('paper', PAPERS), ('author', AUTHORS), ('inst', INSTS)):
        data[t].x = torch.randn(n, 4, generator=gen)
        data[t].num_nodes = n
    data['author', 'writes', 'paper'].edge_index = _edges(
        AUTHORS, PAPERS, 40, None, gen)
    data['paper', 'cites', 'paper'].edge_index = _edges(
        PAPERS, PAPERS, 50, HUB, gen, isolated=2)
    data['paper', 'rev_writes', 'author'].edge_index = _edges(
        PAPERS, AUTHORS, 30, None, gen)
    data[EMPLOYS].edge_index = torch.empty(2, 0, dtype=torch.long)
    for t in EDGE_TYPES:
        data[t].edge_attr = torch.randn(data[t].num_edges, 3, generator=gen)
    return data


def paper_labels():
    return torch.arange(PAPERS) % 5


def node_assignment(num_nodes, num_parts, salt):
    # fixed, scattered, every part non-empty
    return (torch.arange(num_nodes) * 7 + salt) % num_parts


def assignment_of(data, num_parts):
    if isinstance(data, HeteroData):
        return {t: node_assignment(data[t].num_nodes, num_parts, i)
                for i, t in enumerate(data.node_types)}
    return {None: node_assignment(data.num_nodes, num_parts, 0)}


def pyg_partition(data, num_parts, root, monkeypatch):
    """PyG's Partitioner with METIS replaced by the fixed assignment (in the
    homogeneous numbering of ``to_homogeneous``: types in order)."""
    cluster = torch.cat(list(assignment_of(data, num_parts).values()))
    monkeypatch.setattr(ClusterData, '_metis',
                        lambda self, edge_index, num_nodes: cluster.clone())
    Partitioner(data, num_parts, str(root)).generate_partition()


def by_type(data):
    """(node types -> (num, x, y)), (edge types -> (edge_index, attr))."""
    if isinstance(data, HeteroData):
        nodes = {t: (data[t].num_nodes, data[t].x,
                     paper_labels() if t == 'paper' else None)
                 for t in data.node_types}
        edges = {t: (data[t].edge_index, data[t].edge_attr)
                 for t in data.edge_types}
        return nodes, edges
    return ({None: (data.num_nodes, data.x, data.y)},
            {None: (data.edge_index, data.edge_attr)})


def check_parts(root, data, num_parts):
    """Every part read back; together they are the graph, each node and
    edge owned once, by the assigned part."""
    nodes, edges = by_type(data)
    assignment = assignment_of(data, num_parts)
    # PyG's Partitioner stores no labels: given apart, as its example does
    labels = {'paper': paper_labels()} if isinstance(data, HeteroData) \
        else data.y
    parts = [read_partition(str(root), p, labels=labels)
             for p in range(num_parts)]
    for t, (num, x, y) in nodes.items():
        owned = torch.cat([part.nodes[t] for part in parts])
        assert torch.equal(owned.sort().values, torch.arange(num))
        for p, part in enumerate(parts):
            ids = part.nodes[t]
            assert torch.equal(part.node_map[t], assignment[t])
            assert bool((assignment[t][ids] == p).all())
            assert torch.equal(part.node_feats[t]['x'], x[ids])
            if y is not None:
                assert torch.equal(part.node_feats[t]['y'], y[ids])
    for t, (edge_index, attr) in edges.items():
        dst_t = t[2] if t is not None else None
        rows, dsts, eids, attrs = [], [], [], []
        for p, part in enumerate(parts):
            csc = part.csc[t]
            degree = csc.colptr.diff()
            dst = part.nodes[dst_t].repeat_interleave(degree)
            # by target, then by edge id (the whole graph's stable CSC)
            key = torch.searchsorted(part.nodes[dst_t], dst) * E * 10 \
                + csc.edge_id
            assert bool((key.diff() > 0).all())
            assert bool((part.edge_map[t][csc.edge_id] == p).all())
            rows.append(csc.row), dsts.append(dst), eids.append(csc.edge_id)
            attrs.append(csc.edge_attr)
        eid = torch.cat(eids)
        order = eid.argsort()
        assert torch.equal(eid[order], torch.arange(edge_index.size(1)))
        assert torch.equal(torch.cat(rows)[order], edge_index[0])
        assert torch.equal(torch.cat(dsts)[order], edge_index[1])
        if edge_index.size(1):
            assert torch.equal(torch.cat(attrs)[order], attr)
    return parts


@pytest.mark.parametrize('hetero', [False, True])
@pytest.mark.parametrize('num_parts', [2, 4])
def test_reads_pyg_partitioner_output(tmp_path, monkeypatch, hetero,
                                      num_parts):
    data = hetero_graph() if hetero else homo_graph()
    pyg_partition(data, num_parts, tmp_path, monkeypatch)
    parts = check_parts(tmp_path, data, num_parts)
    # the hub's in-edges come from every part
    hub_t = 'paper' if hetero else None
    et = ('paper', 'cites', 'paper') if hetero else None
    owner = parts[int(parts[0].node_map[hub_t][HUB])]
    csc = owner.csc[et]
    i = int(torch.searchsorted(owner.nodes[hub_t], HUB))
    sources = csc.row[csc.colptr[i]:csc.colptr[i + 1]]
    assert set(owner.node_map[hub_t][sources].tolist()) == \
        set(range(num_parts))
    sizes = parts[0].nbytes()
    assert sizes['node_map'] == 8 * (PAPERS + AUTHORS + INSTS if hetero
                                     else N)


def chunks(edge_index, attr, size):
    for s in range(0, edge_index.size(1), size):
        yield edge_index[0, s:s + size], edge_index[1, s:s + size], \
            attr[s:s + size]


def write_chunked(data, num_parts, root, assignment=None):
    nodes, edges = by_type(data)
    hetero = isinstance(data, HeteroData)
    if assignment is None:
        assignment = assignment_of(data, num_parts)
    key = (lambda d: d) if hetero else (lambda d: d[None])
    return write_partitions(
        str(root),
        num_nodes=key({t: n for t, (n, _, _) in nodes.items()}),
        edges=key({t: chunks(ei, a, 17) for t, (ei, a) in edges.items()}),
        num_parts=num_parts,
        assignment=assignment if isinstance(assignment, str)
        else key(assignment),
        # features by id range, as from a file or a generator
        node_feats=key({t: (lambda s, e, x=x: x[s:e])
                        for t, (_, x, _) in nodes.items()}),
        labels=key({t: y for t, (_, _, y) in nodes.items() if y is not None}),
        node_chunk=7)


def pyg_stores_equal_graph(root, data, num_parts):
    """PyG's own readers, part by part, give back the whole graph."""
    nodes, edges = by_type(data)
    hetero = isinstance(data, HeteroData)
    offset, acc = {}, 0
    for t, (n, _, _) in nodes.items():
        offset[t], acc = acc, acc + n
    seen_nodes = {t: [] for t in nodes}
    seen_edges = {t: [] for t in edges}
    for p in range(num_parts):
        graph = LocalGraphStore.from_partition(str(root), p)
        feats = LocalFeatureStore.from_partition(str(root), p)
        for t, (num, x, y) in nodes.items():
            gid = feats.get_global_id(t) - offset[t]
            assert torch.equal(feats.get_tensor(t, 'x'), x[gid])
            if y is not None:
                assert torch.equal(feats.get_tensor(t, 'y'), y[gid])
            seen_nodes[t].append(gid)
        for t, (edge_index, attr) in edges.items():
            ei = graph.get_edge_index(edge_type=t, layout='coo')
            eid = graph.get_edge_id(edge_type=t, layout='coo')
            if hetero:  # graph.pt numbers hetero edges homogeneously
                eid = eid - sum(edges[u][0].size(1)
                                for u in list(edges)[:list(edges).index(t)])
            assert torch.equal(edge_index[:, eid], ei)
            assert bool((ei[1].diff() >= 0).all())  # is_sorted holds
            if eid.numel():
                group = t if hetero else (None, None)
                assert torch.equal(
                    feats.get_tensor(group, 'edge_attr'),
                    attr[feats.get_global_id(group)])
            seen_edges[t].append(eid)
    for t, (n, _, _) in nodes.items():
        assert torch.equal(torch.cat(seen_nodes[t]).sort().values,
                           torch.arange(n))
    for t, (ei, _) in edges.items():
        assert torch.equal(torch.cat(seen_edges[t]).sort().values,
                           torch.arange(ei.size(1)))


@pytest.mark.parametrize('hetero', [False, True])
@pytest.mark.parametrize('num_parts', [2, 4])
def test_written_chunks_match_pyg(tmp_path, monkeypatch, hetero, num_parts):
    data = hetero_graph() if hetero else homo_graph()
    pyg_partition(data, num_parts, tmp_path / 'pyg', monkeypatch)
    meta = write_chunked(data, num_parts, tmp_path / 'ours')
    assert not (tmp_path / 'ours' / '.spool').exists()
    # the same META.json and maps as PyG's Partitioner
    with open(tmp_path / 'pyg' / 'META.json') as f:
        assert json.load(f) == meta
    for name in (['node_map', 'edge_map'] if hetero
                 else ['node_map.pt', 'edge_map.pt']):
        for path in (tmp_path / 'pyg').glob(f'{name}*'):
            files = sorted(path.iterdir()) if path.is_dir() else [path]
            for file in files:
                ours = tmp_path / 'ours' / file.relative_to(tmp_path / 'pyg')
                assert torch.equal(torch.load(file), torch.load(ours))
    # the same parts, read by this package and by PyG
    check_parts(tmp_path / 'ours', data, num_parts)
    pyg_stores_equal_graph(tmp_path / 'ours', data, num_parts)


@pytest.mark.parametrize('rule', ['range', 'hash'])
def test_written_by_rule(tmp_path, rule):
    data = homo_graph()
    write_chunked(data, 3, tmp_path, assignment=rule)
    expected = assign_nodes(N, 3, rule)
    counts = torch.bincount(expected, minlength=3)
    assert int(counts.min()) > 0
    if rule == 'range':
        assert bool((expected.diff() >= 0).all())
    parts = [read_partition(str(tmp_path), p) for p in range(3)]
    for p, part in enumerate(parts):
        assert torch.equal(part.node_map[None], expected)
        owned = (expected == p).nonzero().view(-1)
        assert torch.equal(part.nodes[None], owned)
    pyg_stores_equal_graph(tmp_path, data, 3)


# ---------------------------------------------------------------- (c)

def _edit(path, fn):
    obj = torch.load(path, weights_only=False)
    fn(obj)
    torch.save(obj, path)


def _meta(root, **changes):
    with open(root / 'META.json') as f:
        meta = json.load(f)
    meta.update(changes)
    with open(root / 'META.json', 'w') as f:
        json.dump(meta, f)


def _truncate(path):
    size = os.path.getsize(path)
    with open(path, 'r+b') as f:
        f.truncate(size // 2)


HOMO_CASES = {
    'missing graph.pt': (lambda r: os.unlink(r / 'part_1' / 'graph.pt'),
                         'part_1/graph.pt: missing'),
    'missing node_map.pt': (lambda r: os.unlink(r / 'node_map.pt'),
                            'node_map.pt: missing'),
    'truncated file': (lambda r: _truncate(r / 'part_0' / 'node_feats.pt'),
                       'part_0/node_feats.pt: cannot be read'),
    'META.json not JSON': (lambda r: (r / 'META.json').write_text('{"num'),
                           'META.json: not valid JSON'),
    'num_parts too large': (lambda r: _meta(r, num_parts=3),
                            "'num_parts' is 3 but"),
    'num_parts too small': (lambda r: _meta(r, num_parts=1),
                            "'num_parts' is 1 but"),
    'types on a homogeneous graph': (
        lambda r: _meta(r, node_types=['a']), "'is_hetero' is false"),
    'x one row short': (
        lambda r: _edit(r / 'part_0' / 'node_feats.pt',
                        lambda d: d['feats'].update(x=d['feats']['x'][:-1])),
        "part_0/node_feats.pt: feats['x'] must have one row per id"),
    'row cut short': (
        lambda r: _edit(r / 'part_1' / 'graph.pt',
                        lambda d: d.update(row=d['row'][:-1])),
        "part_1/graph.pt: 'row', 'col' and 'edge_id' differ in length"),
    'edge map one short': (
        lambda r: torch.save(torch.load(r / 'edge_map.pt')[:-1],
                             r / 'edge_map.pt'),
        "graph.pt: 'edge_id' holds ids outside"),
    'source out of range': (
        lambda r: _edit(r / 'part_0' / 'graph.pt',
                        lambda d: d['row'].__setitem__(0, N + 5)),
        "part_0/graph.pt: 'row' holds ids outside [0, 40)"),
    'part id out of range': (
        lambda r: torch.save(torch.full((N,), 7), r / 'node_map.pt'),
        "node_map.pt: 'part ids (META.json's num_parts)' holds ids outside"),
    'node listed twice': (
        lambda r: _edit(r / 'part_1' / 'node_feats.pt',
                        lambda d: d['global_id'].__setitem__(
                            1, d['global_id'][0])),
        "part_1/node_feats.pt: 'global_id' does not list the ids the node "
        "map assigns"),
    "edge in the wrong part": (
        lambda r: _edit(r / 'part_0' / 'graph.pt',
                        lambda d: d['col'].__setitem__(-1, 1)),
        "part_0/graph.pt: 'col' holds nodes the node map assigns to other"),
    'size disagrees': (
        lambda r: _edit(r / 'part_0' / 'graph.pt',
                        lambda d: d.update(size=(N + 1, N + 1))),
        "part_0/graph.pt: 'size' is (41, 41)"),
    'edge_attr cut short': (
        lambda r: _edit(r / 'part_1' / 'edge_feats.pt',
                        lambda d: d['feats'].update(
                            edge_attr=d['feats']['edge_attr'][1:])),
        "part_1/edge_feats.pt: feats['edge_attr'] must have one row"),
}


@pytest.fixture(scope='module')
def good_partitions(tmp_path_factory):
    root = tmp_path_factory.mktemp('good')
    write_chunked(homo_graph(), 2, root / 'homo')
    write_chunked(hetero_graph(), 2, root / 'hetero')
    return root


def _drop_type(d, t):
    del d[t]


HETERO_CASES = {
    'node type missing from META.json': (
        lambda r: _meta(r, node_types=['paper', 'author'], node_offset=[0, 30],
                        edge_types=[list(EDGE_TYPES[0])]),
        "node_map/inst.pt: not a type of META.json's 'node_types'"),
    'edge type missing from META.json': (
        lambda r: _meta(r, edge_types=[list(t) for t in EDGE_TYPES[:3]]),
        "edge_map/inst__employs__author.pt: not a type of META.json's "
        "'edge_types'"),
    'extra edge type in META.json': (
        lambda r: _meta(r, edge_types=[list(t) for t in EDGE_TYPES]
                        + [['author', 'likes', 'paper']]),
        "edge_map/author__likes__paper.pt: missing"),
    'missing edge map': (
        lambda r: os.unlink(r / 'edge_map' / 'paper__cites__paper.pt'),
        "edge_map/paper__cites__paper.pt: missing"),
    'edge type missing from graph.pt': (
        lambda r: _edit(r / 'part_1' / 'graph.pt',
                        lambda d: _drop_type(d, EMPLOYS)),
        "part_1/graph.pt: its edge types"),
    'node_offset wrong': (lambda r: _meta(r, node_offset=[0, 31, 51]),
                          "'node_offset' is [0, 31, 51]"),
    'hetero edge id out of range': (
        lambda r: _edit(r / 'part_0' / 'graph.pt', lambda d: d[
            ('paper', 'cites', 'paper')]['edge_id'].__setitem__(0, 10 ** 6)),
        "part_0/graph.pt [('paper', 'cites', 'paper')]: 'edge_id - "),
    'id not global_id minus offset': (
        lambda r: _edit(r / 'part_0' / 'node_feats.pt',
                        lambda d: d['author']['id'].add_(1)),
        "part_0/node_feats.pt [author]: 'id' is not 'global_id' minus"),
}


CASES = [('homo', c) for c in sorted(HOMO_CASES)] + \
    [('hetero', c) for c in sorted(HETERO_CASES)]


@pytest.mark.parametrize('kind,case', CASES)
def test_malformed_refused(tmp_path, good_partitions, kind, case):
    root = tmp_path / 'p'
    shutil.copytree(good_partitions / kind, root)
    for p in range(2):  # the unedited copy reads
        read_partition(str(root), p)
    edit, message = (HOMO_CASES if kind == 'homo' else HETERO_CASES)[case]
    edit(root)
    with pytest.raises(ValueError) as info:
        for p in range(2):
            read_partition(str(root), p)
    assert message in str(info.value), str(info.value)


def test_bad_arguments_refused(tmp_path, good_partitions):
    with pytest.raises(ValueError, match=r"'part_id' must be in \[0, 2\)"):
        read_partition(str(good_partitions / 'homo'), 2)
    with pytest.raises(ValueError, match='META.json: missing'):
        read_partition(str(tmp_path), 0)
    with pytest.raises(ValueError, match='already holds a partition'):
        write_chunked(homo_graph(), 2, good_partitions / 'homo')
    with pytest.raises(ValueError, match="'assignment' holds ids outside"):
        write_chunked(homo_graph(), 2, tmp_path / 'a',
                      assignment={None: torch.full((N,), 2)})
    with pytest.raises(ValueError, match="edge chunk 0: 'col' holds ids"):
        write_partitions(str(tmp_path / 'b'), 5,
                         [(torch.tensor([0]), torch.tensor([5]))], 2)
    assert not (tmp_path / 'b' / 'META.json').exists()


class _RunsCode:
    def __reduce__(self):
        return (os.system, ('echo this must not run',))


def test_defaultdict_files_cannot_run_code(tmp_path):
    # PyG writes edge_feats.pt as a defaultdict, which torch's safe loader
    # refuses; the reader's own unpickler takes it, and still refuses any
    # global but tensors and containers (here after the defaultdict, so
    # the safe loader's first refusal is the defaultdict's).
    import collections
    from pyg_fusesample.distributed.partition_files import _load
    path = str(tmp_path / 'edge_feats.pt')
    torch.save((collections.defaultdict(dict, a={'x': torch.ones(2)}), ), path)
    loaded = _load(path, 'edge features')
    assert torch.equal(loaded[0]['a']['x'], torch.ones(2))
    torch.save((collections.defaultdict(dict, a={}), _RunsCode()), path)
    with pytest.raises(ValueError, match=r"global '\w+\.system' is not "
                       r"allowed in a partition file"):
        _load(path, 'edge features')


@pytest.mark.parametrize('hetero', [False, True])
def test_reads_pyg_edge_times(tmp_path, monkeypatch, hetero):
    # PyG's Partitioner with an edge-level 'edge_time' stores the times in
    # edge_feats.pt (in graph.pt's edge order, its CSC sorted by time):
    # read into each part's CSC order, they are the graph's edge times.
    data = hetero_graph() if hetero else homo_graph()
    gen = torch.Generator().manual_seed(7)
    times = {}
    for store in data.edge_stores:
        store.edge_time = torch.randint(0, 30, (store.num_edges, ),
                                        generator=gen)
        times[store._key if hetero else None] = store.edge_time
    pyg_partition(data, 2, tmp_path, monkeypatch)
    for p in range(2):
        part = read_partition(str(tmp_path), p)
        for t, csc in part.csc.items():
            if csc.num_edges == 0:
                continue
            assert csc.edge_time is not None
            assert torch.equal(csc.edge_time, times[t][csc.edge_id])
        assert part.nbytes()['edge_time'] == 8 * sum(
            c.num_edges for c in part.csc.values()
            if c.edge_time is not None)
