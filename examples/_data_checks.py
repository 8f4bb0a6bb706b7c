"""The examples' data files, checked where they are read.

Every id, size and index that the loaders and kernels will later read is
checked once, when the graph is loaded: a truncated, damaged or
inconsistent file stops the script with :class:`MalformedData`, whose
message names the file (or the reader and folder) and what is wrong, rather
than a crash, an ``IndexError`` deep inside PyG, or a silently wrong graph.

* :func:`read_table` reads one of OGB's gzipped CSV tables;
  :func:`check_rows` and :func:`check_ids` check what it gave;
* :func:`check_graph` checks a whole ``Data`` / ``HeteroData`` made by a
  reader that is not ours (``ogb``'s ``PygNodePropPredDataset``, PyG's
  ``Reddit``, a ``torch.load``-ed file);
* :func:`load_torch_file` is ``torch.load``, :func:`read_planetoid` PyG's
  ``Planetoid``, with the same kind of error.

The checks are vectorised (one ``aminmax`` per id array); finding the first
bad row only happens on the way to an error.
"""
import os
import warnings
import zlib
from typing import Optional, Union

import numpy as np
import torch
from torch import Tensor

# What reading a damaged gzipped CSV table raises: a truncated stream
# (EOFError), a damaged one (zlib.error, gzip.BadGzipFile is an OSError),
# rows of different lengths or text that is not a number (ValueError, also
# pandas' ParserError / EmptyDataError and UnicodeDecodeError).
TABLE_ERRORS = (OSError, EOFError, ValueError, zlib.error)


class MalformedData(ValueError):
    """A data set's file is present but truncated, unreadable or
    inconsistent with the others (the message names it and what is
    wrong)."""


def _damaged(path: str, e: BaseException, kind: str) -> MalformedData:
    return MalformedData(
        f"'{path}' cannot be read as a gzipped CSV table of {kind} "
        f"({type(e).__name__}: {e}): the file is truncated, damaged or "
        f"holds other than {kind}; copy it (or the data set) again")


def read_table(path: str, dtype, columns: Optional[int] = None
               ) -> np.ndarray:
    """OGB's raw table at :obj:`path` (gzipped CSV, no header, one row per
    item) as a 2-D array of :obj:`dtype`; with :obj:`columns`, exactly that
    many columns. An integer table must hold integers: a NaN (pandas reads
    an empty field as one) is refused, not cast to a garbage id."""
    integer = np.issubdtype(dtype, np.integer)
    kind = 'integers' if integer else 'numbers'
    try:
        try:
            import pandas as pd
        except ImportError:
            with warnings.catch_warnings():  # an empty file: said below
                warnings.filterwarnings('ignore', 'loadtxt: input contained')
                table = np.loadtxt(path, delimiter=',', ndmin=2,
                                   dtype=dtype)
        else:
            table = pd.read_csv(path, compression='gzip',
                                header=None).values
    except TABLE_ERRORS as e:
        raise _damaged(path, e, kind) from e
    if columns is not None and table.shape[1] != columns:
        raise MalformedData(f"'{path}' has {table.shape[1]} column(s) per "
                            f"row, expected {columns}")
    if integer and table.dtype.kind not in 'iu':
        if table.dtype.kind != 'f':
            raise MalformedData(f"'{path}' holds text where integers are "
                                f"expected")
        bad = ~np.isfinite(table) | (table != np.round(table))
        if bad.any():
            row = int(np.flatnonzero(bad.any(axis=1))[0])
            value = float(table[bad][0])
            raise MalformedData(f"'{path}' holds {value} at row {row} where "
                                f"integers are expected")
    try:
        return table.astype(dtype, copy=False)
    except ValueError as e:  # e.g. text in a float table
        raise _damaged(path, e, kind) from e


def read_count(path: str) -> int:
    """The one non-negative count in a ``num-*-list.csv.gz`` table (a
    node-property data set holds one graph)."""
    table = read_table(path, np.int64)
    if table.shape != (1, 1) or table[0, 0] < 0:
        raise MalformedData(f"'{path}' must hold one non-negative count "
                            f"(one graph), got an array of shape "
                            f"{table.shape}: {table.reshape(-1)[:4]}")
    return int(table[0, 0])


def _of(of: str) -> str:
    return f' ({of})' if of else ''


def check_rows(where: str, what: str, rows: int, expected: int,
               of: str = ''):
    """:obj:`what` in :obj:`where` has :obj:`rows` rows, one per node (or
    edge) of :obj:`expected`; :obj:`of` says where that number is from."""
    if rows != expected:
        raise MalformedData(f"{where}: {what} has {rows} row(s), expected "
                            f"{expected}{_of(of)}")


def check_ids(where: str, what: str, ids: Union[Tensor, np.ndarray],
              size: int, of: str = ''):
    """Every id in :obj:`ids` lies in ``[0, size)``; :obj:`of` says where
    :obj:`size` is from."""
    ids = torch.as_tensor(ids)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise MalformedData(f"{where}: {what} must be integer ids, got "
                            f"{ids.dtype}")
    if ids.numel() == 0:
        return
    lo, hi = torch.aminmax(ids)
    if int(lo) >= 0 and int(hi) < size:
        return
    bad = ((ids < 0) | (ids >= size)).view(-1).nonzero().view(-1)
    first = int(bad[0])
    raise MalformedData(
        f"{where}: {what} must lie in [0, {size}){_of(of)}, but "
        f"{bad.numel()} of "
        f"{ids.numel()} do not (e.g. {int(ids.reshape(-1)[first])} at "
        f"position {first})")


