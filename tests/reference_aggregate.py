"""Pure-Python references for fusesample::sample_aggregate and for the
sampled computation tree of FusedGraphSAGE (slow, obviously correct).

Neighbours are drawn with tests/reference.py's re-implementation of the
kernels' counter RNG, keyed by (rng_seed, level, node id, slot), so the
references draw the very same neighbours as the op: tests compare the draws
exactly and the reductions up to rounding.
"""
from typing import List, Sequence, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.nn import SAGEConv

import reference as ref


def draw_neighbors(colptr: Tensor, row: Tensor, v: int, k: int,
                   replace: bool, rng_seed: int, level: int) -> List[int]:
    """The in-neighbours node :obj:`v` draws, in draw order (node ids)."""
    if v < 0:
        return []
    start, end = int(colptr[v]), int(colptr[v + 1])
    positions = ref.sample_positions(end - start, k, replace, rng_seed, level,
                                     v)
    return [int(row[start + j]) for j in positions]


def sample_aggregate(colptr: Tensor, row: Tensor, x: Tensor, target: Tensor,
                     num_neighbors: int, reduce: str = 'mean',
                     replace: bool = False, rng_seed: int = 0,
                     level: int = 0) -> Tuple[Tensor, Tensor, Tensor]:
    """``(out, nbr, arg)`` as the op returns them; :obj:`out` is computed
    with differentiable torch ops from :obj:`x` (the backward of the op must
    equal autograd's gradient of this). Reduces in :obj:`x`'s dtype (pass
    float32/float64)."""
    if reduce == 'add':
        reduce = 'sum'
    assert reduce in ('sum', 'mean', 'max'), reduce
    colptr, row = colptr.cpu(), row.cpu()
    k = int(num_neighbors)
    T, F = target.numel(), x.size(1)
    width = max(k, 0)
    nbr = torch.full((T, width), -1, dtype=torch.long)
    arg = torch.full((T, F), -1, dtype=torch.long)
    rows = []
    for t, v in enumerate(target.tolist()):
        ids = draw_neighbors(colptr, row, v, k, replace, rng_seed, level)
        if width > 0 and ids:
            assert len(ids) <= width
            nbr[t, :len(ids)] = torch.tensor(ids, dtype=torch.long)
        if not ids:
            rows.append(x[:0].sum(0))  # zeros, still a function of x
            continue
        idx = torch.tensor(ids, dtype=torch.long, device=x.device)
        h = x.index_select(0, idx)  # [c, F] in draw order
        if reduce == 'sum':
            rows.append(h.sum(0))
        elif reduce == 'mean':
            rows.append(h.sum(0) / len(ids))
        else:
            # argmax returns the first maximal value: the first in draw order.
            first = h.detach().argmax(0)
            arg[t] = idx.cpu()[first.cpu()]
            rows.append(h.gather(0, first.view(1, -1)).view(-1))
    out = torch.stack(rows) if rows else x.new_zeros((0, F))
    if reduce != 'max':
        arg = torch.empty(0, dtype=torch.long)
    return out, nbr, arg


def replay(x: Tensor, colptr: Tensor, row: Tensor, target: Tensor,
           nbr: Tensor, arg: Tensor, num_neighbors: int,
           reduce: str) -> Tensor:
    """Recomputes ``out`` from the op's saved draws with differentiable
    torch ops (what the backward replays): nbr for sum/mean with k >= 0, the
    graph for k = -1, arg for max."""
    F = x.size(1)
    if reduce == 'max':
        arg = arg.to(x.device)
        valid = arg >= 0
        picked = x.gather(0, arg.clamp_min(0))
        return torch.where(valid, picked, picked.new_zeros(()))
    colptr, row = colptr.cpu(), row.cpu()
    rows = []
    for t, v in enumerate(target.cpu().tolist()):
        if num_neighbors >= 0:
            ids = [u for u in nbr[t].tolist() if u >= 0]
        elif v >= 0:
            ids = row[int(colptr[v]):int(colptr[v + 1])].tolist()
        else:
            ids = []
        if not ids:
            rows.append(x[:0].sum(0))  # zeros, still a function of x
            continue
        h = x.index_select(0, torch.tensor(ids, device=x.device)).sum(0)
        rows.append(h / len(ids) if reduce == 'mean' else h)
    return torch.stack(rows) if rows else x.new_zeros((0, F))


