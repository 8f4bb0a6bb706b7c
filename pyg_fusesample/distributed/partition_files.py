"""Graph partitions on disk in the format of PyG's ``Partitioner``: one
rank's part read back, and a graph given in chunks written out.

PyG's :class:`torch_geometric.distributed.Partitioner` (2.8) writes::

    root/META.json        num_parts, is_hetero, node_types, edge_types,
                          node_offset, is_sorted
    root/node_map.pt      homogeneous: node -> partition, int64 [N]
    root/edge_map.pt      homogeneous: edge -> partition, int64 [E]
    root/node_map/<t>.pt  heterogeneous: one map per node type (type-local ids)
    root/edge_map/<s__r__d>.pt   one map per edge type (type-local ids)
    root/part_<i>/graph.pt       the in-edges of the nodes part i owns
    root/part_<i>/node_feats.pt  the features of those nodes
    root/part_<i>/edge_feats.pt  the features of those edges (may be empty)

An edge belongs to the partition of its target (CSC: a part holds every
in-edge of its nodes, so one hop of sampling needs only the part that owns
the seed). ``graph.pt`` holds ``row`` (sources), ``col`` (targets, sorted:
``is_sorted``), ``edge_id`` and ``size``; ``node_feats.pt`` holds
``global_id`` and ``feats`` (``{'x': ...}``). Heterogeneous files are dicts
keyed by type, with ``row``/``col``/``id`` in type-local ids, but
``edge_id`` in ``graph.pt`` and ``global_id`` in ``node_feats.pt`` numbered
in the homogeneous graph (``to_homogeneous()``: types in META's order, node
offsets in ``node_offset``, edge offsets the running sums of the edge maps'
lengths), while ``global_id`` in ``edge_feats.pt`` is type-local. Labels are
not part of the format (PyG's example saves one whole-graph ``label.pt``
beside it); :func:`write_partitions` stores them in ``feats`` as ``'y'``,
which PyG's ``LocalFeatureStore.from_partition`` loads as one more attribute.
Edge-level times (``edge_feats.pt``'s ``edge_time``, in ``graph.pt``'s edge
order) are read into :attr:`PartCSC.edge_time`; node-level times (``time``
in ``node_feats.pt``: every node's of the graph, or of the node type, in
every part, as PyG's ``Partitioner`` writes them) into
:attr:`Partition.node_time`, and :func:`write_partitions` writes them
(``node_time``).

:func:`read_partition` returns one rank's :class:`Partition` as the
samplers read it: ids as in the whole graph (type-local for heterogeneous
graphs, the ids of ``data[edge_type].edge_index``), each in-edge list in CSC
over the nodes the part owns, sorted by target and then by edge id (the
order of :func:`~pyg_fusesample.sampler.build_csc` on the whole graph, so
that draws keyed by node agree with a single process). Every file is checked
against ``META.json`` and the maps; a mismatch raises ``ValueError`` naming
the file and the field.

:func:`write_partitions` writes the same format from an iterator of edge
chunks, holding one chunk at a time plus one partition's buffers (the other
partitions' pieces wait on disk), for graphs too large for one process.

The subpackage sits above the samplers and the generators (``sampler``,
``datasets``), whose ops the per-hop exchange of issue 45 will call, and
below ``loader``, where the partitioned loader will live and import it.
"""
import collections
import json
import numbers
import os
import os.path as osp
import pickle
import shutil
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence,
                    Tuple, Union)

import torch
from torch import Tensor

from ..files import replaced_atomically
from ..sparse.edge_index_checks import check_ids_in_range

EdgeType = Tuple[str, str, str]
# Homogeneous graphs use the key None in every per-type dict.
TypeKey = Union[None, str, EdgeType]
Rows = Union[Tensor, Callable[[int, int], Any], Any]


def _type_str(key) -> str:
    # PyG's file names: node type as is, edge type joined by '__'.
    return key if isinstance(key, str) else '__'.join(key)


@dataclass(eq=False)
class PartCSC:
    r"""The in-edges of the nodes a part owns, for one edge type: the
    in-edges of the part's ``i``-th node (``Partition.nodes[dst][i]``) are
    ``row[colptr[i]:colptr[i + 1]]`` (global source ids) with global edge ids
    ``edge_id[...]``, sorted by edge id within a node. :obj:`edge_attr` and
    :obj:`edge_time` (PyG's edge-level ``edge_time``) are in the same
    order. :obj:`size` is ``(num source nodes, num target nodes)``
    of the whole graph."""
    colptr: Tensor
    row: Tensor
    edge_id: Tensor
    size: Tuple[int, int]
    edge_attr: Optional[Tensor] = None
    edge_time: Optional[Tensor] = None

    @property
    def num_edges(self) -> int:
        return self.row.numel()

    def to(self, device) -> 'PartCSC':
        r"""These in-edges with every tensor on :obj:`device` (a new
        :class:`PartCSC`; a tensor already there is shared, not copied)."""
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return PartCSC(move(self.colptr), move(self.row), move(self.edge_id),
                       self.size, move(self.edge_attr), move(self.edge_time))


