"""What ogbn_products_sage.py, ogbn_arxiv_sage.py and reddit_sage.py share
(and the parts of it that ogbn_mag_sage.py and link_pred.py use).

Each example is a call of :func:`main` with its data set's name and
defaults; everything else lives here:

* the argument parser (``--loader``, ``--model``, ``--amp``, ``--device``,
  ``--root``, ``--synthetic``, ...), and the ``--layers`` / ``--trim``
  handling the mag and multi-GPU examples share (PyG's layers or the same
  model through ``to_fused``; the model called with the batches' per-hop
  counts wherever the batches carry them);
* data loading: OGB node-property data with ``PygNodePropPredDataset`` (or,
  without the ``ogb`` package, :func:`read_ogb_raw`, a reader of the same
  raw files), Reddit with :class:`torch_geometric.datasets.Reddit`. Nothing
  can be downloaded: when the files are absent the script says where it
  looked and stops, or, with ``--synthetic``, runs on the SYNTHETIC graph of
  the same shape from :mod:`pyg_fusesample.datasets`, labelling every line
  it prints; a file that is there but truncated or inconsistent stops it
  with a message naming the file (:mod:`_data_checks`). Heterogeneous OGB sets (ogbn-mag) are read the same way, by
  :func:`read_ogb_hetero_raw` without the ``ogb`` package, into a
  ``HeteroData`` (:func:`load_real`);
* the three models: PyG's ``GraphSAGE`` fed by a neighbour loader (PyG's or
  :class:`~pyg_fusesample.FusedNeighborLoader`, the one-line swap),
  :class:`~pyg_fusesample.FusedGraphSAGE` trained on seed batches (no
  loader), and a full-batch GCN of
  :class:`~pyg_fusesample.nn.AutoSpMMConv` layers;
* training, and evaluation by exact layer-wise full-neighbour inference of
  every node on the chosen device (as PyG's ogbn-products example does).
"""
import argparse
import os.path as osp
import time
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import Data, HeteroData
from torch_geometric.utils import index_to_mask, to_undirected
from tqdm import tqdm

from _data_checks import (
    TABLE_ERRORS, MalformedData, check_graph, check_ids, check_labels,
    check_rows, npz_readable, read_count, read_table, reader_failed)

DEFAULT_ROOT = osp.normpath(osp.join(osp.dirname(osp.realpath(__file__)),
                                     '..', 'data'))
MODELS = ('sage', 'fused-sage', 'autospmm-gcn')
OGB_READER = 'ogb.nodeproppred.PygNodePropPredDataset'
REDDIT_READER = 'torch_geometric.datasets.Reddit'
OGB_FILES = ('its raw/ or processed/ files are truncated, damaged or '
             'inconsistent')
OGB_RAW = ('edge', 'node-feat', 'node-label', 'num-node-list',
           'num-edge-list')


@dataclass
class Spec:
    """What a data set needs: where its files are, how to read them, and
    which synthetic preset stands in for it."""
    name: str                  # 'ogbn-products', 'ogbn-arxiv', 'Reddit'
    kind: str                  # 'ogb' or 'reddit'
    synthetic: str             # pyg_fusesample.datasets.get_dataset name
    num_classes: int
    add_inverse_edge: bool = False    # OGB's master.csv
    extra_node_files: Tuple[str, ...] = ()
    split: str = ''                   # OGB's split folder
    release: int = 1                  # OGB's RELEASE_v<n>.txt
    undirected: bool = False          # symmetrise after loading
    defaults: dict = field(default_factory=dict)
    # Heterogeneous sets (OGB's 'is hetero'): the labelled node type and the
    # relations (head, relation, tail) whose files must be present.
    label_type: str = ''
    relations: Tuple[Tuple[str, str, str], ...] = ()

    @property
    def hetero(self) -> bool:
        return bool(self.label_type)


# ogbn-mag's four relations (OGB's raw/triplet-type-list.csv.gz).
MAG_RELATIONS = (('author', 'affiliated_with', 'institution'),
                 ('author', 'writes', 'paper'),
                 ('paper', 'cites', 'paper'),
                 ('paper', 'has_topic', 'field_of_study'))


SPECS = {
    'ogbn-products': Spec('ogbn-products', 'ogb', 'products', 47,
                          add_inverse_edge=True, split='sales_ranking'),
    'ogbn-arxiv': Spec('ogbn-arxiv', 'ogb', 'arxiv', 40,
                       extra_node_files=('node_year',), split='time',
                       undirected=True),
    'Reddit': Spec('Reddit', 'reddit', 'reddit', 41),
    # OGB's master.csv: version 2, no inverse edges, additional node files
    # node_year (edge_reltype, the other additional file, is not read).
    'ogbn-mag': Spec('ogbn-mag', 'ogb', 'mag_like', 349,
                     extra_node_files=('node_year',), split='time',
                     release=2, label_type='paper', relations=MAG_RELATIONS),
}


# -- data -------------------------------------------------------------------
class DataMissing(Exception):
    pass


def dataset_dir(root: str, spec: Spec) -> str:
    if spec.kind == 'reddit':
        return osp.join(root, 'Reddit')
    path = osp.join(root, spec.name.replace('-', '_'))
    if osp.isdir(path + '_pyg'):  # as PygNodePropPredDataset does
        path += '_pyg'
    return path