def default_generator_key() -> int:
    """The key the op takes for ``rng_seed=-1`` on the CPU: the next 64 bits
    of PyTorch's default CPU generator (``random64()``), which a full-range
    ``random_`` of an int64 tensor returns as well. Advances the generator
    as the op does."""
    bits = int(torch.empty((), dtype=torch.long).random_(-2**63, None))
    return bits & ref.M64


# FusedGraphSAGE ##############################################################

def sample_tree(colptr: Tensor, row: Tensor, seed_nodes: Tensor,
                num_neighbors: List[int], replace: bool,
                rng_seed: Union[int, Sequence[int]]
                ) -> Tuple[List[int], List[Tuple[int, int]]]:
    """The explicit computation tree: ``(nodes, edges)`` with ``nodes[p]`` the
    node id at tree position ``p`` (``-1``: a padded slot, an isolated
    placeholder) and ``edges`` the (child position, parent position) pairs.
    Positions ``0..B-1`` are the seeds; level ``l`` nodes draw
    ``num_neighbors[l]`` children keyed by ``(rng_seed, l, node)``;
    :obj:`rng_seed` may be one key per level instead."""
    keys = ([int(rng_seed)] * len(num_neighbors)
            if isinstance(rng_seed, int) else list(rng_seed))
    nodes = [int(v) for v in seed_nodes.tolist()]
    edges = []
    begin, end = 0, len(nodes)
    for level, k in enumerate(num_neighbors):
        for p in range(begin, end):
            children = draw_neighbors(colptr, row, nodes[p], k, replace,
                                      keys[level], level)
            for u in children:
                edges.append((len(nodes), p))
                nodes.append(u)
            # padded slots (the op's -1 entries of nbr): isolated nodes
            nodes.extend([-1] * (max(k, 0) - len(children)))
        begin, end = end, len(nodes)
    return nodes, edges


def tree_reference(model, x: Tensor, edge_index: Tensor, seed_nodes: Tensor,
                   rng_seed: Union[int, Sequence[int]],
                   return_convs: bool = False):
    """FusedGraphSAGE's training forward computed the slow way: the sampled
    tree as an explicit graph (tree positions are nodes with the features of
    their node; edges child -> parent) run through plain PyG ``SAGEConv``
    layers holding the model's weights. :obj:`rng_seed`: the tree's key, or
    one key per level. Returns the seeds' outputs (and the
    SAGEConv copies, whose ``.grad`` can be compared, if
    :obj:`return_convs`)."""
    num_nodes = x.size(0)
    colptr, row, _ = ref.csc_from_coo(edge_index.cpu(), num_nodes)
    nodes, edges = sample_tree(colptr, row, seed_nodes.cpu(),
                               model.num_neighbors, model.replace, rng_seed)
    node = torch.tensor(nodes, dtype=torch.long, device=x.device)
    valid = (node >= 0).view(-1, 1)
    h = torch.where(valid, x[node.clamp_min(0)], x.new_zeros(()))
    tree_edge_index = (torch.tensor(edges, dtype=torch.long).t().contiguous()
                       if edges else torch.empty(2, 0, dtype=torch.long))
    tree_edge_index = tree_edge_index.to(x.device)
    convs = []
    for i, fused in enumerate(model.convs):
        conv = SAGEConv(fused.in_channels, fused.out_channels,
                        aggr=model.aggr).to(x.device, x.dtype)
        conv.load_state_dict(fused.state_dict())
        convs.append(conv)
        h = conv(h, tree_edge_index)
        if i < len(model.convs) - 1:
            h = model.act(h)
    out = h[:seed_nodes.numel()]
    return (out, convs) if return_convs else out