@dataclass(eq=False)
class Partition:
    r"""One rank's part of a partitioned graph. Every dict is keyed by node
    type (:obj:`nodes`, :obj:`node_map`, :obj:`node_feats`) or edge type
    (:obj:`csc`, :obj:`edge_map`); a homogeneous graph uses the key
    ``None``.

    * :obj:`nodes`: the global ids the part owns, ascending;
    * :obj:`node_feats`: ``{name: tensor}`` rows in :obj:`nodes` order
      (``'x'``, and ``'y'`` where labels were stored or given);
    * :obj:`csc`: :class:`PartCSC` of the owned nodes' in-edges;
    * :obj:`node_map` / :obj:`edge_map`: global id -> partition, the whole
      graph's (``edge_map`` ``None`` when read with ``with_edge_map=False``).

    Memory (bytes; ``N``/``E`` of the whole graph, ``n``/``e`` of the part,
    ``F`` feature width): ``8 N`` node maps + ``8 E`` edge maps +
    ``8 n`` ids + ``8 (n + 1) + 16 e`` CSC per edge type + ``n F s`` node
    features and ``e F s`` edge features (``s`` bytes per value), as
    :meth:`nbytes` counts. The maps dominate past a few parts (1 GB of edge
    map for 124M edges): read with ``with_edge_map=False`` where no edge
    feature lives on another rank. Reading holds about twice the part's
    edges for a moment (the file's order and the sorted copy)."""
    part_id: int
    num_parts: int
    node_types: Optional[List[str]]
    edge_types: Optional[List[EdgeType]]
    nodes: Dict[TypeKey, Tensor]
    node_feats: Dict[TypeKey, Dict[str, Tensor]]
    csc: Dict[TypeKey, PartCSC]
    node_map: Dict[TypeKey, Tensor]
    edge_map: Optional[Dict[TypeKey, Tensor]]
    # PyG's node-level times (node_feats.pt's 'time'): every node's of the
    # whole graph (of each node type), as PyG's Partitioner stores them in
    # every part
    node_time: Dict[TypeKey, Tensor] = field(default_factory=dict)

    @property
    def is_hetero(self) -> bool:
        return self.node_types is not None

    @property
    def device(self) -> torch.device:
        r"""Where the part's graph is (its owned ids; :meth:`to` moves
        them all together)."""
        return next(iter(self.nodes.values())).device

    def to(self, device, pin_features: bool = False) -> 'Partition':
        r"""This part on :obj:`device` (a new :class:`Partition`; a tensor
        already there is shared, not copied): the CSC of every edge type
        (with its ``edge_attr`` and ``edge_time``), the owned ids, the node
        and edge maps (read with ``with_edge_map=False`` to keep the ``8 E``
        bytes of edge maps off the GPU) and the node features.

        With :obj:`pin_features` (a CUDA :obj:`device`), the node features
        stay in the host's memory instead, pinned (page-locked copies), and
        the GPU reads the rows it sends in place over the host link
        (:func:`~pyg_fusesample.ops.gather_rows` through unified
        addressing): the graph on the GPU, features as large as the host
        allows. A distributed sampler then gathers from there; its cache of
        hot remote rows (``cache_rows``) lives on the GPU."""
        device = torch.device(device)
        if pin_features and device.type != 'cuda':
            raise ValueError(f"Partition.to: 'pin_features' keeps the node "
                             f"features in pinned host memory for a GPU to "
                             f"read; it needs a CUDA device, got {device}")

        def feature(t: Tensor) -> Tensor:
            if not pin_features:
                return t.to(device)
            return t if t.device.type == 'cpu' and t.is_pinned() else \
                t.cpu().pin_memory()

        def move(d):
            return {k: v.to(device) for k, v in d.items()}
        return Partition(
            self.part_id, self.num_parts, self.node_types, self.edge_types,
            move(self.nodes),
            {t: {name: feature(v) for name, v in f.items()}
             for t, f in self.node_feats.items()},
            {t: c.to(device) for t, c in self.csc.items()},
            move(self.node_map),
            None if self.edge_map is None else move(self.edge_map),
            move(self.node_time))

    def nbytes(self) -> Dict[str, int]:
        r"""Bytes held, by kind: ``node_map``, ``edge_map``, ``nodes``,
        ``csc``, ``node_feats``, ``edge_attr``, ``edge_time``,
        ``node_time``."""
        size = lambda t: t.numel() * t.element_size()  # noqa: E731
        out = dict(
            node_map=sum(size(t) for t in self.node_map.values()),
            edge_map=sum(size(t) for t in (self.edge_map or {}).values()),
            nodes=sum(size(t) for t in self.nodes.values()),
            csc=sum(size(c.colptr) + size(c.row) + size(c.edge_id)
                    for c in self.csc.values()),
            node_feats=sum(size(t) for f in self.node_feats.values()
                           for t in f.values()),
            edge_attr=sum(size(c.edge_attr) for c in self.csc.values()
                          if c.edge_attr is not None),
            edge_time=sum(size(c.edge_time) for c in self.csc.values()
                          if c.edge_time is not None),
            node_time=sum(size(t) for t in self.node_time.values()))
        return out


# ---------------------------------------------------------------- reading

class _ContainersOnly:
    r"""A ``pickle_module`` for ``torch.load``: its unpickler resolves
    torch's tensor and storage rebuilders and plain containers
    (``defaultdict`` among them), and refuses every other global."""
    class Unpickler(pickle.Unpickler):
        # (protocol 2 names builtins '__builtin__')
        _containers = {('collections', 'defaultdict'),
                       ('collections', 'OrderedDict')} | {
                           (module, name)
                           for module in ('builtins', '__builtin__')
                           for name in ('list', 'dict', 'tuple', 'set')}

        def find_class(self, module, name):
            if (module, name) in self._containers or (
                    module == 'torch._utils' and name.startswith('_rebuild')
            ) or (module == 'torch' and (name.endswith('Storage')
                                         or isinstance(getattr(torch, name,
                                                               None),
                                                       torch.dtype))):
                return super().find_class(module, name)
            raise pickle.UnpicklingError(
                f"global '{module}.{name}' is not allowed in a partition file")

    load = staticmethod(pickle.load)
    __name__ = 'pyg_fusesample.partition_unpickler'


