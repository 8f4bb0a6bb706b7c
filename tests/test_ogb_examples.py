"""examples/ogbn_products_sage.py, ogbn_arxiv_sage.py and reddit_sage.py on
tiny data sets written in the real on-disk formats (OGB's raw CSV layout,
PyG's Reddit npz files), so the real loading code runs; on the CPU.

Most runs are in-process (``runpy``, the scripts' own ``__main__``) because
importing torch_geometric costs ~7 s per interpreter; one run of each kind
goes through a subprocess as a user would start it."""
import gzip
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from example_runner import EXAMPLES, REPO, run_inprocess, run_subprocess
PRODUCTS = EXAMPLES / 'ogbn_products_sage.py'
ARXIV = EXAMPLES / 'ogbn_arxiv_sage.py'
REDDIT = EXAMPLES / 'reddit_sage.py'

N, F, C = 60, 8, 4          # nodes, features, classes of the tiny graphs
EPOCH = re.compile(r'^(\[SYNTHETIC [^\]]+\] )?Epoch: (\d+), Loss: ([\d.]+), '
                   r'Train: ([\d.]+), Val: ([\d.]+), Test: ([\d.]+), '
                   r'Time: ([\d.]+)s, Eval: ([\d.]+)s$', re.M)
SHORT = ['--epochs', '1', '--device', 'cpu', '--batch-size', '16',
         '--hidden', '16', '--num-neighbors', '5', '3']

try:
    import ogb  # noqa: F401
    HAS_OGB = True
except ImportError:
    HAS_OGB = False
from torch_geometric.typing import WITH_PYG_LIB  # noqa: E402

# What the Model line says of --layers and of trimming.
PYG_LAYERS, FUSED_LAYERS = ("layers: PyG's (torch_geometric.nn)",
                            'layers: to_fused (pyg_fusesample.nn)')
NO_COUNTS = "trim: off (PyG's NeighborLoader gives per-hop counts only"


def _tiny_graph(seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, C, (N,), generator=g)
    x = torch.randn(N, F, generator=g) + 2.0 * torch.nn.functional.one_hot(
        y, F).float()
    src = torch.randint(0, N, (4 * N,), generator=g)
    dst = torch.randint(0, N, (4 * N,), generator=g)
    keep = src != dst
    edge = torch.stack([src[keep], dst[keep]]).unique(dim=1)
    return x.numpy(), y.numpy(), edge.numpy()


def _csv_gz(path, array, fmt):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, 'wt') as f:
        np.savetxt(f, np.asarray(array).reshape(len(array), -1), fmt=fmt,
                   delimiter=',')


def write_ogb_raw(root, name, split, extra_node_files=(), seed=0):
    """A tiny node-property data set in OGB's raw layout, the files
    PygNodePropPredDataset reads (as unpacked from OGB's zip)."""
    x, y, edge = _tiny_graph(seed)
    d = Path(root) / name.replace('-', '_')
    _csv_gz(d / 'raw' / 'edge.csv.gz', edge.T, '%d')
    _csv_gz(d / 'raw' / 'node-feat.csv.gz', x, '%.6f')
    _csv_gz(d / 'raw' / 'node-label.csv.gz', y[:, None], '%d')
    _csv_gz(d / 'raw' / 'num-node-list.csv.gz', [[N]], '%d')
    _csv_gz(d / 'raw' / 'num-edge-list.csv.gz', [[edge.shape[1]]], '%d')
    for extra in extra_node_files:
        _csv_gz(d / 'raw' / f'{extra}.csv.gz',
                np.arange(N)[:, None] % 7 + 2010, '%d')
    perm = np.random.default_rng(seed).permutation(N)
    for part, idx in (('train', perm[:30]), ('valid', perm[30:45]),
                      ('test', perm[45:])):
        _csv_gz(d / 'split' / split / f'{part}.csv.gz', np.sort(idx), '%d')
    (d / 'RELEASE_v1.txt').write_text('tiny test copy\n')
    return edge.shape[1]