def required_files(spec: Spec) -> List[str]:
    """The files (relative to :func:`dataset_dir`) the readers open."""
    if spec.kind == 'reddit':
        return ['raw/reddit_data.npz', 'raw/reddit_graph.npz']
    if spec.hetero:
        t = spec.label_type
        files = ['raw/num-node-dict.csv.gz', 'raw/triplet-type-list.csv.gz']
        for rel in spec.relations:
            d = 'raw/relations/' + '___'.join(rel)
            files += [f'{d}/edge.csv.gz', f'{d}/num-edge-list.csv.gz']
        files += [f'raw/node-feat/{t}/{n}.csv.gz'
                  for n in ('node-feat',) + tuple(spec.extra_node_files)]
        files.append(f'raw/node-label/{t}/node-label.csv.gz')
        return files + [f'split/{spec.split}/{t}/{s}.csv.gz'
                        for s in ('train', 'valid', 'test')]
    names = list(OGB_RAW) + list(spec.extra_node_files)
    return ([f'raw/{n}.csv.gz' for n in names] +
            [f'split/{spec.split}/{s}.csv.gz'
             for s in ('train', 'valid', 'test')])


def _read_edges(folder: str, num_src: int, num_dst: int,
                sizes: Tuple[str, str]) -> np.ndarray:
    """``[2, E]`` edges from ``folder/edge.csv.gz`` (``src,dst`` rows), as
    many as ``folder/num-edge-list.csv.gz`` says, sources in ``[0,
    num_src)`` and targets in ``[0, num_dst)`` (:obj:`sizes` says where
    those counts are from)."""
    path = osp.join(folder, 'edge.csv.gz')
    edge = read_table(path, np.int64, columns=2).T
    counts = osp.join(folder, 'num-edge-list.csv.gz')
    check_rows(f"'{path}'", 'the edge list', edge.shape[1],
               read_count(counts), f"the edge count in '{counts}'")
    check_ids(f"'{path}'", 'the sources (first column)', edge[0], num_src,
              sizes[0])
    check_ids(f"'{path}'", 'the targets (second column)', edge[1], num_dst,
              sizes[1])
    return edge


def _read_node_table(path: str, dtype, num_nodes: int, of: str,
                     columns: Optional[int] = None) -> np.ndarray:
    # One row per node: features, labels, years.
    table = read_table(path, dtype, columns)
    check_rows(f"'{path}'", 'the table', table.shape[0], num_nodes, of)
    return table


def _read_labels(path: str, num_nodes: int, of: str) -> np.ndarray:
    y = _read_node_table(path, np.int64, num_nodes, of, columns=1)[:, 0]
    check_labels(f"'{path}'", y)
    return y


def _read_split(folder: str, num_nodes: int, of: str) -> dict:
    # OGB's split: {train,valid,test}.csv.gz, one node id per row.
    split = {}
    for s in ('train', 'valid', 'test'):
        path = osp.join(folder, f'{s}.csv.gz')
        ids = read_table(path, np.int64, columns=1)[:, 0]
        check_ids(f"'{path}'", 'the split indices', ids, num_nodes, of)
        split[s] = torch.from_numpy(ids)
    return split


def read_ogb_raw(root: str, spec: Spec) -> Tuple[Data, dict]:
    """Reads an OGB homogeneous node-property data set from its raw files,
    as ``PygNodePropPredDataset`` does (``ogb.io.read_graph_raw``): edges
    ``raw/edge.csv.gz`` (one ``src,dst`` row each, with the reverse of
    each edge interleaved after it where the set is stored undirected),
    ``raw/node-feat.csv.gz``, ``raw/node-label.csv.gz``, the single graph's
    sizes in ``raw/num-{node,edge}-list.csv.gz`` and the split indices in
    ``split/<split>/{train,valid,test}.csv.gz``. Returns the graph
    (``x``, ``edge_index``, ``y`` of shape ``[N, 1]``) and the split.
    Raises :class:`MalformedData` naming the file where one is truncated
    or disagrees with the sizes (edge or split ids outside the nodes, an
    edge count other than the edge list's, other than one feature and
    label row per node, negative labels)."""
    path = dataset_dir(root, spec)
    raw = osp.join(path, 'raw')
    counts = osp.join(raw, 'num-node-list.csv.gz')
    num_nodes = read_count(counts)
    of = f"the node count in '{counts}'"
    edge = _read_edges(raw, num_nodes, num_nodes, (of, of))
    if spec.add_inverse_edge:
        both = np.repeat(edge, 2, axis=1)
        both[0, 1::2], both[1, 1::2] = edge[1], edge[0]
        edge = both
    x = _read_node_table(osp.join(raw, 'node-feat.csv.gz'), np.float32,
                         num_nodes, of)
    y = _read_labels(osp.join(raw, 'node-label.csv.gz'), num_nodes, of)
    data = Data(x=torch.from_numpy(np.ascontiguousarray(x)),
                edge_index=torch.from_numpy(np.ascontiguousarray(edge)),
                y=torch.from_numpy(y[:, None]), num_nodes=num_nodes)
    return data, _read_split(osp.join(path, 'split', spec.split), num_nodes,
                             of)


def _read_csv_rows(path: str) -> List[List[str]]:
    # Small gzipped CSV tables read as text (a header row where OGB has one).
    import csv
    import gzip
    try:
        with gzip.open(path, 'rt', newline='') as f:
            return [row for row in csv.reader(f) if row]
    except TABLE_ERRORS + (csv.Error,) as e:
        raise MalformedData(f"'{path}' cannot be read ({type(e).__name__}: "
                            f"{e}): the file is truncated or damaged") from e