def _load(path: str, what: str):
    if not osp.isfile(path):
        raise ValueError(f"{path}: missing ({what})")
    try:
        try:
            return torch.load(path, map_location='cpu', weights_only=True)
        except pickle.UnpicklingError as e:
            # PyG's Partitioner saves edge_feats.pt as a defaultdict, which
            # torch's safe loader refuses once it holds items (PyG's own
            # from_partition then fails under torch >= 2.6, or unpickles in
            # full). Such a file is read by an unpickler that resolves
            # tensors, containers and nothing else, so it cannot run code.
            if 'defaultdict' not in str(e):
                raise
            return torch.load(path, map_location='cpu', weights_only=False,
                              pickle_module=_ContainersOnly)
    except Exception as e:  # truncated, foreign or not a torch file
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ''
        raise ValueError(f"{path}: cannot be read as a torch file "
                         f"({type(e).__name__}: {msg[:200]}); truncated?") \
            from e


def _field(obj, key, path: str, kind=Tensor):
    if not isinstance(obj, dict) or key not in obj:
        raise ValueError(f"{path}: field '{key}' is missing")
    value = obj[key]
    if kind is Tensor:
        if not isinstance(value, Tensor) or value.dim() != 1 \
                or value.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"{path}: '{key}' must be a 1-D int64 tensor, "
                             f"got {_describe(value)}")
        return value.long()
    if not isinstance(value, kind):
        names = '/'.join(k.__name__ for k in (
            kind if isinstance(kind, tuple) else (kind,)))
        raise ValueError(f"{path}: '{key}' must be a {names}, got "
                         f"{_describe(value)}")
    return value


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f'a {value.dtype} tensor of shape {list(value.shape)}'
    return type(value).__name__


def read_meta(root: str) -> Dict[str, Any]:
    r"""``META.json`` of the partition at :obj:`root`, checked: its fields
    and types, one ``part_<i>`` folder per part and no more, and (for a
    heterogeneous graph) one map file per type in ``node_map/`` and
    ``edge_map/`` and no other. Edge types come back as tuples."""
    path = osp.join(root, 'META.json')
    if not osp.isfile(path):
        raise ValueError(f"{path}: missing; is {root!r} the output of PyG's "
                         f"Partitioner?")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: must hold a JSON object")
    for key in ('num_parts', 'is_hetero', 'node_types', 'edge_types'):
        if key not in meta:
            raise ValueError(f"{path}: field '{key}' is missing")
    num_parts, hetero = meta['num_parts'], meta['is_hetero']
    if isinstance(num_parts, bool) or not isinstance(num_parts, int) \
            or num_parts < 1:
        raise ValueError(f"{path}: 'num_parts' must be an integer >= 1, got "
                         f"{num_parts!r}")
    if not isinstance(hetero, bool):
        raise ValueError(f"{path}: 'is_hetero' must be true or false, got "
                         f"{hetero!r}")
    if hetero:
        node_types, edge_types = meta['node_types'], meta['edge_types']
        if not isinstance(node_types, list) or not node_types or not all(
                isinstance(t, str) for t in node_types) \
                or len(set(node_types)) != len(node_types):
            raise ValueError(f"{path}: 'node_types' must be a list of "
                             f"distinct names, got {node_types!r}")
        if not isinstance(edge_types, list) or not all(
                isinstance(t, list) and len(t) == 3
                and all(isinstance(s, str) for s in t) for t in edge_types):
            raise ValueError(f"{path}: 'edge_types' must be a list of "
                             f"[src, rel, dst] triples, got {edge_types!r}")
        edge_types = [tuple(t) for t in edge_types]
        for t in edge_types:
            if t[0] not in node_types or t[2] not in node_types:
                raise ValueError(f"{path}: edge type {list(t)} in "
                                 f"'edge_types' joins a node type not in "
                                 f"'node_types' {node_types}")
        if len(set(edge_types)) != len(edge_types):
            raise ValueError(f"{path}: 'edge_types' lists a type twice")
        offset = meta.get('node_offset')
        if offset is not None and (not isinstance(offset, list)
                                   or len(offset) != len(node_types)):
            raise ValueError(f"{path}: 'node_offset' must list one offset "
                             f"per node type, got {offset!r}")
        meta = dict(meta, edge_types=edge_types)
        for folder, types in (('node_map', node_types),
                              ('edge_map', edge_types)):
            names = {f'{_type_str(t)}.pt' for t in types}
            where = osp.join(root, folder)
            found = set(os.listdir(where)) if osp.isdir(where) else set()
            extra, missing = sorted(found - names), sorted(names - found)
            if extra:
                raise ValueError(
                    f"{osp.join(where, extra[0])}: not a type of META.json's "
                    f"'{folder[:4]}_types' {[_type_str(t) for t in types]}")
            if missing:
                raise ValueError(f"{osp.join(where, missing[0])}: missing "
                                 f"(a type in META.json's "
                                 f"'{folder[:4]}_types')")
    elif meta['node_types'] is not None or meta['edge_types'] is not None:
        raise ValueError(f"{path}: 'is_hetero' is false but 'node_types' or "
                         f"'edge_types' is set")
    for i in range(num_parts):
        if not osp.isdir(osp.join(root, f'part_{i}')):
            raise ValueError(f"{path}: 'num_parts' is {num_parts} but "
                             f"{osp.join(root, f'part_{i}')} is missing")
    if osp.exists(osp.join(root, f'part_{num_parts}')):
        raise ValueError(f"{path}: 'num_parts' is {num_parts} but "
                         f"{osp.join(root, f'part_{num_parts}')} exists")
    return meta