def write_reddit_raw(root, seed=1):
    """Tiny reddit_data.npz / reddit_graph.npz as torch_geometric's Reddit
    reads them (raw/ of the unpacked reddit.zip)."""
    import scipy.sparse as sp
    x, y, edge = _tiny_graph(seed)
    raw = Path(root) / 'Reddit' / 'raw'
    raw.mkdir(parents=True)
    node_types = np.ones(N, dtype=np.int64)
    node_types[30:45], node_types[45:] = 2, 3
    np.savez(raw / 'reddit_data.npz', feature=x, label=y,
             node_types=node_types)
    adj = sp.coo_matrix((np.ones(edge.shape[1]), (edge[0], edge[1])),
                        shape=(N, N))
    sp.save_npz(raw / 'reddit_graph.npz', adj)
    return edge.shape[1]


@pytest.fixture(scope='session')
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp('data')
    sizes = {
        'products': write_ogb_raw(root, 'ogbn-products', 'sales_ranking'),
        'arxiv': write_ogb_raw(root, 'ogbn-arxiv', 'time', ('node_year',),
                               seed=2),
        'reddit': write_reddit_raw(root),
    }
    return root, sizes


def check_output(out, epochs=1):
    found = EPOCH.findall(out)
    assert [int(e[1]) for e in found] == list(range(1, epochs + 1)), out
    for e in found:
        accs = [float(v) for v in e[3:6]]
        assert all(0.0 <= a <= 1.0 for a in accs), out
    assert re.search(r'Best val: [\d.]+, test at best val: [\d.]+$', out,
                     re.M), out
    return found


def data_line(out):
    m = re.search(r'^Data: (\S+) \((.*)\): ([\d,]+) nodes, ([\d,]+) edges, '
                  r'(\d+) features, (\d+) classes, train/val/test '
                  r'([\d,]+)/([\d,]+)/([\d,]+)$', out, re.M)
    assert m, out
    return m


PRODUCTS_RUNS = {
    'loader-fused': ['--loader', 'fused'],
    'loader-pyg': ['--loader', 'pyg'],
    'layers-fused': ['--loader', 'fused', '--layers', 'fused'],
    'no-trim': ['--loader', 'fused', '--no-trim'],
    'fused-sage': ['--model', 'fused-sage'],
    'autospmm-gcn': ['--model', 'autospmm-gcn'],
}


@pytest.mark.parametrize('run', list(PRODUCTS_RUNS))
def test_products(data_root, capsys, run):
    root, sizes = data_root
    code, out, err = run_inprocess(
        PRODUCTS, ['--root', root, *SHORT, *PRODUCTS_RUNS[run]], capsys)
    assert code == 0, err[-3000:]
    check_output(out)
    m = data_line(out)
    assert m.group(1) == 'ogbn-products'
    # products is stored with each edge once; the reader adds the reverse.
    assert int(m.group(3)) == N
    assert int(m.group(4).replace(',', '')) == 2 * sizes['products']
    assert (m.group(7), m.group(8), m.group(9)) == ('30', '15', '15')
    assert 'SYNTHETIC' not in out
    if run == 'loader-fused':
        assert 'loader: pyg_fusesample' in out
    elif run == 'loader-pyg':
        assert 'loader: torch_geometric.loader' in out
    if run.startswith('loader') or run == 'layers-fused':
        # Trimmed by default where the batches carry per-hop counts: ours
        # always, PyG's with pyg-lib.
        trimmed = run != 'loader-pyg' or WITH_PYG_LIB
        assert ('trim: on' if trimmed else NO_COUNTS) in out, out
        assert (FUSED_LAYERS if run == 'layers-fused' else PYG_LAYERS) \
            in out, out
    elif run == 'no-trim':
        assert 'trim: off (--no-trim)' in out and PYG_LAYERS in out, out
    else:  # FusedGraphSAGE, the GCN: no PyG layers, nothing trimmed
        assert 'layers:' not in out and 'trim:' not in out, out


def _losses(script, args, capsys):
    code, out, err = run_inprocess(script, args, capsys)
    assert code == 0, err[-3000:]
    return [float(e[2]) for e in check_output(out, epochs=2)], out


@pytest.mark.parametrize('script,loader', [(ARXIV, 'fused'),
                                           (REDDIT, 'pyg')])
