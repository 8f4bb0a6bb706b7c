"""A CSR adjacency with the caches the SpMM/SDDMM ops and the scheduler need.

``CSRGraph`` is built once per graph: row pointers (int64: more than 2^31
non-zeros work), column indices, optional edge values, and lazily the
transposed structure (for ``A^T dY`` in the backward), the degree
statistics the scheduler reads and the hub rows of a threshold. A layer keeps
one per input graph, so a repeated call costs no hashing and no host sync.
"""
import warnings
from dataclasses import dataclass, field
from typing import Dict, Optional

import torch
from torch import Tensor


@dataclass(eq=False)
class CSRGraph:
    r"""``A[i, j] = value[e]`` for ``e`` in ``rowptr[i]:rowptr[i + 1]`` and
    ``j = col[e]`` (``value`` ``None``: all ones). Rows aggregate: ``A @ X``
    gives row ``i`` the (weighted) sum of the rows ``X[col[e]]``."""
    rowptr: Tensor
    col: Tensor
    value: Optional[Tensor]
    num_cols: int
    _cache: Dict = field(default_factory=dict, repr=False)

    @property
    def num_rows(self) -> int:
        return self.rowptr.numel() - 1

    @property
    def nnz(self) -> int:
        return self.col.numel()

    @property
    def device(self) -> torch.device:
        return self.rowptr.device

    @classmethod
    def from_edge_index(cls, edge_index: Tensor, num_nodes: int,
                        value: Optional[Tensor] = None) -> 'CSRGraph':
        r"""Rows are targets (``edge_index[1]``), columns sources: ``A @ X``
        is PyG's ``sum`` aggregation of messages ``x_j`` into node ``i``."""
        # int64 keys: row * num_nodes + col overflows int32 past 46,340 nodes.
        row, col = edge_index[1].long(), edge_index[0].long()
        if row.numel() and (int(edge_index.min()) < 0
                            or int(edge_index.max()) >= num_nodes):
            raise ValueError(f"'edge_index' holds ids outside [0, {num_nodes})")
        perm = torch.argsort(row * num_nodes + col, stable=True)
        row, col = row[perm], col[perm]
        rowptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=row.device)
        rowptr[1:] = torch.bincount(row, minlength=num_nodes).cumsum(0)
        value = value[perm] if value is not None else None
        return cls(rowptr, col.contiguous(), value, num_nodes)

    def degree(self) -> Tensor:
        if 'degree' not in self._cache:
            self._cache['degree'] = self.rowptr[1:] - self.rowptr[:-1]
        return self._cache['degree']

    def transpose(self) -> 'CSRGraph':
        r"""``A^T`` as a CSRGraph (cached), with ``perm`` mapping its
        non-zeros to this graph's (``A^T.value = A.value[perm]``)."""
        if 'transpose' not in self._cache:
            row = torch.repeat_interleave(
                torch.arange(self.num_rows, device=self.device), self.degree(),
                output_size=self.nnz)
            perm = torch.argsort(self.col.long() * max(self.num_rows, 1) + row,
                                 stable=True)
            rowptr = torch.zeros(self.num_cols + 1, dtype=torch.long,
                                 device=self.device)
            rowptr[1:] = torch.bincount(self.col.long(),
                                        minlength=self.num_cols).cumsum(0)
            value = self.value[perm] if self.value is not None else None
            t = CSRGraph(rowptr, row[perm].to(self.col.dtype), value,
                         self.num_rows)
            t._cache['perm'] = perm
            t._cache['transpose'] = self
            self._cache['transpose'] = t
        return self._cache['transpose']

    def with_value(self, value: Optional[Tensor]) -> 'CSRGraph':
        r"""The same structure with other edge values; shares the caches that
        do not depend on values (degree, statistics, hub rows)."""
        g = CSRGraph(self.rowptr, self.col, value, self.num_cols)
        for key, item in self._cache.items():
            if key in ('degree', 'stats') or (
                    isinstance(key, tuple)
                    and key[0] in ('hub_rows', 'hub_chunks', 'light_rows')):
                g._cache[key] = item
        g._cache['structure'] = self._cache.setdefault('structure', {})
        return g

    def stats(self) -> Dict[str, float]:
        r"""Degree statistics of the full graph (one host sync, cached): the
        scheduler's input features."""
        if 'stats' not in self._cache:
            deg = self.degree().double()
            if deg.numel() == 0:
                q = [0.0] * 5
            else:
                q = torch.quantile(
                    deg.cpu() if deg.numel() > 1 << 24 else deg,
                    torch.tensor([0.5, 0.9, 0.99, 0.999, 1.0],
                                 dtype=torch.double,
                                 device='cpu' if deg.numel() > 1 << 24
                                 else deg.device)).tolist()
            mean = float(deg.mean()) if deg.numel() else 0.0
            self._cache['stats'] = {
                'rows': self.num_rows, 'cols': self.num_cols, 'nnz': self.nnz,
                'mean_degree': mean, 'p50': q[0], 'p90': q[1], 'p99': q[2],
                'p999': q[3], 'max_degree': q[4],
                'skew': q[4] / mean if mean > 0 else 0.0,
            }
        return self._cache['stats']

    def hub_rows(self, threshold: int) -> Tensor:
        r"""Rows with more than :obj:`threshold` non-zeros (cached per
        threshold), as int64 ids."""
        key = ('hub_rows', int(threshold))
        if key not in self._cache:
            self._cache[key] = (self.degree() > threshold).nonzero().view(-1)
        return self._cache[key]

    def light_rows(self, threshold: int) -> Tensor:
        r"""The rows with at most :obj:`threshold` non-zeros as int64 ids,
        ordered by non-zero count (ties in index order; cached per
        threshold): the light-row kernel of the ``'hub'`` SpMM variants packs
        rows in this order, so the rows that share a warp take about as many
        passes (in index order a warp waits for its longest row)."""
        key = ('light_rows', int(threshold))
        if key not in self._cache:
            deg = self.degree()
            rows = (deg <= threshold).nonzero().view(-1)
            self._cache[key] = rows[torch.argsort(deg[rows], stable=True)]
        return self._cache[key]

    def hub_chunks(self, threshold: int, chunk: int = 2048) -> Tensor:
        r"""``[K, 3]`` int64 ``(row, begin, end)``: the rows with more than
        :obj:`threshold` non-zeros cut into runs of at most :obj:`chunk`
        non-zeros, a row's chunks adjacent (cached; one host sync to size
        it): the work list of the ``'hub'`` SpMM variant.

        (On an H200, chunks of 4096 ran 0.1-2.9% faster than 2048 in the
        cells of ``scripts/device/spmm_chunk_sweep.py`` (git 0e1e631),
        call90-92, but in the whole benchmark (call95) the scheduler's probe of hub-skewed bfloat16
        F=256 at 32 lanes slowed from 0.69 to 0.83 ms, which moved its choice
        to a kernel 6% slower, and Reddit-like bfloat16 F=16 took 5% longer;
        2048 stays. 8192 lost 13% on hub-skewed bfloat16 F=128.)"""
        key = ('hub_chunks', int(threshold), int(chunk))
        if key not in self._cache:
            rows = self.hub_rows(threshold)
            start = self.rowptr[rows]
            deg = self.rowptr[rows + 1] - start
            n = (deg + chunk - 1) // chunk
            total = int(n.sum())
            row = torch.repeat_interleave(rows, n, output_size=total)
            first = torch.repeat_interleave(n.cumsum(0) - n, n, output_size=total)
            k = torch.arange(total, device=self.device) - first
            begin = self.rowptr[row] + k * chunk
            end = torch.minimum(begin + chunk, self.rowptr[row + 1])
            self._cache[key] = torch.stack([row, begin, end], 1).contiguous()
        return self._cache[key]

    def to_torch_sparse(self, dtype: Optional[torch.dtype] = None) -> Tensor:
        r"""The same matrix as a ``torch.sparse_csr`` tensor (for cuSPARSE /
        ``torch.sparse.mm``) with values of :obj:`dtype` (default: the
        values' own, float32 without values); cached per value tensor and
        dtype, so a caller multiplying bfloat16 features casts once."""
        if dtype is None:
            dtype = self.value.dtype if self.value is not None else torch.float32
        key = ('torch_csr', id(self.value), dtype)
        if key not in self._cache:
            value = self.value.to(dtype) if self.value is not None else \
                torch.ones(self.nnz, dtype=dtype, device=self.device)
            with warnings.catch_warnings():  # "CSR support is in beta"
                warnings.simplefilter('ignore')
                self._cache[key] = torch.sparse_csr_tensor(
                    self.rowptr, self.col.long(), value,
                    (self.num_rows, self.num_cols), check_invariants=False)
        return self._cache[key]