def _load_map(path: str, num_parts: int, what: str) -> Tensor:
    value = _load(path, what)
    if not isinstance(value, Tensor) or value.dim() != 1 \
            or value.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{path}: must be a 1-D int64 tensor ({what}), got "
                         f"{_describe(value)}")
    check_ids_in_range(value, num_parts, "part ids (META.json's num_parts)",
                       path)
    return value.long()


def _check_rows(value, count: int, where: str, name: str):
    if not isinstance(value, Tensor) or value.dim() == 0 \
            or value.size(0) != count:
        raise ValueError(f"{where}: feats['{name}'] must have one row per id "
                         f"in 'global_id' ({count}), got {_describe(value)}")


def _owned(the_map: Tensor, part_id: int) -> Tensor:
    return (the_map == part_id).nonzero().view(-1)


def _same_set(ids: Tensor, expected: Tensor, path: str, key: str,
              what: str) -> Tensor:
    r"""Checks that :obj:`ids` lists :obj:`expected` (ascending) once each;
    returns the permutation that sorts :obj:`ids`."""
    if ids.numel() != expected.numel():
        raise ValueError(f"{path}: '{key}' holds {ids.numel()} ids but the "
                         f"{what} assigns {expected.numel()} to this part")
    ordered, perm = torch.sort(ids, stable=True)
    if not torch.equal(ordered, expected):
        bad = (ordered != expected).nonzero()[0, 0]
        raise ValueError(f"{path}: '{key}' does not list the ids the {what} "
                         f"assigns to this part once each (first "
                         f"difference: {int(ordered[bad])} where "
                         f"{int(expected[bad])} was expected)")
    return perm