def check_labels(where: str, y: Union[Tensor, np.ndarray]):
    """Class labels are non-negative integers (the loss reads them as
    indices)."""
    y = torch.as_tensor(y)
    if y.is_floating_point():
        raise MalformedData(f"{where}: the labels must be integers, got "
                            f"{y.dtype}")
    negative = (y < 0).view(-1).nonzero().view(-1)
    if negative.numel():
        first = int(negative[0])
        raise MalformedData(
            f"{where}: the labels must be non-negative class indices, but "
            f"{negative.numel()} of {y.numel()} are negative (e.g. "
            f"{int(y.view(-1)[first])} at position {first})")


def _check_node_store(store, where: str, n: int):
    for key in ('x', 'y', 'year') + tuple(
            k for k in store.keys() if k.endswith('_mask')):
        if key not in store:
            continue
        value = store[key]
        if not isinstance(value, Tensor) or value.dim() == 0:
            raise MalformedData(f"{where}: '{key}' must be a tensor with one "
                                f"row per node, got {type(value).__name__}")
        check_rows(where, f"'{key}'", value.size(0), n)
        if key.endswith('_mask') and value.dtype != torch.bool:
            raise MalformedData(f"{where}: '{key}' must be a boolean mask, "
                                f"got {value.dtype}")


def _check_edge_index(where: str, edge_index, num_src: int, num_dst: int):
    if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 \
            or edge_index.size(0) != 2:
        shape = tuple(edge_index.shape) if isinstance(edge_index, Tensor) \
            else type(edge_index).__name__
        raise MalformedData(f"{where}: 'edge_index' must be a tensor of "
                            f"shape [2, num_edges], got {shape}")
    check_ids(where, "'edge_index' sources", edge_index[0], num_src)
    check_ids(where, "'edge_index' targets", edge_index[1], num_dst)


def check_graph(data, where: str):
    """Checks a graph made by another reader: node counts, ``edge_index``
    ids within them (per edge type on a ``HeteroData``), and ``x``, ``y``,
    ``year`` and ``*_mask`` with one row per node. :obj:`where` names the
    reader and its files in messages."""
    from torch_geometric.data import Data, HeteroData
    if not isinstance(data, (Data, HeteroData)):
        raise MalformedData(f"{where}: expected a Data or HeteroData, got "
                            f"{type(data).__name__}")
    stores = ([(t, data[t]) for t in data.node_types]
              if isinstance(data, HeteroData) else [(None, data)])
    sizes = {}
    for t, store in stores:
        at = where if t is None else f"{where}, node type '{t}'"
        n = store.num_nodes
        if not isinstance(n, int) or n < 0:
            raise MalformedData(f"{at}: no valid number of nodes ({n!r})")
        sizes[t] = n
        _check_node_store(store, at, n)
    if isinstance(data, HeteroData):
        for src, rel, dst in data.edge_types:
            _check_edge_index(f"{where}, edge type {(src, rel, dst)}",
                              data[src, rel, dst].edge_index, sizes[src],
                              sizes[dst])
    elif 'edge_index' in data:
        _check_edge_index(where, data.edge_index, sizes[None], sizes[None])


def _first_line(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def reader_failed(where: str, e: BaseException, files: str
                  ) -> MalformedData:
    """The error for another reader (ogb's, PyG's) that raised on files
    that are present: names the reader, its folder and :obj:`files`."""
    return MalformedData(
        f"{where} could not read the data set ({_first_line(e)}): {files} "
        f"(a processed/ folder keeps what was read before: delete it after "
        f"replacing the raw files)")


def npz_readable(path: str) -> bool:
    """Whether every array of the ``.npz`` file at :obj:`path` reads (for
    an error message only: it reads the whole file)."""
    try:
        with np.load(path) as arrays:
            for name in arrays.files:
                arrays[name]
        return True
    except Exception:  # BadZipFile, EOFError, ValueError, OSError, ...
        return False


def load_torch_file(path: str, what: str, weights_only: bool = True):
    """``torch.load(path)`` on the CPU; a file that cannot be read
    (truncated, not a torch file, holding classes ``weights_only``
    refuses) raises :class:`MalformedData` naming it and :obj:`what` it
    should hold."""
    try:
        return torch.load(path, map_location='cpu',
                          weights_only=weights_only)
    except Exception as e:  # RuntimeError, UnpicklingError, EOFError, ...
        raise MalformedData(
            f"'{path}' ({what}) cannot be read ({_first_line(e)}): the file "
            f"is truncated, damaged or not a torch.save file") from e


def read_planetoid(root: str, name: str):
    """PyG's ``Planetoid(root, name)``; raw files it cannot read (truncated
    or damaged pickles) raise :class:`MalformedData` naming their folder."""
    from torch_geometric.datasets import Planetoid
    try:
        return Planetoid(root, name)
    except Exception as e:  # UnpicklingError, EOFError, IndexError, ...
        raise MalformedData(
            f"Planetoid could not read the {name} files in "
            f"'{os.path.join(root, name, 'raw')}' ({_first_line(e)}): they "
            f"are truncated or damaged; copy them again (and delete "
            f"'{os.path.join(root, name, 'processed')}')") from e
