"""Malformed files: every reader of a file from disk refuses a truncated or
inconsistent one with an error that names the file (or the reader and its
folder) and what is wrong -- never a crash, an IndexError deep in PyG, or a
silently wrong graph. The files are the tiny data sets of
test_ogb_examples.py / test_hetero_examples.py, written in the real on-disk
formats (OGB's raw CSV layout, PyG's Reddit .npz files), then cut to half
their bytes or edited to disagree with each other.

Readers: the examples' OGB raw readers (homogeneous and ogbn-mag), the Reddit
reader, Cora through PyG's Planetoid (cora_sage.py, node2vec.py), the
readers behind the ``ogb`` package (a stand-in module: ``ogb`` is
not installed here), ogbn_mag_sage.py's embeddings, multi_gpu_sage.py's
papers100M reader and --graph-cache file, GraphSAINT's norm file, and the
autotune decision cache (which warns and starts afresh instead of stopping:
a bad entry is never replayed). Partitions (PyG's Partitioner format)
have their own cases in test_partition_files.py."""
import gzip
import json
import os
import shutil
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data, HeteroData

from example_runner import EXAMPLES, load_script, run_inprocess
from test_hetero_examples import NUM, write_mag_raw
from test_ogb_examples import N, write_ogb_raw, write_reddit_raw

sys.path.insert(0, str(EXAMPLES))
try:
    import _common
    from _data_checks import MalformedData
finally:
    sys.path.remove(str(EXAMPLES))

SPECS = _common.SPECS