def test_layers_fused_trains_as_pyg_layers(data_root, capsys, script,
                                           loader):
    """--layers fused is the same model: untrimmed (dropout then draws the
    same masks) it trains to PyG's layers' losses, up to rounding; trimmed
    (the default where the batches carry counts) it trains too, and the
    layer-wise full-graph inference runs on the swapped convs."""
    root, _ = data_root
    args = ['--root', root, *SHORT, '--epochs', '2', '--loader', loader,
            '--no-trim']
    pyg, _ = _losses(script, args, capsys)
    fused, out = _losses(script, args + ['--layers', 'fused'], capsys)
    assert FUSED_LAYERS in out
    assert fused == pytest.approx(pyg, abs=2e-3)
    _, out = _losses(script, args[:-1] + ['--layers', 'fused'], capsys)
    trimmed = loader == 'fused' or WITH_PYG_LIB
    assert ('trim: on' if trimmed else NO_COUNTS) in out, out


@pytest.mark.parametrize('reader', [
    'raw', pytest.param('ogb', marks=pytest.mark.skipif(
        not HAS_OGB, reason='the ogb package is not installed'))])
def test_arxiv(data_root, capsys, reader):
    root, _ = data_root
    code, out, err = run_inprocess(
        ARXIV, ['--root', root, *SHORT, '--loader', 'fused',
                '--reader', reader], capsys)
    assert code == 0, err[-3000:]
    check_output(out)
    m = data_line(out)
    assert m.group(1) == 'ogbn-arxiv'
    expected = {'raw': '_common.read_ogb_raw',
                'ogb': 'ogb.nodeproppred.PygNodePropPredDataset'}[reader]
    assert m.group(2).startswith(expected), out


def test_products_without_ogb(data_root, capsys, monkeypatch):
    """Where the ogb package is absent (as on the GPU machine), the default
    reader says so and reads the same raw files itself."""
    monkeypatch.setitem(sys.modules, 'ogb', None)
    monkeypatch.setitem(sys.modules, 'ogb.nodeproppred', None)
    root, sizes = data_root
    code, out, err = run_inprocess(
        PRODUCTS, ['--root', root, *SHORT, '--model', 'autospmm-gcn'],
        capsys)
    assert code == 0, err[-3000:]
    check_output(out)
    m = data_line(out)
    assert m.group(2).startswith('_common.read_ogb_raw (')
    assert 'pip install ogb' in m.group(2)
    assert int(m.group(4).replace(',', '')) == 2 * sizes['products']


def test_reddit(data_root, capsys):
    root, sizes = data_root
    code, out, err = run_inprocess(
        REDDIT, ['--root', root, *SHORT, '--model', 'fused-sage'], capsys)
    assert code == 0, err[-3000:]
    check_output(out)
    m = data_line(out)
    assert m.group(1) == 'Reddit'
    assert m.group(2) == 'torch_geometric.datasets.Reddit'
    assert int(m.group(4)) == sizes['reddit']
    assert (m.group(7), m.group(8), m.group(9)) == ('30', '15', '15')