def _read_node_counts(path: str) -> dict:
    # raw/num-node-dict.csv.gz: a header of node types, one row of counts.
    rows = _read_csv_rows(path)
    if len(rows) < 2 or len(rows[0]) != len(rows[1]) or not rows[0]:
        raise MalformedData(f"'{path}' must hold a header of node types and "
                            f"one count per type, got rows "
                            f"{[len(r) for r in rows]} long")
    counts = {}
    for t, c in zip(*rows[:2]):
        try:
            v = float(c)
        except ValueError:
            v = -1.0
        if not v.is_integer() or v < 0:
            raise MalformedData(f"'{path}': node type '{t}' has count {c!r}, "
                                f"not a non-negative integer")
        counts[t] = int(v)
    return counts


def read_ogb_hetero_raw(root: str, spec: Spec) -> Tuple[HeteroData, dict]:
    """Reads an OGB heterogeneous node-property data set (ogbn-mag) from its
    raw files, as ``PygNodePropPredDataset`` does (``ogb.io.read_graph_raw.
    read_csv_heterograph_raw``, ``read_node_label_hetero`` and
    ``read_nodesplitidx_split_hetero``): node counts from
    ``raw/num-node-dict.csv.gz`` (a header of node types, one row of
    counts), the relations listed in ``raw/triplet-type-list.csv.gz``, each
    from ``raw/relations/<head>___<rel>___<tail>/edge.csv.gz`` (``src,dst``
    rows, as many as ``num-edge-list.csv.gz`` says), features from
    ``raw/node-feat/<type>/node-feat.csv.gz`` where present, the
    labelled type's ``node_year``-like extra files from the same folder,
    its labels from ``raw/node-label/<type>/node-label.csv.gz`` and its
    split from ``split/<split>/<type>/{train,valid,test}.csv.gz``. Node and
    edge types come in OGB's (sorted) order. Returns the graph (``x`` where
    given, ``y`` 1-D and e.g. ``year`` on the labelled type) and the
    labelled type's split indices. Raises :class:`MalformedData` naming the
    file where one is truncated or disagrees with the node counts."""
    path = dataset_dir(root, spec)
    raw = osp.join(path, 'raw')
    counts_path = osp.join(raw, 'num-node-dict.csv.gz')
    num_nodes = _read_node_counts(counts_path)
    t = spec.label_type
    if t not in num_nodes:
        raise MalformedData(f"'{counts_path}' has no node type '{t}' (the "
                            f"labelled type)")
    triplets_path = osp.join(raw, 'triplet-type-list.csv.gz')
    triplets = sorted(tuple(r[:3]) for r in _read_csv_rows(triplets_path))
    for rel in triplets:
        if len(rel) != 3 or not {rel[0], rel[2]} <= set(num_nodes):
            raise MalformedData(f"'{triplets_path}': relation {rel} is not "
                                f"(head, relation, tail) between the node "
                                f"types of '{counts_path}' "
                                f"({sorted(num_nodes)})")

    def of(node_type):
        return f"the '{node_type}' count in '{counts_path}'"

    data = HeteroData()
    for u in sorted(num_nodes):
        data[u].num_nodes = num_nodes[u]
        feat = osp.join(raw, 'node-feat', u, 'node-feat.csv.gz')
        if osp.exists(feat):
            x = _read_node_table(feat, np.float32, num_nodes[u], of(u))
            data[u].x = torch.from_numpy(np.ascontiguousarray(x))
    for rel in triplets:
        edge = _read_edges(osp.join(raw, 'relations', '___'.join(rel)),
                           num_nodes[rel[0]], num_nodes[rel[2]],
                           (of(rel[0]), of(rel[2])))
        data[rel].edge_index = torch.from_numpy(np.ascontiguousarray(edge))
    store = data[t]
    for extra in spec.extra_node_files:
        v = _read_node_table(
            osp.join(raw, 'node-feat', t, f'{extra}.csv.gz'), np.int64,
            num_nodes[t], of(t), columns=1)[:, 0]
        store[extra[len('node_'):] if extra.startswith('node_') else extra] \
            = torch.from_numpy(np.ascontiguousarray(v))
    y = _read_labels(osp.join(raw, 'node-label', t, 'node-label.csv.gz'),
                     num_nodes[t], of(t))
    store.y = torch.from_numpy(np.ascontiguousarray(y))
    return data, _read_split(osp.join(path, 'split', spec.split, t),
                             num_nodes[t], of(t))


def _ogb_hetero_to_pyg(data, split: dict, spec: Spec
                       ) -> Tuple[HeteroData, dict]:
    """PygNodePropPredDataset's heterogeneous graph (a ``Data`` of dicts:
    ``num_nodes_dict``, ``edge_index_dict``, ``x_dict``, ``y_dict``,
    ``node_year``, ...) as the ``HeteroData`` :func:`read_ogb_hetero_raw`
    returns; the split of the labelled type."""
    out = HeteroData()
    x_dict = data['x_dict'] or {}
    for t, n in data['num_nodes_dict'].items():
        out[t].num_nodes = int(n)
        if t in x_dict:
            out[t].x = x_dict[t].float()
    for rel, edge_index in data['edge_index_dict'].items():
        out[tuple(rel)].edge_index = edge_index
    t = spec.label_type
    for extra in spec.extra_node_files:
        name = extra[len('node_'):] if extra.startswith('node_') else extra
        out[t][name] = data[extra][t].view(-1)
    out[t].y = data['y_dict'][t].view(-1).long()
    return out, {s: split[s][t] for s in ('train', 'valid', 'test')}