def read_partition(root: str, part_id: int, labels=None,
                   with_edge_map: bool = True, device=None,
                   pin_features: bool = False) -> Partition:
    r"""Reads part :obj:`part_id` of the partition at :obj:`root` (PyG's
    ``Partitioner`` format; see the module's docstring), checked against
    ``META.json`` and the node and edge maps: a file missing or unreadable,
    a field missing, a tensor whose length disagrees with the maps, an id
    out of range, a node or edge listed by the wrong part raise
    ``ValueError`` naming the file and the field.

    Args:
        root (str): the folder holding ``META.json``.
        part_id (int): the part to read, in ``[0, num_parts)``.
        labels: whole-graph labels where ``node_feats.pt`` holds none (PyG's
            example saves ``label.pt``): a tensor or a path to one, or for a
            heterogeneous graph a dict node type -> tensor or path. Only the
            owned rows are kept.
        with_edge_map (bool): keep the edge maps (``8 E`` bytes) after
            checking the part's edges against them.
        device (torch.device, optional): where the part goes once read and
            checked (:meth:`Partition.to`; default: the CPU), e.g. this
            rank's GPU (``torch.device('cuda', local_rank)``) for sampling
            over NCCL. The files are read on the CPU first.
        pin_features (bool): with a CUDA :obj:`device`, keep the node
            features in pinned host memory (:meth:`Partition.to`).
    """
    meta = read_meta(root)
    num_parts = meta['num_parts']
    if isinstance(part_id, bool) or not isinstance(part_id, numbers.Integral) \
            or not 0 <= part_id < num_parts:
        raise ValueError(f"read_partition: 'part_id' must be in [0, "
                         f"{num_parts}) (META.json's num_parts), got "
                         f"{part_id!r}")
    part_id = int(part_id)
    hetero = meta['is_hetero']
    node_types = meta['node_types'] if hetero else [None]
    edge_types = meta['edge_types'] if hetero else [None]
    part_dir = osp.join(root, f'part_{part_id}')

    def map_name(kind, key):
        return (f'{kind}_map/{_type_str(key)}.pt' if hetero
                else f'{kind}_map.pt')

    def map_path(kind, key):
        return osp.join(root, map_name(kind, key))

    node_map = {t: _load_map(map_path('node', t), num_parts,
                             'node -> partition map') for t in node_types}
    edge_map = {t: _load_map(map_path('edge', t), num_parts,
                             'edge -> partition map') for t in edge_types}
    num_nodes = {t: m.numel() for t, m in node_map.items()}
    node_offset, edge_offset, acc = {}, {}, 0
    for t in node_types:
        node_offset[t], acc = acc, acc + num_nodes[t]
    if hetero and meta.get('node_offset') is not None \
            and list(meta['node_offset']) != [node_offset[t]
                                              for t in node_types]:
        raise ValueError(
            f"{osp.join(root, 'META.json')}: 'node_offset' is "
            f"{meta['node_offset']} but the node maps hold "
            f"{[num_nodes[t] for t in node_types]} nodes per type")
    acc = 0
    for t in edge_types:
        edge_offset[t], acc = acc, acc + edge_map[t].numel()
    nodes = {t: _owned(node_map[t], part_id) for t in node_types}

    # graph.pt: the owned nodes' in-edges.
    path = osp.join(part_dir, 'graph.pt')
    graph = _load(path, "the part's edges")
    if hetero:
        if not isinstance(graph, dict) or set(graph) != set(edge_types):
            got = sorted(map(str, graph)) if isinstance(graph, dict) else \
                _describe(graph)
            raise ValueError(f"{path}: its edge types {got} are not "
                             f"META.json's 'edge_types' "
                             f"{[list(t) for t in edge_types]}")
    else:
        graph = {None: graph}
    csc, file_eids, file_perm = {}, {}, {}
    for t in edge_types:
        where = f'{path} [{t}]' if hetero else path
        src_t, dst_t = (t[0], t[2]) if hetero else (None, None)
        entry = graph[t]
        row, col = _field(entry, 'row', where), _field(entry, 'col', where)
        eid = _field(entry, 'edge_id', where)
        size = _field(entry, 'size', where, (tuple, list))
        if row.numel() != col.numel() or eid.numel() != col.numel():
            raise ValueError(f"{where}: 'row', 'col' and 'edge_id' differ in "
                             f"length ({row.numel()}, {col.numel()}, "
                             f"{eid.numel()})")
        expected = (num_nodes[src_t], num_nodes[dst_t])
        if tuple(size) != expected:
            raise ValueError(f"{where}: 'size' is {tuple(size)} but the node "
                             f"maps hold {expected} nodes")
        check_ids_in_range(row, expected[0], 'row', where,
                           bound_name=f'len({map_name("node", src_t)})')
        check_ids_in_range(col, expected[1], 'col', where,
                           bound_name=f'len({map_name("node", dst_t)})')
        eid = eid - edge_offset[t]  # hetero files number edges homogeneously
        check_ids_in_range(eid, edge_map[t].numel(),
                           'edge_id' + (f' - {edge_offset[t]}' if hetero
                                        else ''), where,
                           bound_name=f'len({map_name("edge", t)})')
        if col.numel() and not bool((node_map[dst_t][col] == part_id).all()):
            raise ValueError(f"{where}: 'col' holds nodes the node map "
                             f"assigns to other parts (an edge belongs to "
                             f"its target's part)")
        _same_set(eid, _owned(edge_map[t], part_id), where, 'edge_id',
                  'edge map')
        # CSC over the owned nodes: by target, then edge id.
        local = torch.searchsorted(nodes[dst_t], col)
        perm = torch.sort(eid, stable=True).indices
        perm = perm[torch.sort(local[perm], stable=True).indices]
        colptr = torch.searchsorted(
            local[perm], torch.arange(nodes[dst_t].numel() + 1))
        csc[t] = PartCSC(colptr, row[perm], eid[perm], expected)
        file_eids[t] = eid
        file_perm[t] = perm

    # node_feats.pt: the owned nodes' features.
    path = osp.join(part_dir, 'node_feats.pt')
    nfeat = _load(path, "the part's node features")
    if hetero:
        if not isinstance(nfeat, dict) or set(nfeat) != set(node_types):
            got = sorted(nfeat) if isinstance(nfeat, dict) else \
                _describe(nfeat)
            raise ValueError(f"{path}: its node types {got} are not "
                             f"META.json's 'node_types' {node_types}")
    else:
        nfeat = {None: nfeat}
    node_feats, node_time = {}, {}
    for t in node_types:
        where = f'{path} [{t}]' if hetero else path
        entry = nfeat[t]
        if entry.get('time') is not None:  # (every node's of the type)
            value = _field(entry, 'time', where)
            if value.dim() != 1 or value.numel() != num_nodes[t]:
                raise ValueError(f"{where}: 'time' must hold every node's "
                                 f"time ({num_nodes[t]}), got "
                                 f"{_describe(value)}")
            node_time[t] = value.to(torch.long)
        gid = _field(entry, 'global_id', where) - node_offset[t]
        if hetero and 'id' in entry and not torch.equal(
                _field(entry, 'id', where), gid):
            raise ValueError(f"{where}: 'id' is not 'global_id' minus the "
                             f"type's node offset {node_offset[t]}")
        perm = _same_set(gid, nodes[t], where, 'global_id', 'node map')
        feats = _field(entry, 'feats', where, dict)
        node_feats[t] = {}
        for name, value in feats.items():
            if value is None:
                continue
            _check_rows(value, gid.numel(), where, name)
            node_feats[t][name] = value[perm]

    # labels given apart from the partition (PyG's example's label.pt)
    if labels is not None:
        given = labels if isinstance(labels, dict) else {node_types[0]: labels}
        if hetero != isinstance(labels, dict):
            raise ValueError("read_partition: 'labels' must be a dict node "
                             "type -> labels for a heterogeneous partition "
                             "and a tensor (or path) otherwise")
        for t, value in given.items():
            if t not in num_nodes:
                raise ValueError(f"read_partition: 'labels' names the node "
                                 f"type {t!r}, not one of {node_types}")
            name = value if isinstance(value, str) else "'labels'"
            if isinstance(value, str):
                value = _load(value, 'labels')
            if not isinstance(value, Tensor) or value.dim() == 0 \
                    or value.size(0) != num_nodes[t]:
                raise ValueError(f"{name}: labels must have one row per node "
                                 f"({num_nodes[t]}), got {_describe(value)}")
            node_feats[t]['y'] = value[nodes[t]]

    # edge_feats.pt: optional (PyG's reader skips it when absent).
    path = osp.join(part_dir, 'edge_feats.pt')
    if osp.exists(path):
        efeat = _load(path, "the part's edge features")
        if not isinstance(efeat, dict):
            raise ValueError(f"{path}: must hold a dict, got "
                             f"{_describe(efeat)}")
        if not hetero:
            efeat = {None: efeat} if efeat else {}
        for t, entry in efeat.items():
            where = f'{path} [{t}]' if hetero else path
            if t not in csc:
                raise ValueError(f"{where}: not one of META.json's "
                                 f"'edge_types'")
            if 'edge_time' in entry:  # (in graph.pt's edge order)
                edge_time = _field(entry, 'edge_time', where)
                _check_rows(edge_time, file_perm[t].numel(), where,
                            'edge_time')
                csc[t].edge_time = edge_time.to(torch.long)[file_perm[t]]
            if 'feats' not in entry:
                continue
            gid = _field(entry, 'global_id', where)
            perm = _same_set(gid, _owned(edge_map[t], part_id), where,
                             'global_id', 'edge map')
            attr = _field(entry, 'feats', where, dict).get('edge_attr')
            if attr is None:
                continue
            _check_rows(attr, gid.numel(), where, 'edge_attr')
            # rows by edge id, then in CSC order
            by_id = attr[perm]
            pos = torch.searchsorted(gid[perm], csc[t].edge_id)
            csc[t].edge_attr = by_id[pos]

    part = Partition(part_id, num_parts,
                     meta['node_types'] if hetero else None,
                     meta['edge_types'] if hetero else None, nodes,
                     node_feats, csc, node_map,
                     edge_map if with_edge_map else None, node_time)
    if device is None and not pin_features:
        return part
    return part.to('cpu' if device is None else device, pin_features)