@pytest.mark.skipif(not HAS_OGB, reason='the ogb package is not installed')
def test_raw_reader_matches_ogb(data_root):
    """_common.read_ogb_raw (used without the ogb package) reads what
    PygNodePropPredDataset reads."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from _common import SPECS, pyg_safe_globals, read_ogb_raw
    finally:
        sys.path.remove(str(EXAMPLES))
    from ogb.nodeproppred import PygNodePropPredDataset
    root, _ = data_root
    for name in ('ogbn-products', 'ogbn-arxiv'):
        ours, split = read_ogb_raw(str(root), SPECS[name])
        with torch.serialization.safe_globals(pyg_safe_globals()):
            dataset = PygNodePropPredDataset(name, str(root))
            theirs, their_split = dataset[0], dataset.get_idx_split()
        assert torch.equal(ours.edge_index, theirs.edge_index)
        assert torch.equal(ours.x, theirs.x)
        assert torch.equal(ours.y, theirs.y)
        assert ours.num_nodes == theirs.num_nodes
        for key in ('train', 'valid', 'test'):
            assert torch.equal(split[key], their_split[key])


def test_products_subprocess(data_root):
    """The script as a user starts it."""
    root, _ = data_root
    code, out, err = run_subprocess(
        PRODUCTS, ['--root', root, *SHORT, '--loader', 'fused'])
    assert code == 0, err[-3000:]
    check_output(out)
    assert data_line(out).group(1) == 'ogbn-products'


def test_missing_data_subprocess(tmp_path):
    code, out, err = run_subprocess(
        PRODUCTS, ['--root', tmp_path / 'nowhere', '--epochs', '1',
                   '--device', 'cpu'])
    assert code != 0
    expected = str(tmp_path / 'nowhere' / 'ogbn_products')
    assert expected in err and 'raw/edge.csv.gz' in err, err
    assert '--synthetic' in err
    assert not EPOCH.search(out)


def test_missing_reddit(tmp_path, capsys):
    code, out, err = run_inprocess(
        REDDIT, ['--root', tmp_path, '--epochs', '1', '--device', 'cpu'],
        capsys)
    assert code != 0
    assert str(tmp_path / 'Reddit') in err and 'reddit_data.npz' in err


def test_synthetic_fallback(tmp_path, capsys):
    code, out, err = run_inprocess(
        ARXIV, ['--root', tmp_path, '--synthetic', '--scale', '0.001',
                '--epochs', '1', '--device', 'cpu', '--hidden', '16'],
        capsys)
    assert code == 0, err[-3000:]
    lines = out.splitlines()
    assert lines and all(ln.startswith('[SYNTHETIC arxiv_like')
                         for ln in lines), out
    assert 'ogbn-arxiv not found' in out and 'ogbn_arxiv' in out
    assert len(check_output(out)) == 1


def test_loader_needs_sage(data_root, capsys):
    root, _ = data_root
    code, _, err = run_inprocess(
        PRODUCTS, ['--root', root, '--model', 'fused-sage', '--loader',
                   'fused', '--epochs', '1'], capsys)
    assert code != 0 and '--loader applies to --model sage only' in err
    for flag in (['--layers', 'fused'], ['--no-trim']):
        code, _, err = run_inprocess(
            PRODUCTS, ['--root', root, '--model', 'autospmm-gcn', *flag,
                       '--epochs', '1'], capsys)
        assert code != 0 and 'applies to --model sage only' in err, err


@pytest.mark.skipif(WITH_PYG_LIB, reason="PyG's batches carry the counts")
def test_trim_refused_without_counts(data_root, capsys):
    # An explicit --trim that PyG's batches (no pyg-lib) cannot serve.
    root, _ = data_root
    code, _, err = run_inprocess(
        PRODUCTS, ['--root', root, *SHORT, '--loader', 'pyg', '--trim'],
        capsys)
    assert code != 0 and "--trim needs the batches' per-hop counts" in err


def test_capture_needs_fused_sage_and_cuda(data_root, capsys):
    root, _ = data_root
    code, _, err = run_inprocess(
        PRODUCTS, ['--root', root, '--capture', '--epochs', '1'], capsys)
    assert code != 0 and '--capture applies to --model fused-sage' in err
    code, _, err = run_inprocess(
        PRODUCTS, ['--root', root, '--capture', '--loader', 'fused',
                   '--layers', 'fused', '--no-trim', '--epochs', '1'], capsys)
    assert code != 0 and 'trim False' in err
    code, _, err = run_inprocess(
        PRODUCTS, ['--root', root, '--model', 'fused-sage', '--capture',
                   '--device', 'cpu', '--epochs', '1'], capsys)
    assert code != 0 and '--capture needs a CUDA device' in err


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_products_fused_sage_captured(data_root, capsys):
    """The captured FusedGraphSAGE step trains (one short epoch whose last
    batch is shorter than the captured one, so it also runs eagerly)."""
    root, _ = data_root
    code, out, err = run_inprocess(
        PRODUCTS, ['--root', root, *SHORT, '--model', 'fused-sage',
                   '--capture', '--device', 'cuda', '--batch-size', '7'],
        capsys)
    assert code == 0, err[-3000:]
    check_output(out)
    assert 'CUDA graph: each step replayed' in out


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_products_fused_layers_captured(data_root, capsys):
    """PyG's GraphSAGE through to_fused, each step on a padded batch
    replayed from a CUDA graph (CapturedBatchStep); the last, short batch
    runs eagerly."""
    root, _ = data_root
    code, out, err = run_inprocess(
        PRODUCTS, ['--root', root, *SHORT, '--loader', 'fused', '--layers',
                   'fused', '--capture', '--device', 'cuda', '--batch-size',
                   '7'], capsys)
    assert code == 0, err[-3000:]
    check_output(out)
    assert 'CUDA graph: each step replayed' in out