def pyg_safe_globals() -> list:
    """PyG's classes inside processed data files, for ``torch.load``."""
    from torch_geometric.data import data as data_module, storage
    return [data_module.Data, data_module.DataEdgeAttr,
            data_module.DataTensorAttr, storage.GlobalStorage,
            storage.NodeStorage, storage.EdgeStorage, storage.BaseStorage]


def read_with_ogb(name: str, root: str, path: str,
                  hetero: Optional[Spec] = None) -> Tuple[Data, dict]:
    """``(data, split)`` of OGB's ``name`` read by ``ogb``'s
    ``PygNodePropPredDataset`` from ``path`` (under ``root``), a
    heterogeneous set as :func:`_ogb_hetero_to_pyg` makes it; checked: a
    file ogb cannot read, ids outside the node counts and sizes that
    disagree raise :class:`MalformedData` naming the reader and folder."""
    from ogb.nodeproppred import PygNodePropPredDataset
    where = f"{OGB_READER}('{name}') in '{path}'"
    try:
        # ogb calls torch.load on the file it wrote itself, which PyTorch >=
        # 2.6 refuses for PyG's classes by default.
        with torch.serialization.safe_globals(pyg_safe_globals()):
            dataset = PygNodePropPredDataset(name, root)
            data, split = dataset[0], dataset.get_idx_split()
        if hetero is not None:
            data, split = _ogb_hetero_to_pyg(data, split, hetero)
    except Exception as e:  # whatever ogb raises on a bad file
        raise reader_failed(where, e, OGB_FILES) from e
    check_graph(data, where)
    store = data[hetero.label_type] if hetero is not None else data
    for s, ids in split.items():
        check_ids(where, f"split '{s}'", ids, store.num_nodes)
    return data, split


def _load_ogb(root: str, spec: Spec, reader: str
              ) -> Tuple[Union[Data, HeteroData], dict, str]:
    path = dataset_dir(root, spec)
    release = osp.join(path, f'RELEASE_v{spec.release}.txt')
    why = None
    if reader != 'raw':
        try:
            from ogb.nodeproppred import PygNodePropPredDataset
        except ImportError:
            if reader == 'ogb':
                raise DataMissing("--reader ogb: the 'ogb' package is not "
                                  "installed (pip install ogb)")
            PygNodePropPredDataset = None
            why = ("the 'ogb' package is not installed (pip install ogb), "
                   "so OGB's raw files are read by _common." +
                   ('read_ogb_hetero_raw' if spec.hetero else 'read_ogb_raw'))
        if PygNodePropPredDataset is not None:
            if osp.exists(release):
                data, split = read_with_ogb(spec.name, root, path,
                                            spec if spec.hetero else None)
                return data, split, OGB_READER
            # ogb would ask on stdin whether to download a newer release.
            if reader == 'ogb':
                raise DataMissing(f"--reader ogb: no {release} (an OGB "
                                  f"download has it; without it "
                                  f"PygNodePropPredDataset asks to re-download)")
            why = (f'no {osp.basename(release)} in {path} (without it '
                   f'PygNodePropPredDataset asks to re-download), so the raw '
                   f'files are read by _common.' +
                   ('read_ogb_hetero_raw' if spec.hetero else 'read_ogb_raw'))
    if spec.hetero:
        data, split = read_ogb_hetero_raw(root, spec)
        return data, split, ('_common.read_ogb_hetero_raw' +
                             (f' ({why})' if why else ''))
    data, split = read_ogb_raw(root, spec)
    return data, split, '_common.read_ogb_raw' + (f' ({why})' if why else '')


def _read_reddit(path: str) -> Data:
    """PyG's Reddit from ``path`` (``raw/reddit_{data,graph}.npz``, and
    ``processed/`` once read), checked: :class:`MalformedData` naming the
    damaged file, or the reader and folder."""
    from torch_geometric.datasets import Reddit
    where = f"{REDDIT_READER}('{path}')"
    try:
        with torch.serialization.safe_globals(pyg_safe_globals()):
            data = Reddit(path)[0]
    except Exception as e:  # whatever numpy, scipy or PyG raise
        raw = [osp.join(path, f) for f in required_files(SPECS['Reddit'])]
        damaged = [f"'{f}'" for f in raw if not npz_readable(f)]
        raise reader_failed(where, e, (
            f"{' and '.join(damaged)} cannot be read: truncated or damaged"
            if damaged else 'its raw/reddit_data.npz, raw/reddit_graph.npz '
            'or processed/ files are damaged or inconsistent')) from e
    where += (' (from raw/reddit_data.npz and raw/reddit_graph.npz; '
              'processed/ keeps what was read from them: delete it after '
              'replacing them)')
    check_graph(data, where)
    check_labels(where, data.y)
    return data