# ---------------------------------------------------------------- writing

def assign_nodes(num_nodes: int, num_parts: int,
                 rule: str = 'range') -> Tensor:
    r"""A node -> partition map by a rule that needs no edges:

    * ``'range'``: contiguous id ranges of (nearly) equal size, node ``i``
      to part ``i * num_parts // num_nodes``; the right rule where ids
      already follow locality (a generator's communities, a crawl order);
    * ``'hash'``: a fixed multiplicative hash of the id (Knuth's
      ``2654435761``, bits 16-31) modulo ``num_parts``: balanced in
      expectation whatever the id order, with no locality.

    METIS (PyG's choice) is not offered: it needs the whole adjacency in
    one process, which is what writing in chunks avoids, and neither
    ``pyg-lib`` nor a METIS-enabled ``torch_sparse`` is installed here. A
    METIS (or any) assignment computed elsewhere can be passed to
    :func:`write_partitions` as a tensor."""
    ids = torch.arange(num_nodes, dtype=torch.int64)
    if rule == 'range':
        return ids * num_parts // max(num_nodes, 1)
    if rule == 'hash':
        return (((ids * 2654435761) & 0xFFFFFFFF) >> 16) % num_parts
    raise ValueError(f"assign_nodes: 'rule' must be 'range' or 'hash', got "
                     f"{rule!r}")


def _rows(source: Rows, start: int, end: int, name: str) -> Tensor:
    value = source(start, end) if callable(source) else source[start:end]
    value = torch.as_tensor(value)
    if value.dim() == 0 or value.size(0) != end - start:
        raise ValueError(f"write_partitions: {name} gave "
                         f"{_describe(value)} for ids [{start}, {end})")
    return value


class _Spool:
    r"""Pieces of per-partition data on disk, read back one partition at a
    time (so only one partition's buffers are ever in memory)."""
    def __init__(self, folder: str):
        self.folder = folder
        self.pieces: Dict[Tuple, List[str]] = collections.defaultdict(list)
        self.count = 0
        os.makedirs(folder)

    def put(self, key: Tuple, piece: Dict[str, Tensor]):
        path = osp.join(self.folder, f'{self.count}.pt')
        self.count += 1
        torch.save(piece, path)
        self.pieces[key].append(path)

    def take(self, key: Tuple) -> List[Dict[str, Tensor]]:
        out = []
        for path in self.pieces.pop(key, []):
            out.append(torch.load(path, weights_only=True))
            os.unlink(path)
        return out


def _cat(pieces: List[Dict[str, Tensor]], name: str, empty: Tensor) -> Tensor:
    # `empty` (zero rows) gives a part without pieces its dtype and width.
    return torch.cat([empty] + [p[name] for p in pieces])


def _split_by_part(owner: Tensor, num_parts: int):
    r"""(part, positions) for every part present, positions ascending."""
    order = torch.sort(owner, stable=True)
    counts = torch.bincount(owner, minlength=num_parts).tolist()
    start = 0
    for p, c in enumerate(counts):
        if c:
            yield p, order.indices[start:start + c]
        start += c


