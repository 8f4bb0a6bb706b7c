"""The graph argument of the fused layers, as the CSC arrays the op reads.

A layer is called like SAGEConv, with an ``edge_index`` tensor, a
``torch_sparse.SparseTensor`` ``adj_t`` or a ``torch.sparse`` CSR ``adj_t``.
Building CSC from ``edge_index`` sorts every edge, so it is memoised per
tensor (:func:`~pyg_fusesample.sampler.build_csc`); the sparse formats
already hold it (the rows of ``adj_t`` are the targets).
"""
from typing import Tuple

import torch
from torch import Tensor
from torch_geometric.typing import SparseTensor

from ..sampler.graph_store import _entry_for as graph_entry
from ..sampler.graph_store import build_csc
from ..sparse.edge_index_checks import check_compressed


def as_csc(edge_index, num_src: int, num_dst: int) -> Tuple[Tensor, Tensor]:
    r"""``(colptr, row)`` of the graph: ``row[colptr[v]:colptr[v + 1]]`` are
    the sources (rows of ``x``) of target :math:`v`."""
    if isinstance(edge_index, Tensor) and edge_index.layout == torch.strided:
        if torch.compiler.is_compiling():
            return edge_index_csc(edge_index, max(num_src, num_dst), num_dst)
        return _edge_index_csc(edge_index, max(num_src, num_dst), num_dst)
    return _sparse_csc(edge_index, num_src, num_dst)


def _edge_index_csc(edge_index: Tensor, num_nodes: int,
                    num_dst: int) -> Tuple[Tensor, Tensor]:
    graph = build_csc(edge_index, num_nodes)
    colptr = graph.colptr
    if colptr.numel() > num_dst + 1:
        colptr = colptr[:num_dst + 1]
    return colptr, graph.row


@torch.library.custom_op('fusesample::edge_index_csc', mutates_args=())
def edge_index_csc(edge_index: Tensor, num_nodes: int,
                   num_dst: int) -> Tuple[Tensor, Tensor]:
    r"""The memoised CSC ``(colptr [num_dst + 1], row [E])`` of an
    ``edge_index`` over :obj:`num_nodes` nodes. An op, so that
    ``torch.compile(..., fullgraph=True)`` traces a layer called with
    ``edge_index``: the memo (weak references, finalisers) and the sort run
    eagerly behind it, and its output shapes follow from the inputs'."""
    # Copies (an op's outputs must not be state the memo keeps): only under
    # torch.compile; eager calls take the memo's tensors themselves.
    colptr, row = _edge_index_csc(edge_index, num_nodes, num_dst)
    return colptr.clone(), row.clone()


@edge_index_csc.register_fake
def _(edge_index, num_nodes, num_dst):
    long = dict(dtype=torch.long, device=edge_index.device)
    return (torch.empty(num_dst + 1, **long),
            torch.empty(edge_index.size(1), **long))


# SparseTensor / sparse CSR inputs already hold the CSC; torch.compile does
# not trace them (a graph break).
@torch.compiler.disable
def _sparse_csc(edge_index, num_src: int, num_dst: int) -> Tuple[Tensor, Tensor]:
    if isinstance(edge_index, SparseTensor):
        rowptr, col, _ = edge_index.csr()
        _check_sparse_size(tuple(edge_index.sparse_sizes()), num_src, num_dst)
        _check_once(col, rowptr, col, 'rowptr', 'col', num_src)
        return rowptr, col
    if isinstance(edge_index, Tensor) and edge_index.layout == torch.sparse_csr:
        _check_sparse_size(tuple(edge_index.shape), num_src, num_dst)
        crow = edge_index.crow_indices().to(torch.long)
        col = edge_index.col_indices()
        # (torch.sparse_csr_tensor checks no invariants by default)
        _check_once(edge_index, crow, col, 'crow_indices', 'col_indices',
                    num_src)
        return crow, col
    if isinstance(edge_index, Tensor) and edge_index.is_sparse:
        raise ValueError("a torch.sparse COO 'edge_index' is not supported; "
                         "pass edge_index, a CSR adj_t (.to_sparse_csr()) or "
                         "a SparseTensor")
    raise TypeError(f"the graph must be an edge_index tensor, a SparseTensor "
                    f"or a torch.sparse CSR adj_t, got "
                    f"{type(edge_index).__name__}")


def _check_once(anchor: Tensor, ptr: Tensor, idx: Tensor, ptr_name: str,
                idx_name: str, num_src: int):
    # A user-made CSR may be malformed, and the op would index with it; the
    # check (O(E), a host sync on a GPU) runs once per graph: its result is
    # memoised with the graph's CSC memo, per tensor and version.
    entry = graph_entry(anchor)
    if entry['graphs'].get('checked') != num_src:
        check_compressed(ptr, idx, "the graph ('adj_t')", ptr_name, idx_name,
                         num_src)
        entry['graphs']['checked'] = num_src


def _check_sparse_size(size, num_src: int, num_dst: int):
    if size[0] != num_dst or size[1] != num_src:
        raise ValueError(f"'adj_t' has shape {list(size)} but the layer got "
                         f"{num_dst} target and {num_src} source nodes")