def load_real(root: str, spec: Spec, reader: str = 'auto'
              ) -> Tuple[Union[Data, HeteroData], str]:
    """The real data set as one ``Data`` (``x``, ``edge_index``, 1-D ``y``,
    train/val/test masks) and the name of the code that read it. Raises
    :class:`DataMissing` naming the expected files when they are absent,
    :class:`MalformedData` naming the file (or the reader) when one is
    truncated or inconsistent.
    A heterogeneous set (``spec.hetero``) comes as a ``HeteroData`` with
    ``y`` and the masks on its labelled node type, its relations as
    stored (directed)."""
    path = dataset_dir(root, spec)
    missing = [f for f in required_files(spec)
               if not osp.exists(osp.join(path, f))]
    if missing:
        raise DataMissing(
            f"{spec.name} not found: expected {len(missing)} more file(s) "
            f"under '{path}': {', '.join(missing)}. Nothing can be "
            f"downloaded here; copy the data set there (or pass --root), "
            f"or run with --synthetic on a generated graph of its shape")
    if spec.kind == 'reddit':
        data, reader_name = _read_reddit(path), REDDIT_READER
    elif spec.hetero:
        data, split, reader_name = _load_ogb(root, spec, reader)
        store = data[spec.label_type]
        n = store.num_nodes
        store.train_mask = index_to_mask(split['train'], n)
        store.val_mask = index_to_mask(split['valid'], n)
        store.test_mask = index_to_mask(split['test'], n)
        return data, reader_name
    else:
        data, split, reader_name = _load_ogb(root, spec, reader)
        n = data.num_nodes
        data = Data(x=data.x.float(), edge_index=data.edge_index,
                    y=data.y.view(-1).long(), num_nodes=n,
                    train_mask=index_to_mask(split['train'], n),
                    val_mask=index_to_mask(split['valid'], n),
                    test_mask=index_to_mask(split['test'], n))
    if spec.undirected:
        data.edge_index = to_undirected(data.edge_index,
                                        num_nodes=data.num_nodes)
    return data, reader_name