def write_partitions(
    root: str,
    num_nodes: Union[int, Dict[str, int]],
    edges: Union[Iterable[Sequence[Tensor]],
                 Dict[EdgeType, Iterable[Sequence[Tensor]]]],
    num_parts: int,
    assignment: Union[str, Tensor, Dict[str, Tensor]] = 'range',
    node_feats: Union[None, Rows, Dict[str, Rows]] = None,
    labels: Union[None, Rows, Dict[str, Rows]] = None,
    node_chunk: int = 1 << 20,
    node_time: Union[None, Rows, Dict[str, Rows]] = None,
) -> Dict[str, Any]:
    r"""Writes a graph in PyG's ``Partitioner`` format (loadable by
    ``LocalGraphStore.from_partition`` / ``LocalFeatureStore.from_partition``
    and by :func:`read_partition`) from edges given in chunks; returns the
    META dict written.

    Edge ids are positions in the stream of chunks (per edge type): the
    ``k``-th edge given has id ``k``. Each edge goes to the part of its
    target. Memory: the node maps (``8 N`` bytes), one edge chunk and its
    split (about ``40`` bytes an edge plus its attributes), then, one part
    at a time, that part's edges (``24`` bytes each plus attributes, and
    their sort) and nodes' features, and last the edge maps (``8 E``). The
    chunks' pieces wait in ``root/.spool`` meanwhile (about the size of the
    output on disk) and are removed at the end. ``META.json`` is written
    last, so a run cut short leaves a folder :func:`read_partition` refuses.

    Args:
        root (str): output folder (created; must not hold a partition).
        num_nodes: the number of nodes, or for a heterogeneous graph a dict
            node type -> number (its order is META's ``node_types``).
        edges: an iterable of chunks ``(row, col)`` or ``(row, col,
            edge_attr)`` (sources, targets: 1-D int tensors of equal
            length); for a heterogeneous graph a dict edge type -> such an
            iterable (its order is META's ``edge_types``; an empty iterable
            is an edge type without edges). Read once.
        num_parts (int): number of parts (>= 1).
        assignment: ``'range'`` or ``'hash'`` (:func:`assign_nodes`, per
            node type), or a node -> part tensor (a dict of them per type).
        node_feats, labels: rows by id range: a tensor or array (sliced
            ``[start:end]``) or a callable ``f(start, end)``; per type for a
            heterogeneous graph (types left out have none). Stored as
            ``feats['x']`` and ``feats['y']``.
        node_chunk (int): nodes per feature read.
        node_time: node-level times (int64, rows by id range as the
            features; per type for a heterogeneous graph), stored as PyG's
            ``Partitioner`` stores them: every node's (of the type) in every
            part's ``node_feats.pt`` as ``'time'`` (``8 N`` bytes a part).
    """
    hetero = isinstance(num_nodes, dict)
    if isinstance(num_parts, bool) or not isinstance(num_parts, int) \
            or num_parts < 1:
        raise ValueError(f"write_partitions: 'num_parts' must be an integer "
                         f">= 1, got {num_parts!r}")
    if hetero != isinstance(edges, dict):
        raise ValueError("write_partitions: 'num_nodes' and 'edges' must be "
                         "an int and an iterable (homogeneous) or two dicts "
                         "by type (heterogeneous)")
    sizes = dict(num_nodes) if hetero else {None: num_nodes}
    edge_iters = {tuple(t): v for t, v in edges.items()} if hetero \
        else {None: edges}
    for t, n in sizes.items():
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) \
                or n < 0:
            raise ValueError(f"write_partitions: 'num_nodes' of {t!r} must be "
                             f"an integer >= 0, got {n!r}")
    for t in edge_iters:
        if hetero and (len(t) != 3 or t[0] not in sizes
                       or t[2] not in sizes):
            raise ValueError(f"write_partitions: edge type {t!r} joins a "
                             f"node type not in 'num_nodes'")
    if osp.exists(osp.join(root, 'META.json')) or osp.exists(
            osp.join(root, 'part_0')):
        raise ValueError(f"write_partitions: {root!r} already holds a "
                         f"partition")

    def per_type(value, name):
        if value is None:
            return {}
        if hetero != isinstance(value, dict):
            raise ValueError(f"write_partitions: '{name}' must be a dict by "
                             f"node type exactly when the graph is "
                             f"heterogeneous")
        return dict(value) if hetero else {None: value}

    node_map = {}
    rules = per_type(assignment, 'assignment') if not isinstance(
        assignment, str) else {t: assignment for t in sizes}
    for t, n in sizes.items():
        rule = rules.get(t)
        if isinstance(rule, str):
            node_map[t] = assign_nodes(n, num_parts, rule)
            continue
        if not isinstance(rule, Tensor) or rule.dim() != 1 \
                or rule.numel() != n or rule.is_floating_point():
            raise ValueError(f"write_partitions: the assignment of {t!r} "
                             f"must be 'range', 'hash' or an integer tensor "
                             f"of {n} entries, got {_describe(rule)}")
        check_ids_in_range(rule, num_parts, 'assignment', 'write_partitions',
                           bound_name='num_parts')
        node_map[t] = rule.long().cpu()
    feats = {'x': per_type(node_feats, 'node_feats'),
             'y': per_type(labels, 'labels')}
    times = {}
    for t, value in per_type(node_time, 'node_time').items():
        if t not in sizes:
            raise ValueError(f"write_partitions: 'node_time' names the node "
                             f"type {t!r}, not one of {list(sizes)}")
        times[t] = _rows(value, 0, sizes[t], 'node_time').to(
            torch.long).reshape(-1)

    os.makedirs(root, exist_ok=True)
    spool = _Spool(osp.join(root, '.spool'))
    try:
        num_edges, no_attr = _spool_edges(spool, edge_iters, sizes,
                                          node_map, num_parts)
        no_feats = _spool_nodes(spool, sizes, node_map, feats, num_parts,
                                node_chunk)
        node_offset, edge_offset, acc = {}, {}, 0
        for t in sizes:
            node_offset[t], acc = acc, acc + sizes[t]
        acc = 0
        for t in edge_iters:
            edge_offset[t], acc = acc, acc + num_edges[t]
        for p in range(num_parts):
            _write_part(osp.join(root, f'part_{p}'), p, spool, sizes,
                        edge_iters, node_offset, edge_offset, no_attr,
                        no_feats, hetero, times)
        # the maps last: the edge maps are whole-graph tensors
        if hetero:
            os.makedirs(osp.join(root, 'node_map'), exist_ok=True)
            os.makedirs(osp.join(root, 'edge_map'), exist_ok=True)
        for t, m in node_map.items():
            torch.save(m, osp.join(root, 'node_map', f'{t}.pt') if hetero
                       else osp.join(root, 'node_map.pt'))
        for t in edge_iters:
            pieces = spool.take(('edge_map', t))
            m = _cat(pieces, 'part', torch.empty(0, dtype=torch.int64))
            torch.save(m, osp.join(root, 'edge_map', f'{_type_str(t)}.pt')
                       if hetero else osp.join(root, 'edge_map.pt'))
    finally:
        shutil.rmtree(spool.folder, ignore_errors=True)

    meta = {
        'num_parts': num_parts,
        'node_types': list(sizes) if hetero else None,
        'edge_types': [list(t) for t in edge_iters] if hetero else None,
        'node_offset': list(node_offset.values()) if hetero else None,
        'is_hetero': hetero,
        'is_sorted': True,  # by target within each part, as PyG writes
    }
    with replaced_atomically(osp.join(root, 'META.json')) as tmp:
        with open(tmp, 'w') as f:
            json.dump(meta, f)
    return meta