# -- editing the tiny files ---------------------------------------------------
def truncate(path: Path):
    """The file cut to half its bytes, as an interrupted copy leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def read_gz(path: Path, dtype=np.int64) -> np.ndarray:
    return np.loadtxt(path, delimiter=',', dtype=dtype, ndmin=2)


def write_gz(path: Path, rows, fmt='%d'):
    with gzip.open(path, 'wt') as f:
        np.savetxt(f, np.asarray(rows).reshape(len(rows), -1), fmt=fmt,
                   delimiter=',')


def write_gz_text(path: Path, text: str):
    with gzip.open(path, 'wt') as f:
        f.write(text)


def edit_gz(path: Path, fn, dtype=np.int64, fmt='%d'):
    write_gz(path, fn(read_gz(path, dtype)), fmt)


def set_at(row, col, value):
    def fn(table):
        table[row, col] = value
        return table
    return fn


@pytest.fixture(scope='session')
def pristine(tmp_path_factory):
    """The tiny data sets, written once; each test edits its own copy."""
    root = tmp_path_factory.mktemp('pristine')
    write_ogb_raw(root, 'ogbn-products', 'sales_ranking')
    write_mag_raw(root)
    write_reddit_raw(root)
    return root


@pytest.fixture
def root(pristine, tmp_path):
    copy = tmp_path / 'data'
    shutil.copytree(pristine, copy)
    return copy


def refused(fn, *names):
    """Runs ``fn``; asserts it raises MalformedData whose message holds
    every one of ``names``; returns the message."""
    with pytest.raises(MalformedData) as info:
        fn()
    msg = str(info.value)
    for name in names:
        assert name in msg, msg
    return msg


# -- OGB raw layout, homogeneous (read_ogb_raw) -------------------------------
PRODUCTS = 'ogbn_products'
RAW = f'{PRODUCTS}/raw'
SPLIT = f'{PRODUCTS}/split/sales_ranking'

OGB_DEFECTS = {
    # name: (file edited, edit, words the message must hold)
    'edge truncated': ('raw/edge.csv.gz', truncate, ['truncated']),
    'features truncated': ('raw/node-feat.csv.gz', truncate, ['truncated']),
    'labels truncated': ('raw/node-label.csv.gz', truncate, ['truncated']),
    'node count truncated': ('raw/num-node-list.csv.gz', truncate,
                             ['truncated']),
    'edge count truncated': ('raw/num-edge-list.csv.gz', truncate,
                             ['truncated']),
    'split truncated': ('split/sales_ranking/train.csv.gz', truncate,
                        ['truncated']),
    'edge file empty': ('raw/edge.csv.gz', lambda p: p.write_bytes(b''),
                        ['column']),
    'edge id >= num nodes': ('raw/edge.csv.gz', lambda p: edit_gz(
        p, set_at(5, 1, N)), ['targets', f'[0, {N})', f'{N} at position 5']),
    'negative edge id': ('raw/edge.csv.gz', lambda p: edit_gz(
        p, set_at(3, 0, -1)), ['sources', f'[0, {N})', '-1 at position 3']),
    'NaN edge id': ('raw/edge.csv.gz', lambda p: write_gz_text(
        p, '0,1\n2,nan\n3,4\n'), ['integers', 'nan']),
    'edge list with three columns': ('raw/edge.csv.gz', lambda p: edit_gz(
        p, lambda t: np.concatenate([t, t[:, :1]], 1)), ['3 column(s)']),
    'fewer nodes than the edges use': ('raw/num-node-list.csv.gz',
                                       lambda p: write_gz(p, [[N - 10]]),
                                       ['raw/edge.csv.gz', f'[0, {N - 10})']),
    'edge count above the edge rows': ('raw/num-edge-list.csv.gz',
                                       lambda p: edit_gz(p, lambda t: t + 1),
                                       ['raw/edge.csv.gz', 'expected']),
    'edge count below the edge rows': ('raw/num-edge-list.csv.gz',
                                       lambda p: edit_gz(p, lambda t: t - 1),
                                       ['raw/edge.csv.gz', 'expected']),
    'two node counts': ('raw/num-node-list.csv.gz',
                        lambda p: write_gz(p, [[N], [N]]),
                        ['one non-negative count']),
    'negative node count': ('raw/num-node-list.csv.gz',
                            lambda p: write_gz(p, [[-4]]),
                            ['one non-negative count']),
    'feature rows != num nodes': ('raw/node-feat.csv.gz', lambda p: edit_gz(
        p, lambda t: t[:-1], np.float32, '%.6f'),
        [f'{N - 1} row(s), expected {N}']),
    'label rows != num nodes': ('raw/node-label.csv.gz', lambda p: edit_gz(
        p, lambda t: np.concatenate([t, t[:2]])),
        [f'{N + 2} row(s), expected {N}']),
    'negative label': ('raw/node-label.csv.gz', lambda p: edit_gz(
        p, set_at(7, 0, -3)), ['non-negative', '-3 at position 7']),
    'NaN label': ('raw/node-label.csv.gz', lambda p: write_gz_text(
        p, '1\n' * (N - 1) + 'nan\n'), ['integers']),
    'split index out of range': ('split/sales_ranking/valid.csv.gz',
                                 lambda p: edit_gz(p, set_at(0, 0, N + 3)),
                                 ['split indices', f'{N + 3} at position 0']),
    'negative split index': ('split/sales_ranking/test.csv.gz',
                             lambda p: edit_gz(p, set_at(2, 0, -1)),
                             ['split indices', '-1 at position 2']),
}


@pytest.mark.parametrize('defect', list(OGB_DEFECTS))
def test_ogb_raw(root, defect):
    rel, edit, words = OGB_DEFECTS[defect]
    path = root / PRODUCTS / rel
    edit(path)
    refused(lambda: _common.load_real(str(root), SPECS['ogbn-products'],
                                      'raw'), str(path), *words)


def test_ogb_raw_through_pandas(root, monkeypatch):
    """Where pandas is installed it reads the tables, and an empty field or
    a NaN turns an integer column into floats: refused, not cast to a
    garbage id. (A stand-in pandas: it is not installed here.)"""
    def read_csv(path, compression, header):
        assert (compression, header) == ('gzip', None)
        with gzip.open(path, 'rt') as f:
            table = np.genfromtxt(f, delimiter=',', ndmin=2)
        return types.SimpleNamespace(values=table)
    pandas = types.ModuleType('pandas')
    pandas.read_csv = read_csv
    monkeypatch.setitem(sys.modules, 'pandas', pandas)
    data, _ = _common.load_real(str(root), SPECS['ogbn-products'], 'raw')
    assert data.num_nodes == N
    path = root / RAW / 'edge.csv.gz'
    write_gz_text(path, '0,1\n2,\n3,4\n')
    refused(lambda: _common.load_real(str(root), SPECS['ogbn-products'],
                                      'raw'), str(path), 'nan at row 1',
            'integers')


def test_ogb_raw_intact_copy_loads(root):
    data, reader = _common.load_real(str(root), SPECS['ogbn-products'], 'raw')
    assert reader == '_common.read_ogb_raw' and data.num_nodes == N


def test_ogb_raw_script_exits_with_the_message(root, capsys):
    """The script stops with the message (argparse's error, no traceback),
    also with --synthetic: data that is there but broken is not replaced
    by a generated graph."""
    truncate(root / RAW / 'edge.csv.gz')
    for extra in ([], ['--synthetic']):
        code, out, err = run_inprocess(
            EXAMPLES / 'ogbn_products_sage.py',
            ['--root', root, '--epochs', '1', '--device', 'cpu', *extra],
            capsys)
        assert code == 2, err
        assert 'edge.csv.gz' in err and 'truncated' in err, err
        assert 'Traceback' not in err and 'Epoch' not in out


# -- OGB raw layout, heterogeneous (read_ogb_hetero_raw, ogbn-mag) ------------
MAG_RAW = 'ogbn_mag/raw'
WRITES = 'relations/author___writes___paper'
AFFILIATED = 'relations/author___affiliated_with___institution'
CITES = 'relations/paper___cites___paper'
P = NUM['paper']

MAG_DEFECTS = {
    'relation edges truncated': (f'raw/{WRITES}/edge.csv.gz', truncate,
                                 ['truncated']),
    'node counts truncated': ('raw/num-node-dict.csv.gz', truncate,
                              ['truncated']),
    'relation list truncated': ('raw/triplet-type-list.csv.gz', truncate,
                                ['truncated']),
    'node_year truncated': ('raw/node-feat/paper/node_year.csv.gz', truncate,
                            ['truncated']),
    'target id >= its type\'s count': (f'raw/{WRITES}/edge.csv.gz',
                                       lambda p: edit_gz(p, set_at(4, 1, P)),
                                       ['targets', f'[0, {P})']),
    'source id >= its type\'s count': (
        f'raw/{AFFILIATED}/edge.csv.gz',
        lambda p: edit_gz(p, set_at(0, 0, NUM['author'])),
        ['sources', f'[0, {NUM["author"]})']),
    'negative edge id': (f'raw/{CITES}/edge.csv.gz',
                         lambda p: edit_gz(p, set_at(2, 1, -5)),
                         ['targets', '-5 at position 2']),
    'edge count != edge rows': (f'raw/{CITES}/num-edge-list.csv.gz',
                                lambda p: edit_gz(p, lambda t: t + 3),
                                [f'{CITES}/edge.csv.gz', 'expected']),
    'paper feature rows != paper count': (
        'raw/node-feat/paper/node-feat.csv.gz',
        lambda p: edit_gz(p, lambda t: t[:-3], np.float32, '%.6f'),
        [f'{P - 3} row(s), expected {P}']),
    'node_year of the wrong length': (
        'raw/node-feat/paper/node_year.csv.gz',
        lambda p: edit_gz(p, lambda t: t[:-1]), [f'expected {P}']),
    'NaN in node_year': ('raw/node-feat/paper/node_year.csv.gz',
                         lambda p: write_gz_text(p, '2015\n' * (P - 1) +
                                                 'nan\n'), ['integers']),
    'labels of the wrong length': ('raw/node-label/paper/node-label.csv.gz',
                                   lambda p: edit_gz(p, lambda t: t[:10]),
                                   [f'10 row(s), expected {P}']),
    'split index out of range': ('split/time/paper/valid.csv.gz',
                                 lambda p: edit_gz(p, set_at(1, 0, P + 5)),
                                 ['split indices', f'[0, {P})']),
    'a node type without its count': (
        'raw/num-node-dict.csv.gz', lambda p: write_gz_text(
            p, 'author,field_of_study,institution,paper\n120,25,8\n'),
        ['one count per type']),
    'negative node count': (
        'raw/num-node-dict.csv.gz', lambda p: write_gz_text(
            p, 'author,field_of_study,institution,paper\n120,-25,8,200\n'),
        ["'field_of_study'", "'-25'"]),
    'relation of an unknown node type': (
        'raw/triplet-type-list.csv.gz', lambda p: write_gz_text(
            p, 'author,writes,paper\nauthor,reviews,venue\n'),
        ["'venue'"]),
}


@pytest.mark.parametrize('defect', list(MAG_DEFECTS))
def test_ogb_hetero_raw(root, defect):
    rel, edit, words = MAG_DEFECTS[defect]
    path = root / 'ogbn_mag' / rel
    edit(path)
    refused(lambda: _common.load_real(str(root), SPECS['ogbn-mag'], 'raw'),
            str(path), *words)


def test_mag_script_exits_with_the_message(root, capsys):
    edit_gz(root / MAG_RAW / WRITES / 'edge.csv.gz', set_at(4, 1, P))
    code, out, err = run_inprocess(
        EXAMPLES / 'ogbn_mag_sage.py',
        ['--root', root, '--epochs', '1', '--device', 'cpu'], capsys)
    assert code == 2 and 'author___writes___paper' in err, err
    assert 'Traceback' not in err and 'Epoch' not in out


# -- PyG's Reddit (.npz) ------------------------------------------------------
def rewrite_npz(path: Path, **changes):
    arrays = dict(np.load(path))
    arrays.update(changes)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(path, **arrays)


def bigger_graph(path: Path):
    # The adjacency of a graph with 10 more nodes than the features have,
    # an edge into one of them.
    import scipy.sparse as sp
    adj = sp.load_npz(path).tocoo()
    row = np.append(adj.row, 0)
    col = np.append(adj.col, N + 3)
    sp.save_npz(path, sp.coo_matrix((np.ones(row.size), (row, col)),
                                    shape=(N + 10, N + 10)))


REDDIT_DEFECTS = {
    'features truncated': ('reddit_data.npz', truncate,
                           ["reddit_data.npz' cannot be read", 'truncated']),
    'graph truncated': ('reddit_graph.npz', truncate,
                        ["reddit_graph.npz' cannot be read", 'truncated']),
    'label count != node count': ('reddit_data.npz', lambda p: rewrite_npz(
        p, label=np.zeros(N - 5, dtype=np.int64)),
        ["'y'", f'{N - 5} row(s), expected {N}']),
    'negative label': ('reddit_data.npz', lambda p: rewrite_npz(
        p, label=np.full(N, -2, dtype=np.int64)),
        ['non-negative', '-2 at position 0']),
    'split types of the wrong length': (
        'reddit_data.npz', lambda p: rewrite_npz(
            p, node_types=np.ones(N + 4, dtype=np.int64)),
        ['_mask', f'{N + 4} row(s)']),
    'no feature array': ('reddit_data.npz',
                         lambda p: rewrite_npz(p, feature=None),
                         ['feature']),
    'edge id >= num nodes': ('reddit_graph.npz', bigger_graph,
                             ["'edge_index'", f'[0, {N})']),
}


@pytest.mark.parametrize('defect', list(REDDIT_DEFECTS))
def test_reddit(root, defect):
    name, edit, words = REDDIT_DEFECTS[defect]
    edit(root / 'Reddit' / 'raw' / name)
    refused(lambda: _common.load_real(str(root), SPECS['Reddit']),
            'torch_geometric.datasets.Reddit', str(root / 'Reddit'), *words)


def test_reddit_processed_file_truncated(root):
    _common.load_real(str(root), SPECS['Reddit'])  # writes processed/
    processed = root / 'Reddit' / 'processed' / 'data.pt'
    truncate(processed)
    refused(lambda: _common.load_real(str(root), SPECS['Reddit']),
            str(root / 'Reddit'), 'processed/', 'delete it')


def test_reddit_script_exits_with_the_message(root, capsys):
    truncate(root / 'Reddit' / 'raw' / 'reddit_graph.npz')
    code, out, err = run_inprocess(
        EXAMPLES / 'reddit_sage.py',
        ['--root', root, '--epochs', '1', '--device', 'cpu'], capsys)
    assert code == 2 and 'reddit_graph.npz' in err, err
    assert 'Traceback' not in err and 'Epoch' not in out


# -- PyG's Planetoid (Cora: cora_sage.py, node2vec.py) ------------------------
@pytest.mark.parametrize('script', ['cora_sage.py', 'node2vec.py'])
def test_cora_truncated(cora_root, tmp_path, capsys, script):
    root = tmp_path / 'planetoid'
    shutil.copytree(cora_root / 'Cora' / 'raw', root / 'Cora' / 'raw')
    truncate(root / 'Cora' / 'raw' / 'ind.cora.graph')
    code, out, err = run_inprocess(
        EXAMPLES / script, ['--root', root, '--epochs', '1', '--device',
                            'cpu'], capsys)
    assert code == 2, out + err
    assert 'Planetoid could not read' in err and 'truncated' in err, err
    assert str(root / 'Cora' / 'raw') in err and 'Traceback' not in err


# -- the readers behind the ogb package (a stand-in ogb module) ---------------
def fake_ogb(monkeypatch, make):
    """``ogb.nodeproppred.PygNodePropPredDataset`` as ``make(name, root)``
    builds it: ``(data, split)``, or raises as ogb would."""
    class Dataset:
        def __init__(self, name, root):
            self.data, self.split = make(name, root)

        def __getitem__(self, i):
            return self.data

        def get_idx_split(self):
            return self.split

    module = types.ModuleType('ogb.nodeproppred')
    module.PygNodePropPredDataset = Dataset
    monkeypatch.setitem(sys.modules, 'ogb', types.ModuleType('ogb'))
    monkeypatch.setitem(sys.modules, 'ogb.nodeproppred', module)


def ogb_graph(edge_index=None, x_rows=N, split_max=N - 1):
    g = torch.Generator().manual_seed(0)
    if edge_index is None:
        edge_index = torch.randint(0, N, (2, 100), generator=g)
    data = Data(x=torch.randn(x_rows, 4), edge_index=edge_index,
                y=torch.zeros(N, 1, dtype=torch.long), num_nodes=N)
    split = {'train': torch.arange(20), 'valid': torch.arange(20, 40),
             'test': torch.tensor([40, split_max])}
    return data, split


def truncated_processed_file(name, root):
    raise RuntimeError('PytorchStreamReader failed reading zip archive: '
                       'failed finding central directory')


OGB_PACKAGE_DEFECTS = {
    'processed file truncated': (truncated_processed_file,
                                 ['PytorchStreamReader', 'processed/']),
    'edge id >= num nodes': (lambda n, r: ogb_graph(
        torch.tensor([[0, 1], [2, N + 1]])), ["'edge_index' targets",
                                              f'{N + 1} at position 1']),
    'feature rows != num nodes': (lambda n, r: ogb_graph(x_rows=N - 1),
                                  ["'x'", f'expected {N}']),
    'split index out of range': (lambda n, r: ogb_graph(split_max=N),
                                 ["split 'test'", f'{N} at position 1']),
}


@pytest.mark.parametrize('defect', list(OGB_PACKAGE_DEFECTS))
def test_ogb_package_reader(root, monkeypatch, defect):
    make, words = OGB_PACKAGE_DEFECTS[defect]
    fake_ogb(monkeypatch, make)
    refused(lambda: _common.load_real(str(root), SPECS['ogbn-products']),
            'PygNodePropPredDataset', str(root / PRODUCTS), *words)


@pytest.mark.parametrize('defect', ['processed file truncated',
                                    'edge id >= num nodes',
                                    'split index out of range'])
def test_papers100m_reader(tmp_path, monkeypatch, defect):
    make, words = OGB_PACKAGE_DEFECTS[defect]
    fake_ogb(monkeypatch, make)
    folder = tmp_path / 'ogbn_papers100M'
    for rel in ('RELEASE_v1.txt', 'processed/geometric_data_processed.pt',
                'split/time/train.csv.gz', 'split/time/valid.csv.gz',
                'split/time/test.csv.gz'):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(b'')  # present: the stand-in reads them
    script = load_script(EXAMPLES / 'multi_gpu_sage.py')
    refused(lambda: script.load_papers100m(str(tmp_path)),
            'ogbn-papers100M', str(folder), *words)


# -- ogbn_mag_sage.py's metapath2vec embeddings (torch.load) ----------------
def mag_graph():
    data = HeteroData()
    data['paper'].x = torch.randn(5, 4)
    data['author'].num_nodes = 3
    data['institution'].num_nodes = 2
    data['author', 'writes', 'paper'].edge_index = torch.tensor([[0], [1]])
    return data


EMBEDDING_DEFECTS = {
    'truncated': (lambda p: truncate(p), ['truncated']),
    'not a dict': (lambda p: torch.save(torch.zeros(3, 4), p),
                   ['holds a Tensor', 'dict']),
    'an entry not a tensor': (lambda p: torch.save(
        {'author': [1, 2, 3], 'institution': torch.zeros(2, 4)}, p),
        ["'author'", '2-D float tensor']),
    'rows != node count': (lambda p: torch.save(
        {'author': torch.zeros(4, 4), 'institution': torch.zeros(2, 4)}, p),
        ["the embeddings of 'author'", '4 row(s), expected 3']),
}


@pytest.mark.parametrize('defect', list(EMBEDDING_DEFECTS))
def test_mag_embeddings(tmp_path, defect):
    script = load_script(EXAMPLES / 'ogbn_mag_sage.py')
    path = tmp_path / 'emb.pt'
    torch.save({'author': torch.zeros(3, 4),
                'institution': torch.zeros(2, 4)}, path)
    args = types.SimpleNamespace(embeddings=str(path),
                                 features='metapath2vec')
    script.add_features(mag_graph(), args, None)  # the intact file loads
    edit, words = EMBEDDING_DEFECTS[defect]
    edit(path)
    refused(lambda: script.add_features(mag_graph(), args, None), str(path),
            *words)


# -- multi_gpu_sage.py's --graph-cache file (torch.load) ----------------------
def cached_graph(**changes):
    data = Data(x=torch.randn(6, 3), y=torch.zeros(6, dtype=torch.long),
                edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
                train_mask=torch.ones(6, dtype=torch.bool))
    for key, value in changes.items():
        data[key] = value
    return data


GRAPH_CACHE_DEFECTS = {
    'truncated': (truncate, ['truncated']),
    'not a Data': (lambda p: torch.save({'x': torch.zeros(2)}, p),
                   ['holds a dict']),
    'edge id >= num nodes': (lambda p: torch.save(cached_graph(
        edge_index=torch.tensor([[0, 9], [1, 2]])), p),
        ["'edge_index' sources", '9 at position 1']),
    'mask rows != num nodes': (lambda p: torch.save(cached_graph(
        train_mask=torch.ones(4, dtype=torch.bool)), p),
        ["'train_mask'", 'expected 6']),
}


@pytest.mark.parametrize('defect', list(GRAPH_CACHE_DEFECTS))
def test_graph_cache_file(tmp_path, defect):
    script = load_script(EXAMPLES / 'multi_gpu_sage.py')
    path = tmp_path / 'graph.pt'
    torch.save(cached_graph(), path)
    assert script._read_graph_cache(str(path)).num_nodes == 6
    edit, words = GRAPH_CACHE_DEFECTS[defect]
    edit(path)
    refused(lambda: script._read_graph_cache(str(path)), str(path),
            'delete it', *words)


def test_multi_gpu_script_stops_on_a_bad_graph_cache(tmp_path, capsys):
    """Every rank stops with the message (no hang at the barrier)."""
    cache = tmp_path / 'graphs'
    cache.mkdir()
    path = cache / 'products_scale0.002_seed3.pt'
    path.write_bytes(b'PK\x03\x04 not a whole torch file')
    code, out, err = run_inprocess(
        EXAMPLES / 'multi_gpu_sage.py',
        ['--device', 'cpu', '--synthetic', '--scale', '0.002', '--seed', '3',
         '--epochs', '1', '--world-size', '1', '--graph-cache', cache],
        capsys)
    assert code == 2, out + err
    assert str(path) in err and 'truncated' in err, err
    assert not torch.distributed.is_initialized()


# -- GraphSAINT's norm file (save_dir) ----------------------------------------
def saint(data, save_dir):
    from pyg_fusesample.loader import FusedGraphSAINTRandomWalkSampler
    return FusedGraphSAINTRandomWalkSampler(
        data, batch_size=4, walk_length=2, num_steps=3, sample_coverage=2,
        save_dir=str(save_dir), log=False)


def ring(n):
    i = torch.arange(n)
    return Data(edge_index=torch.stack([i, (i + 1) % n]), num_nodes=n)


NORM_DEFECTS = {
    'truncated': (truncate, ['cannot be read', 'truncated']),
    'not a pair of tensors': (lambda p: torch.save({'a': 1}, p),
                              ['holds a dict', '(node_norm, edge_norm)']),
    "another graph's norms": (lambda p: torch.save(
        (torch.ones(7), torch.ones(7)), p),
        ["'node_norm' of shape (7,)", 'shape [20]', "another 'save_dir'"]),
    'integer norms': (lambda p: torch.save(
        (torch.ones(20, dtype=torch.long), torch.ones(20)), p),
        ["'node_norm'", 'torch.int64']),
    'NaN norms': (lambda p: torch.save(
        (torch.ones(20), torch.full((20,), float('nan'))), p),
        ["'edge_norm'", 'NaN']),
}


@pytest.mark.parametrize('defect', list(NORM_DEFECTS))
def test_graph_saint_norm_file(tmp_path, defect):
    saint(ring(20), tmp_path)   # computes and saves the norms
    path, = tmp_path.glob('*.pt')
    again = saint(ring(20), tmp_path)  # reads them back
    assert again.node_norm.shape == (20, )
    edit, words = NORM_DEFECTS[defect]
    edit(path)
    with pytest.raises(ValueError) as info:
        saint(ring(20), tmp_path)
    msg = str(info.value)
    assert 'FusedGraphSAINTRandomWalkSampler' in msg and str(path) in msg
    assert 'delete it' in msg
    for word in words:
        assert word in msg, msg


def test_graph_saint_norm_file_written_atomically(tmp_path, monkeypatch):
    """A run killed while writing the norms leaves no file (the next run
    computes them again), not half of one."""
    real_save = torch.save

    def killed(obj, path):
        real_save(obj, path)
        Path(path).write_bytes(Path(path).read_bytes()[:100])
        raise KeyboardInterrupt
    monkeypatch.setattr(torch, 'save', killed)
    with pytest.raises(KeyboardInterrupt):
        saint(ring(20), tmp_path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(torch, 'save', real_save)
    saint(ring(20), tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [
        'fusedgraphsaintrandomwalksampler_2_2.pt']


# -- the autotune decision cache (JSON) ---------------------------------------
@pytest.fixture
def decisions(tmp_path, monkeypatch):
    """A decision file written by a real (CPU, timer-faked) probe, and the
    graph, key and entry it holds."""
    from pyg_fusesample import autotune
    from pyg_fusesample.autotune import cache, config, scheduler
    from test_autotune import FakeTimer, skewed_graph
    for name in list(os.environ):
        if name.startswith(config.PREFIX):
            monkeypatch.delenv(name)
    path = tmp_path / 'autotune.json'
    monkeypatch.setenv(config.PREFIX + 'CACHE', str(path))
    monkeypatch.setattr(scheduler, 'measure', FakeTimer(
        {'cusparse': 1.0, 'scatter': 5.0, 'cpu': 0.5}))
    g = skewed_graph()
    assert autotune.choose(g, 16, torch.float32).source == 'probe'
    key, _ = cache.make_key(g, 16, torch.float32, 'spmm', 'sum')
    entry = json.loads(path.read_text())['entries'][key]

    def choose(entry_or_text):
        """Writes the file (an entry for the key, or raw text), forgets the
        memo; the decision and the warnings of the next call."""
        if isinstance(entry_or_text, str):
            path.write_text(entry_or_text)
        else:
            path.write_text(json.dumps({
                'schema': cache.SCHEMA, 'version': cache.VERSION,
                'entries': {key: entry_or_text}}))
        autotune.forget(g)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            d = autotune.choose(g, 16, torch.float32)
        return d, [str(w.message) for w in caught
                   if issubclass(w.category, RuntimeWarning)]

    return types.SimpleNamespace(path=path, entry=entry, choose=choose)


def test_autotune_intact_entry_is_replayed(decisions):
    d, warned = decisions.choose(dict(decisions.entry))
    assert d.source == 'cache' and not warned


def test_autotune_truncated_file_warns_and_starts_afresh(decisions):
    text = decisions.path.read_text()
    d, warned = decisions.choose(text[:len(text) // 2])
    assert d.source == 'probe'
    assert len(warned) == 1 and str(decisions.path) in warned[0]
    assert 'not valid JSON' in warned[0]
    rewritten = json.loads(decisions.path.read_text())  # a whole file again
    assert len(rewritten['entries']) == 1


def test_autotune_deeply_nested_file_warns(decisions):
    d, warned = decisions.choose('[' * 100000)
    assert d.source == 'probe' and str(decisions.path) in warned[0]


ENTRY_DEFECTS = {
    'entry not an object': lambda e: ['cpu', {}],
    'param value a string': lambda e: dict(e, variant='hub', params={
        'hub_threshold': '128'}),
    'unknown param': lambda e: dict(e, params={'tile': 4}),
    'negative hub threshold': lambda e: dict(e, variant='hub', params={
        'hub_threshold': -1}),
    'hub variant without a threshold': lambda e: dict(e, variant='hub',
                                                      params={}),
    'lanes not a power of two': lambda e: dict(e, variant='warp', params={
        'lanes': 3}),
    'timings of the wrong type': lambda e: dict(e, timings={'cpu': 'fast'}),
    'NaN timing': lambda e: dict(e, timings={'cpu': float('nan')}),
    'params missing': lambda e: {k: v for k, v in e.items()
                                 if k != 'params'},
    'key fields missing': lambda e: dict(e, key={'op': 'spmm'}),
}


@pytest.mark.parametrize('defect', list(ENTRY_DEFECTS))
def test_autotune_malformed_entry_is_not_replayed(decisions, defect):
    d, warned = decisions.choose(ENTRY_DEFECTS[defect](dict(
        decisions.entry)))
    assert d.source == 'probe'     # decided again, not replayed
    assert len(warned) == 1, warned
    assert str(decisions.path) in warned[0]
    assert '1 malformed entries ignored' in warned[0]