# -- models -----------------------------------------------------------------
class GCN(torch.nn.Module):
    """A full-batch GCN whose layers are AutoSpMMConv (GCNConv's maths)."""
    def __init__(self, in_channels, hidden, out_channels, num_layers,
                 dropout=0.5):
        super().__init__()
        from pyg_fusesample.nn import AutoSpMMConv
        sizes = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(
            AutoSpMMConv(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = x.relu()
        return x


def build_model(args, in_channels: int, num_classes: int):
    layers = len(args.num_neighbors)
    if args.model == 'sage':
        from torch_geometric.nn.models import GraphSAGE
        return with_layers(
            GraphSAGE(in_channels, args.hidden, num_layers=layers,
                      out_channels=num_classes, dropout=0.5), args.layers)
    if args.model == 'fused-sage':
        from pyg_fusesample import FusedGraphSAGE
        return FusedGraphSAGE(in_channels, args.hidden, num_classes, layers,
                              args.num_neighbors, dropout=0.5)
    return GCN(in_channels, args.hidden, num_classes, layers)


# -- layers and trimming (--layers, --trim / --no-trim) -----------------------
LAYERS = ('pyg', 'fused')
# --layers as the examples print it
LAYER_NAMES = {'pyg': "PyG's (torch_geometric.nn)",
               'fused': 'to_fused (pyg_fusesample.nn)'}


def add_layers_arg(p: argparse.ArgumentParser, applies: str = ''):
    """--layers: PyG's layers, or the same model through ``to_fused``."""
    p.add_argument('--layers', choices=LAYERS, default=None,
                   help=f"{applies}'pyg': the model as PyG users build it "
                   f"(torch_geometric.nn layers); 'fused': the same model "
                   f"passed through pyg_fusesample.nn.to_fused (its convs "
                   f"swapped in place for the mini-batch layers, weights "
                   f"kept) (default: pyg)")


def add_trim_arg(p: argparse.ArgumentParser, applies: str = ''):
    """--trim / --no-trim: trim_to_layer from the batches' per-hop counts,
    by default wherever the batches carry them."""
    p.add_argument('--trim', action=argparse.BooleanOptionalAction,
                   default=None,
                   help=f"{applies}call the model with the batch's per-hop "
                   f"counts (PyG's num_sampled_nodes_per_hop / "
                   f"num_sampled_edges_per_hop): layer l computes only the "
                   f"nodes the next layers read, the seeds' outputs are the "
                   f"same. Default: on where the batches carry the counts "
                   f"(FusedNeighborLoader's always; PyG's NeighborLoader's "
                   f"only with pyg-lib), else off")


def batches_have_counts(loader: str) -> bool:
    """Whether a neighbour loader's batches carry per-hop counts
    (``num_sampled_nodes`` / ``num_sampled_edges``): ours always, PyG's
    only when its sampler is pyg-lib's."""
    if loader == 'fused':
        return True
    import torch_geometric.typing
    return bool(torch_geometric.typing.WITH_PYG_LIB)


def resolve_trim(parser: argparse.ArgumentParser, trim: Optional[bool],
                 loader: str) -> Tuple[bool, str]:
    """``--trim`` / ``--no-trim`` / neither (``None``: on where the batches
    allow it) as ``(trim, what to print)``; an explicit ``--trim`` that
    the batches cannot serve is refused."""
    if trim is False:
        return False, 'off (--no-trim)'
    if batches_have_counts(loader):
        return True, 'on'
    why = ("PyG's NeighborLoader gives per-hop counts only with pyg-lib, "
           "which is not installed")
    if trim:
        parser.error(f"--trim needs the batches' per-hop counts; {why}")
    return False, f'off ({why})'


def trim_kwargs(batch, trim: bool) -> dict:
    """The model call's trimming arguments from a batch's per-hop counts;
    none where trimming is off or the batch has no counts."""
    nodes = getattr(batch, 'num_sampled_nodes', None)
    edges = getattr(batch, 'num_sampled_edges', None)
    if not trim or nodes is None or edges is None:
        return {}
    return dict(num_sampled_nodes_per_hop=nodes,
                num_sampled_edges_per_hop=edges)


def with_layers(model: torch.nn.Module, layers: str) -> torch.nn.Module:
    """``model`` as built (``'pyg'``), or passed through
    :func:`pyg_fusesample.nn.to_fused` (``'fused'``: PyG's convs swapped in
    place for the mini-batch layers, parameters and state dict kept; a
    ``BasicGNN`` called with per-hop counts then computes only the rows
    the next layer reads and returns the seeds' rows)."""
    if layers == 'fused':
        from pyg_fusesample.nn import to_fused
        model = to_fused(model)
    return model


def neighbor_loader_class(name: str):
    if name == 'fused':
        from pyg_fusesample import FusedNeighborLoader as NeighborLoader
    else:
        from torch_geometric.loader import NeighborLoader
    return NeighborLoader


def link_neighbor_loader_class(name: str):
    """PyG's ``LinkNeighborLoader`` or ours under its name (the swap)."""
    if name == 'fused':
        from pyg_fusesample import (
            FusedLinkNeighborLoader as LinkNeighborLoader)
    else:
        from torch_geometric.loader import LinkNeighborLoader
    return LinkNeighborLoader


# -- training and evaluation ------------------------------------------------
def autocast(device: torch.device, amp: bool, cache: bool = True):
    # The weight-cast cache must be off inside a CUDA graph capture.
    return torch.autocast('cuda', dtype=torch.bfloat16,
                          enabled=amp and device.type == 'cuda',
                          cache_enabled=cache)


class Trainer:
    def __init__(self, args, data: Data, model, device: torch.device):
        self.args, self.data, self.model, self.device = args, data, model, device
        # capturable: the optimizer step runs inside the captured CUDA graph
        self.optimizer = torch.optim.Adam(model.parameters(), lr=args.lr,
                                          capturable=args.capture)
        self.captured = None  # CapturedStep, built on the first batch
        self.train_idx = data.train_mask.nonzero().view(-1)
        self.gpu = None  # x, edge_index, y (and masks) on the device
        if args.model != 'sage' or args.loader == 'fused':
            self.gpu = data.to(device)
        if args.model == 'sage':
            NeighborLoader = neighbor_loader_class(args.loader)
            # PyG's loader samples on the CPU; ours where the data lives.
            src = self.gpu if args.loader == 'fused' else data
            workers = args.num_workers if src.x.device.type == 'cpu' else 0
            self.train_loader = NeighborLoader(
                src, num_neighbors=args.num_neighbors,
                input_nodes=src.train_mask, batch_size=args.batch_size,
                shuffle=True, num_workers=workers)
            # Layer-wise inference: every node with all its in-neighbours,
            # one hop at a time; the graph alone (features come from x_all).
            graph = Data(edge_index=src.edge_index, num_nodes=data.num_nodes)
            self.subgraph_loader = NeighborLoader(
                graph, num_neighbors=[-1], batch_size=args.eval_batch_size,
                shuffle=False, num_workers=workers)
            self.loader_name = (f'{NeighborLoader.__module__}.'
                                f'{NeighborLoader.__name__}')
        elif args.model == 'fused-sage':
            self.loader_name = 'none (FusedGraphSAGE samples seed batches)'
        else:
            self.loader_name = 'none (full batch)'

    def _body(self, forward, y) -> torch.Tensor:
        with autocast(self.device, self.args.amp, cache=not self.args.capture):
            loss = F.cross_entropy(forward().float(), y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _step(self, forward, y) -> torch.Tensor:
        self.optimizer.zero_grad()
        return self._body(forward, y)

    def _replayed(self, body, arg, capture):
        """``body(arg)`` eagerly, or with ``--capture`` through the CUDA
        graph ``capture(body)`` makes on the first call."""
        if not self.args.capture:
            self.optimizer.zero_grad()
            return body(arg)
        if self.captured is None:
            self.captured = capture(body)
        # a clone: the graph overwrites its loss on the next replay
        return self.captured(arg).clone()

    def _fused_sage_step(self, seeds: torch.Tensor) -> torch.Tensor:
        g, model = self.gpu, self.model

        def body(seeds):
            return self._body(lambda: model(g.x, g.edge_index, seeds),
                              g.y[seeds])

        def capture(body):
            from pyg_fusesample.nn import CapturedStep
            return CapturedStep(body, self.optimizer, self.args.batch_size,
                                self.device, example_seeds=seeds)
        return self._replayed(body, seeds, capture)

    def _sage_step(self, batch) -> torch.Tensor:
        model, trim = self.model, self.args.trim

        def body(b):
            n = b.batch_size
            # trimmed (PyG's or ours), the seeds' rows come first
            return self._body(
                lambda: model(b.x, b.edge_index, **trim_kwargs(b, trim))[:n],
                b.y[:n])

        def capture(body):
            from pyg_fusesample.nn import CapturedBatchStep
            return CapturedBatchStep(body, self.optimizer, attrs=['x', 'y'])
        return self._replayed(body, batch, capture)

    def train(self, desc: str) -> float:
        model, args, device = self.model, self.args, self.device
        model.train()
        # losses add up on the device: no host synchronisation per step
        total_loss, total = torch.zeros((), device=device), 0
        if args.model == 'sage':
            for batch in tqdm(self.train_loader, desc=desc, disable=None):
                batch = batch.to(device)
                n = batch.batch_size
                # trimmed (PyG's or ours), the seeds' rows come first
                loss = self._sage_step(batch)
                total_loss += loss * n
                total += n
        elif args.model == 'fused-sage':
            idx = self.train_idx.to(device)
            perm = idx[torch.randperm(idx.numel(), device=device)]
            for seeds in tqdm(perm.split(args.batch_size), desc=desc,
                              disable=None):
                loss = self._fused_sage_step(seeds)
                total_loss += loss * seeds.numel()
                total += seeds.numel()
        else:
            g = self.gpu  # full batch: one step per epoch
            total_loss = self._step(
                lambda: model(g.x, g.edge_index)[g.train_mask],
                g.y[g.train_mask])
            total = 1
        return float(total_loss) / max(total, 1)

    @torch.no_grad()
    def inference(self) -> torch.Tensor:
        """Exact full-neighbour outputs of every node, layer by layer."""
        model, device = self.model, self.device
        model.eval()
        if self.args.model != 'sage':
            # FusedGraphSAGE in eval mode: one fused k=-1 aggregation per
            # layer over all nodes; the GCN: its full-batch forward.
            return model(self.gpu.x, self.gpu.edge_index)
        # PyG's GraphSAGE, as PyG's products example does (BasicGNN's own
        # inference() only takes torch_geometric's NeighborLoader class).
        x_all = self.data.x.to(device)
        for i in range(model.num_layers):
            xs = []
            for batch in self.subgraph_loader:
                batch = batch.to(device)
                x = x_all.index_select(0, batch.n_id)
                xs.append(model.inference_per_layer(
                    i, x, batch.edge_index, batch.batch_size))
            x_all = torch.cat(xs, dim=0)
        return x_all

    def evaluate(self) -> List[float]:
        pred = self.inference().argmax(dim=-1).cpu()
        y = self.data.y.cpu()
        return [float((pred[m] == y[m]).float().mean()) if m.any() else 0.0
                for m in (self.data.train_mask.cpu(), self.data.val_mask.cpu(),
                          self.data.test_mask.cpu())]


# -- command line -----------------------------------------------------------
def add_run_args(p: argparse.ArgumentParser,
                 amp_help: str = 'bf16 autocast in training (CUDA only)'):
    """The options every example shares: workers, AMP, device, seed."""
    p.add_argument('--num-workers', type=int, default=0,
                   help='loader workers (CPU-resident data only)')
    p.add_argument('--amp', action='store_true', help=amp_help)
    p.add_argument('--device', default=None,
                   help="e.g. 'cpu', 'cuda' (default: cuda if available)")
    p.add_argument('--seed', type=int, default=0)


def add_root_arg(p: argparse.ArgumentParser, spec: Spec):
    """--root, with the files the reader expects under it."""
    where = osp.join('<root>', osp.relpath(dataset_dir('/r', spec), '/r'))
    p.add_argument('--root', default=DEFAULT_ROOT,
                   help=f'data folder; the files are read from {where}/ '
                   f'({", ".join(required_files(spec))}). Nothing is '
                   f'downloaded.')


def make_parser(spec: Spec, description: str, defaults: dict):
    p = argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_root_arg(p, spec)
    p.add_argument('--synthetic', action='store_true',
                   help='if the data is absent, run on a SYNTHETIC graph of '
                   'the same shape (pyg_fusesample.datasets) instead of '
                   'stopping; every printed line is then labelled SYNTHETIC')
    p.add_argument('--scale', type=float, default=1.0,
                   help='node count of the synthetic graph, relative to the '
                   'real data set')
    if spec.kind == 'ogb':
        p.add_argument('--reader', choices=['auto', 'ogb', 'raw'],
                       default='auto',
                       help="'ogb': PygNodePropPredDataset; 'raw': "
                       "_common.read_ogb_raw (the same raw files, no ogb "
                       "package); 'auto': ogb if installed")
    p.add_argument('--model', choices=MODELS, default='sage',
                   help="'sage': PyG GraphSAGE on a neighbour loader; "
                   "'fused-sage': FusedGraphSAGE on seed batches; "
                   "'autospmm-gcn': full-batch GCN of AutoSpMMConv layers")
    p.add_argument('--loader', choices=['pyg', 'fused'], default=None,
                   help="--model sage only: 'pyg' = torch_geometric's "
                   "NeighborLoader, 'fused' = pyg_fusesample's "
                   "FusedNeighborLoader (default: pyg)")
    add_layers_arg(p, '--model sage only: ')
    add_trim_arg(p, '--model sage only: ')
    p.add_argument('--num-neighbors', type=int, nargs='+',
                   default=defaults.get('num_neighbors', [15, 10]),
                   help='fan-out per layer (also sets the number of layers)')
    p.add_argument('--batch-size', type=int,
                   default=defaults.get('batch_size', 1024))
    p.add_argument('--eval-batch-size', type=int,
                   default=defaults.get('eval_batch_size', 4096),
                   help='nodes per batch of layer-wise inference (sage)')
    p.add_argument('--hidden', type=int, default=defaults.get('hidden', 256))
    p.add_argument('--epochs', type=int, default=defaults.get('epochs', 20))
    p.add_argument('--lr', type=float, default=defaults.get('lr', 0.003))
    p.add_argument('--capture', action='store_true',
                   help='on CUDA, replay each training step from a CUDA '
                        'graph: --model fused-sage (sampling, forward, '
                        'backward, optimizer; pyg_fusesample.nn.CapturedStep)'
                        ' or --model sage --loader fused --layers fused '
                        '(forward, backward, optimizer on each batch padded '
                        'to fixed per-hop sizes; CapturedBatchStep)')
    add_run_args(p)
    return p


def main(name: str, description: str, argv: Optional[List[str]] = None,
         **defaults) -> float:
    """Parses the command line, loads ``name`` (see :data:`SPECS`), trains
    and prints one line per epoch. Returns the test accuracy at the best
    validation accuracy."""
    spec = SPECS[name]
    parser = make_parser(spec, description, defaults)
    args = parser.parse_args(argv)
    if args.loader is not None and args.model != 'sage':
        parser.error(f'--loader applies to --model sage only (--model '
                     f'{args.model} uses no neighbour loader)')
    args.loader = args.loader or 'pyg'
    for flag, value in (('--layers', args.layers), ('--trim / --no-trim',
                                                    args.trim)):
        if value is not None and args.model != 'sage':
            parser.error(f'{flag} applies to --model sage only (--model '
                         f'{args.model} has no PyG layers)')
    args.layers = args.layers or 'pyg'
    args.trim, trim_note = resolve_trim(parser, args.trim, args.loader)
    if args.capture and args.model != 'fused-sage' and not (
            args.model == 'sage' and args.loader == 'fused'
            and args.layers == 'fused' and args.trim):
        parser.error('--capture applies to --model fused-sage, or to --model '
                     'sage with --loader fused --layers fused and trimming '
                     f'(got --model {args.model}, --loader {args.loader}, '
                     f'--layers {args.layers}, trim {args.trim})')
    if args.model == 'fused-sage' and any(k < 0 for k in args.num_neighbors[:-1]):
        parser.error('--model fused-sage: only the last fan-out may be -1')
    device = torch.device(args.device or
                          ('cuda' if torch.cuda.is_available() else 'cpu'))
    if args.capture and device.type != 'cuda':
        parser.error(f'--capture needs a CUDA device (got {device})')
    torch.manual_seed(args.seed)

    prefix = ''
    try:
        data, reader = load_real(args.root, spec, getattr(args, 'reader',
                                                          'auto'))
        label = spec.name
    except MalformedData as e:  # present but broken: never --synthetic
        parser.error(str(e))
    except DataMissing as e:
        if not args.synthetic:
            parser.error(str(e))
        from pyg_fusesample.datasets import get_dataset
        data = get_dataset(spec.synthetic, scale=args.scale, seed=args.seed)
        label = f'SYNTHETIC {data.name}, not {spec.name}'
        prefix = f'[SYNTHETIC {data.name}] '
        reader = f'pyg_fusesample.datasets.get_dataset({spec.synthetic!r})'
        print(f'{prefix}{e}', flush=True)
        print(f'{prefix}--synthetic: running on a generated graph of '
              f"{spec.name}'s shape; its numbers say nothing about "
              f'{spec.name}', flush=True)

    def say(msg):
        print(f'{prefix}{msg}', flush=True)

    num_classes = max(spec.num_classes, int(data.y.max()) + 1)
    say(f'Data: {label} ({reader}): {data.num_nodes:,} nodes, '
        f'{data.num_edges:,} edges, {data.num_features} features, '
        f'{num_classes} classes, train/val/test '
        f'{int(data.train_mask.sum()):,}/{int(data.val_mask.sum()):,}/'
        f'{int(data.test_mask.sum()):,}')
    model = build_model(args, data.num_features, num_classes).to(device)
    trainer = Trainer(args, data, model, device)
    amp = ('bf16 autocast' if args.amp and device.type == 'cuda' else
           'off' + (' (--amp needs CUDA)' if args.amp else ''))
    fan_out = ('' if args.model == 'autospmm-gcn' else
               f', fan-out {args.num_neighbors}')
    if args.model == 'sage':
        fan_out += (f', layers: {LAYER_NAMES[args.layers]}, trim: '
                    f'{trim_note}')
    say(f'Model: {args.model} ({model.__class__.__name__}, '
        f'{len(args.num_neighbors)} layers{fan_out}), '
        f'loader: {trainer.loader_name}, device: {device}, AMP: {amp}'
        + (', CUDA graph: each step replayed' if args.capture else ''))

    return run_epochs(
        args.epochs, lambda epoch: trainer.train(desc=f'{prefix}Epoch {epoch:02d}'),
        lambda: dict(zip(('Train', 'Val', 'Test'), trainer.evaluate())),
        device, say)


def run_epochs(epochs: int, train, evaluate, device: torch.device, say,
               metric: str = '') -> float:
    """The examples' loop: ``train(epoch)`` returns the loss, ``evaluate()``
    a dict of scores by split ('Val' and 'Test' among them); prints one line
    per epoch (train time, device synchronised, and evaluation time) and
    returns the test score at the best validation score."""
    suffix = f' {metric}' if metric else ''
    best_val = best_test = 0.0
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        loss = train(epoch)
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        train_time = time.perf_counter() - start
        start = time.perf_counter()
        scores = evaluate()
        eval_time = time.perf_counter() - start
        if scores['Val'] > best_val or epoch == 1:
            best_val, best_test = scores['Val'], scores['Test']
        shown = ', '.join(f'{split}{suffix}: {score:.4f}'
                          for split, score in scores.items())
        say(f'Epoch: {epoch:02d}, Loss: {loss:.4f}, {shown}, '
            f'Time: {train_time:.2f}s, Eval: {eval_time:.2f}s')
    say(f'Best val{suffix}: {best_val:.4f}, test{suffix} at best val: '
        f'{best_test:.4f}')
    return best_test