def _spool_edges(spool: _Spool, edge_iters, sizes, node_map, num_parts):
    r"""Splits the chunks by part into the spool; returns the number of
    edges and a zero-row edge_attr (``None``: no attributes) per type."""
    num_edges, no_attr = {}, {}
    for t, chunks in edge_iters.items():
        src_t, dst_t = (t[0], t[2]) if t is not None else (None, None)
        owner_name = f'edge chunk of {t!r}' if t is not None else 'edge chunk'
        offset, attr_shape, empty = 0, None, None
        for k, chunk in enumerate(chunks):
            if not isinstance(chunk, (tuple, list)) \
                    or len(chunk) not in (2, 3):
                raise ValueError(f"write_partitions: {owner_name} {k} must "
                                 f"be (row, col) or (row, col, edge_attr)")
            row, col = (torch.as_tensor(c) for c in chunk[:2])
            attr = torch.as_tensor(chunk[2]) if len(chunk) == 3 else None
            if row.dim() != 1 or row.shape != col.shape \
                    or row.is_floating_point() or col.is_floating_point():
                raise ValueError(f"write_partitions: {owner_name} {k}: row "
                                 f"and col must be 1-D integer tensors of "
                                 f"equal length, got {_describe(row)} and "
                                 f"{_describe(col)}")
            where = f'write_partitions: {owner_name} {k}'
            check_ids_in_range(row, sizes[src_t], 'row', where,
                               bound_name='num_nodes')
            check_ids_in_range(col, sizes[dst_t], 'col', where,
                               bound_name='num_nodes')
            shape = None if attr is None else tuple(attr.shape[1:])
            if attr is not None and (attr.dim() == 0
                                     or attr.size(0) != row.numel()):
                raise ValueError(f"{where}: edge_attr must have one row per "
                                 f"edge, got {_describe(attr)}")
            if k > 0 and shape != attr_shape:
                raise ValueError(f"{where}: edge_attr rows of shape {shape}, "
                                 f"earlier chunks {attr_shape}")
            attr_shape = shape
            if attr is not None and empty is None:
                empty = attr[:0].clone()
            row, col = row.long(), col.long()
            eid = torch.arange(offset, offset + row.numel())
            owner = node_map[dst_t][col]
            spool.put(('edge_map', t), {'part': owner})
            for p, pos in _split_by_part(owner, num_parts):
                piece = {'row': row[pos], 'col': col[pos], 'eid': eid[pos]}
                if attr is not None:
                    piece['attr'] = attr[pos]
                spool.put(('edges', t, p), piece)
            offset += row.numel()
        num_edges[t], no_attr[t] = offset, empty
    return num_edges, no_attr


def _spool_nodes(spool: _Spool, sizes, node_map, feats, num_parts,
                 node_chunk):
    r"""Splits the node features by part into the spool; returns zero-row
    features per type (``{name: tensor}``)."""
    no_feats = {t: {} for t in sizes}
    for t, n in sizes.items():
        for start in range(0, n, node_chunk):
            end = min(start + node_chunk, n)
            rows = {name: _rows(src[t], start, end,
                                f"{name}'s source" + (f' of {t!r}' if t
                                                      else ''))
                    for name, src in feats.items() if t in src}
            for name, v in rows.items():
                no_feats[t].setdefault(name, v[:0].clone())
                if v.shape[1:] != no_feats[t][name].shape[1:]:
                    raise ValueError(
                        f"write_partitions: {name} rows [{start}, {end})"
                        f" of {t!r} have shape {list(v.shape[1:])}, earlier"
                        f" ones {list(no_feats[t][name].shape[1:])}")
            owner = node_map[t][start:end]
            for p, pos in _split_by_part(owner, num_parts):
                piece = {'ids': pos + start}
                piece.update({name: v[pos] for name, v in rows.items()})
                spool.put(('nodes', t, p), piece)
    return no_feats


def _write_part(path, p, spool, sizes, edge_iters, node_offset, edge_offset,
                no_attr, no_feats, hetero, times):
    os.makedirs(path, exist_ok=True)
    empty = torch.empty(0, dtype=torch.int64)
    graph, efeat = {}, {}
    for t in edge_iters:
        pieces = spool.take(('edges', t, p))
        row, col = _cat(pieces, 'row', empty), _cat(pieces, 'col', empty)
        eid = _cat(pieces, 'eid', empty)  # ascending: chunks in order
        perm = torch.sort(col, stable=True).indices
        row, col, eid = row[perm], col[perm], eid[perm]
        src_t, dst_t = (t[0], t[2]) if hetero else (None, None)
        graph[t] = {'edge_id': eid + edge_offset[t], 'row': row, 'col': col,
                    'size': (sizes[src_t], sizes[dst_t])}
        if no_attr[t] is not None:
            attr = _cat(pieces, 'attr', no_attr[t])[perm]
            efeat[t] = {'global_id': eid, 'feats': {'edge_attr': attr}}
        del pieces
    torch.save(graph if hetero else graph[None], osp.join(path, 'graph.pt'))
    torch.save(efeat if hetero else efeat.get(None, {}),
               osp.join(path, 'edge_feats.pt'))
    del graph, efeat

    nfeat = {}
    for t in sizes:
        pieces = spool.take(('nodes', t, p))
        ids = _cat(pieces, 'ids', empty)
        entry = {'global_id': ids + node_offset[t]}
        if hetero:
            entry['id'] = ids
        entry['feats'] = {name: _cat(pieces, name, empty_rows)
                          for name, empty_rows in no_feats[t].items()}
        if t in times:
            entry['time'] = times[t]
        nfeat[t] = entry
    torch.save(nfeat if hetero else nfeat[None],
               osp.join(path, 'node_feats.pt'))
