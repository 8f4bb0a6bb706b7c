"""pyg_fusesample.nn's drop-in layers (SAGEConv, GCNConv, GATConv, RGCNConv)
and to_fused against PyG's layers of the same names.

Each case builds PyG's layer under ``torch.manual_seed``, ours with the same
arguments, and loads PyG's state dict into ours (the keys must be the same).
Then the output and the gradients of one fixed random projection of it --
w.r.t. x, the float per-edge input and every parameter -- must agree:

* graphs (GRAPH_KINDS): random (isolated targets, duplicate edges,
  self-loops), the same with int32 edge_index, a hub target with 399
  in-edges, no edges, bipartite (x_src, x_dst) and (x_src, None) with size,
  a batch of ``FusedNeighborLoader(num_neighbors=[5, 3])`` and the same
  trimmed to its second layer by ``torch_geometric.utils.trim_to_layer``;
* each layer's options (LAYER_CASES), in eval and in train mode; the GATConv
  case with attention dropout is compared in eval mode only, its train mode
  by statistics (test_gat_attention_dropout_statistics);
* float32 (rtol 1e-4, atol 1e-5); float64 (1e-10) and ``gradcheck`` of our
  layer; bfloat16 (ours in bfloat16 against PyG's in float32, loosely);
* ``to_fused`` on PyG's GraphSAGE, GCN, GAT and a hand-written RGCN model;
* malformed inputs end in a Python exception with a message, in a child
  process (tests/bad_inputs_runner.py), so that a crash fails by name.

CPU always; CUDA as the ``cuda``-marked parameter (skipped without a GPU).
"""
import copy
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import accumulate
from typing import Dict, NamedTuple, Optional

import pytest
import torch
import torch_geometric.nn as pyg_nn
from torch import Tensor
from torch_geometric.nn.models import GAT, GCN, GraphSAGE
from torch_geometric.utils import trim_to_layer

from pyg_fusesample import FusedNeighborLoader
from pyg_fusesample.datasets import power_law_graph
from pyg_fusesample.nn import GATConv, GCNConv, RGCNConv, SAGEConv, to_fused
from pyg_fusesample.sparse.target_layout import target_layout

from bad_inputs_runner import run_cases
from conftest import devices

# one_thread (tests/conftest.py): on the 2 shared CI cores two contending
# intra-op threads made these small cases ~100x slower (0.3 s instead of
# 3 ms each).
pytestmark = [pytest.mark.usefixtures('one_thread'),
              pytest.mark.filterwarnings('ignore:.*is in beta state'),
              pytest.mark.filterwarnings('ignore:Sparse invariant checks')]

LAYERS = ('SAGEConv', 'GCNConv', 'GATConv', 'RGCNConv')
OURS = dict(SAGEConv=SAGEConv, GCNConv=GCNConv, GATConv=GATConv,
            RGCNConv=RGCNConv)
PYG = {name: getattr(pyg_nn, name) for name in LAYERS}

# Relations of RGCNConv; edge types are drawn from {0, 1}: relation 2 is
# always empty.
NUM_RELATIONS = 3
# float32: another order of the same sums (a parameter's gradient sums
# over every edge, with cancellation) moves results by a few 1e-5 relative;
# float64 holds the layers to the same arithmetic at 1e-10.
F32 = dict(rtol=1e-4, atol=1e-5)
F64 = dict(rtol=1e-10, atol=1e-10)
# bfloat16 keeps 8 bits of mantissa (relative rounding 2**-9 = 0.2%); the
# inputs, the weights, the products and the sums are rounded. Relative to
# the reference's largest magnitude, PyG's own layers' outputs in bfloat16
# stay within 1% of their float32 outputs here (largest seen 0.9%).
BF16_REL = 0.03


class Dims(NamedTuple):
    in_src: int   # x (or x_src) width
    in_dst: int   # x_dst width of bipartite inputs
    out: int      # out_channels (per head for GATConv)
    num_ids: int  # RGCNConv without features: node ids below num_ids


DIMS = Dims(8, 5, 6, 400)   # 400: the hub graph's nodes
SMALL = Dims(4, 3, 2, 8)    # gradcheck (8: the small graph's nodes)


# ---------------------------------------------------------------- layers ---
@dataclass
class Case:
    layer: str
    kwargs: dict = field(default_factory=dict)
    edge: str = ''      # per-edge input: 'edge_weight', 'edge_attr' (E x 3)
    #                     or 'edge_attr1d' (E); RGCNConv always gets edge_type
    ids: bool = False   # RGCNConv featureless: x is node ids (long)

    @property
    def id(self) -> str:
        opts = [f'{k}={v}' for k, v in self.kwargs.items()]
        opts += [self.edge] if self.edge else []
        opts += ['ids'] if self.ids else []
        return f"{self.layer}({','.join(opts)})"

    @property
    def dropout(self) -> float:
        return self.kwargs.get('dropout', 0.0)


LAYER_CASES = [
    Case('SAGEConv'),
    Case('SAGEConv', dict(aggr='sum')),
    Case('SAGEConv', dict(aggr='max')),
    Case('SAGEConv', dict(root_weight=False)),
    Case('SAGEConv', dict(normalize=True)),
    Case('SAGEConv', dict(project=True)),
    Case('SAGEConv', dict(bias=False)),
    Case('GCNConv'),
    Case('GCNConv', dict(cached=False)),
    Case('GCNConv', dict(normalize=False)),
    Case('GCNConv', dict(add_self_loops=False)),
    Case('GCNConv', dict(improved=True)),
    Case('GCNConv', edge='edge_weight'),
    Case('GCNConv', dict(improved=True, bias=False), edge='edge_weight'),
    Case('GCNConv', dict(normalize=False), edge='edge_weight'),
    Case('GATConv', dict(heads=1)),
    Case('GATConv', dict(heads=4)),
    Case('GATConv', dict(heads=4, concat=False)),
    Case('GATConv', dict(heads=2, negative_slope=0.05)),
    Case('GATConv', dict(heads=2, add_self_loops=False)),
    Case('GATConv', dict(heads=2, edge_dim=3), edge='edge_attr'),
    Case('GATConv', dict(heads=2, edge_dim=1, fill_value=0.5),
         edge='edge_attr1d'),
    Case('GATConv', dict(heads=2, edge_dim=3, add_self_loops=False),
         edge='edge_attr'),
    Case('GATConv', dict(heads=2, residual=True)),
    Case('GATConv', dict(heads=2, concat=False, bias=False)),
    Case('GATConv', dict(heads=2, dropout=0.5)),
    Case('RGCNConv'),
    Case('RGCNConv', dict(aggr='add')),
    Case('RGCNConv', dict(num_bases=2)),
    Case('RGCNConv', dict(num_blocks=2)),
    Case('RGCNConv', dict(root_weight=False)),
    Case('RGCNConv', dict(num_bases=2, aggr='add', bias=False)),
    Case('RGCNConv', ids=True),
]


def build(classes: dict, case: Case, dims: Dims, bipartite: bool):
    if case.ids:
        in_channels = dims.num_ids
    elif bipartite:
        in_channels = (dims.in_src, dims.in_dst)
    else:
        in_channels = dims.in_src
    args = (in_channels, dims.out)
    if case.layer == 'RGCNConv':
        args += (NUM_RELATIONS, )
    return classes[case.layer](*args, **case.kwargs)


def layer_pair(case: Case, bipartite: bool, device, dtype=torch.float32,
               ours_dtype=None):
    """(PyG's layer, ours holding PyG's weights)."""
    torch.manual_seed(12345)
    ref = build(PYG, case, DIMS, bipartite)
    ours = build(OURS, case, DIMS, bipartite)
    assert sorted(ours.state_dict()) == sorted(ref.state_dict())
    ours.load_state_dict(ref.state_dict())
    return ref.to(device, dtype), ours.to(device, ours_dtype or dtype)


# ---------------------------------------------------------------- graphs ---
@dataclass
class Graph:
    """Node and edge inputs in float64 on the CPU (cast per test)."""
    edge_index: Tensor
    x: Tensor                          # [num_src, in_src]
    ids: Tensor                        # [num_src] node ids below num_ids
    edge_weight: Tensor                # [E], positive
    edge_attr: Tensor                  # [E, 3]
    edge_type: Tensor                  # [E] in {0, 1}
    x_dst: Optional[Tensor] = None     # bipartite: [num_dst, in_dst]
    no_dst: bool = False               # bipartite with (x_src, None)

    @property
    def bipartite(self) -> bool:
        return self.x_dst is not None


def random_graph(src: Tensor, dst: Tensor, num_src: int, dims: Dims,
                 num_dst: Optional[int] = None, seed: int = 0) -> Graph:
    """Features and edge inputs drawn for the edges src -> dst."""
    g = torch.Generator().manual_seed(seed)
    num_edges = src.numel()
    f64 = dict(generator=g, dtype=torch.float64)
    return Graph(
        edge_index=torch.stack([src, dst]),
        x=torch.randn(num_src, dims.in_src, **f64),
        ids=torch.randperm(dims.num_ids, generator=g)[:num_src],
        edge_weight=torch.rand(num_edges, **f64) + 0.1,
        edge_attr=torch.randn(num_edges, 3, **f64),
        edge_type=torch.randint(0, 2, (num_edges, ), generator=g),
        x_dst=(None if num_dst is None else torch.randn(
            num_dst, dims.in_dst, **f64)))


def without_loops(src: Tensor, dst: Tensor):
    """Drawn self-loops are dropped: the graphs add their own, one per
    node. PyG's GCNConv keeps one weight of repeated self-loops, which one
    undefined (an index_put with repeated indices), and its gradient w.r.t.
    edge_weight is wrong then."""
    keep = src != dst
    return src[keep], dst[keep]


def mixed_graph(num_nodes: int, num_edges: int, dims: Dims,
                num_dst: Optional[int] = None, seed: int = 0) -> Graph:
    """Random edges into all but the last 2 targets (isolated), the first
    10 edges once more (duplicates) and, when square, one self-loop on each
    of 0, 3, 6 and 9 below num_nodes."""
    g = torch.Generator().manual_seed(seed)
    targets = num_nodes if num_dst is None else num_dst
    src = torch.randint(0, num_nodes, (num_edges, ), generator=g)
    dst = torch.randint(0, targets - 2, (num_edges, ), generator=g)
    if num_dst is None:
        src, dst = without_loops(src, dst)
    src, dst = torch.cat([src, src[:10]]), torch.cat([dst, dst[:10]])
    if num_dst is None:
        loops = torch.arange(0, min(num_nodes, 12), 3)
        src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    return random_graph(src, dst, num_nodes, dims, num_dst, seed + 1)


def hub_graph(dims: Dims) -> Graph:
    """Node 0 receives from all 399 others; ~200 random edges besides."""
    g = torch.Generator().manual_seed(2)
    n = 400
    src, dst = without_loops(torch.randint(0, n, (200, ), generator=g),
                             torch.randint(0, n, (200, ), generator=g))
    src = torch.cat([torch.arange(1, n), src])
    dst = torch.cat([torch.zeros(n - 1, dtype=torch.long), dst])
    return random_graph(src, dst, n, dims, seed=3)


@lru_cache(maxsize=None)
def loader_batch():
    """The first batch of FusedNeighborLoader(num_neighbors=[5, 3]) on a
    300-node power-law graph with edge weights, attributes and types."""
    torch.manual_seed(0)
    data = power_law_graph(300, 6, DIMS.in_src, 3, seed=0)
    g = torch.Generator().manual_seed(4)
    num_edges = data.num_edges
    data.edge_weight = torch.rand(num_edges, generator=g) + 0.1
    data.edge_attr = torch.randn(num_edges, 3, generator=g)
    data.edge_type = torch.randint(0, 2, (num_edges, ), generator=g)
    loader = FusedNeighborLoader(data, num_neighbors=[5, 3], batch_size=16)
    return next(iter(loader))


def batch_graph(trim_layer: int) -> Graph:
    """The loader's batch as one layer sees it: whole (0), or trimmed by
    PyG's trim_to_layer as a 2-layer model's second layer gets it (1)."""
    b = loader_batch()
    edge = dict(edge_weight=b.edge_weight, edge_attr=b.edge_attr,
                edge_type=b.edge_type)
    x, edge_index = b.x, b.edge_index
    ids = b.n_id
    if trim_layer:
        nodes, edges = b.num_sampled_nodes, b.num_sampled_edges
        for name, value in edge.items():
            _, _, edge[name] = trim_to_layer(trim_layer, nodes, edges, x,
                                             b.edge_index, value)
        ids, _, _ = trim_to_layer(trim_layer, nodes, edges, ids, b.edge_index)
        x, edge_index, _ = trim_to_layer(trim_layer, nodes, edges, x,
                                         b.edge_index)
        assert edge_index.size(1) < b.edge_index.size(1)
    return Graph(edge_index=edge_index, x=x.double(), ids=ids,
                 edge_weight=edge['edge_weight'].double(),
                 edge_attr=edge['edge_attr'].double(),
                 edge_type=edge['edge_type'])


def with_int32(graph: Graph) -> Graph:
    return replace(graph, edge_index=graph.edge_index.int())


def without_edges(graph: Graph) -> Graph:
    keep = slice(0, 0)
    return replace(graph, edge_index=graph.edge_index[:, keep],
                   edge_weight=graph.edge_weight[keep],
                   edge_attr=graph.edge_attr[keep],
                   edge_type=graph.edge_type[keep])


GRAPH_KINDS = {
    'random': lambda: mixed_graph(30, 120, DIMS),
    'random_int32': lambda: with_int32(mixed_graph(30, 120, DIMS)),
    'hub': lambda: hub_graph(DIMS),
    'no_edges': lambda: without_edges(mixed_graph(30, 120, DIMS)),
    'bipartite': lambda: mixed_graph(30, 60, DIMS, num_dst=12),
    'bipartite_no_dst': lambda: replace(
        mixed_graph(30, 60, DIMS, num_dst=12), no_dst=True),
    'loader': lambda: batch_graph(0),
    'loader_trimmed': lambda: batch_graph(1),
}


@lru_cache(maxsize=None)
def graph_of(kind: str) -> Graph:
    return GRAPH_KINDS[kind]()


def applies(case: Case, kind: str) -> bool:
    """GCNConv takes no bipartite input, RGCNConv no (x_src, None) and its
    node-id input is tested on square graphs."""
    if not kind.startswith('bipartite'):
        return True
    if case.layer == 'GCNConv' or case.ids:
        return False
    return kind == 'bipartite' or case.layer != 'RGCNConv'


def inputs_for(case: Case, graph: Graph, device, dtype):
    """(x, edge_index, keyword inputs) of the case's forward call."""
    def cast(t):
        return t.to(device, dtype)

    if case.ids:
        x = graph.ids.to(device)
    elif graph.bipartite:
        x = (cast(graph.x), None if graph.no_dst else cast(graph.x_dst))
    else:
        x = cast(graph.x)
    kwargs = {}
    if graph.bipartite and case.layer != 'RGCNConv':  # RGCNConv has no size
        kwargs['size'] = (graph.x.size(0), graph.x_dst.size(0))
    if case.edge == 'edge_weight':
        kwargs['edge_weight'] = cast(graph.edge_weight)
    elif case.edge == 'edge_attr':
        kwargs['edge_attr'] = cast(graph.edge_attr)
    elif case.edge == 'edge_attr1d':
        kwargs['edge_attr'] = cast(graph.edge_attr[:, 0])
    if case.layer == 'RGCNConv':
        kwargs['edge_type'] = graph.edge_type.to(device)
    return x, graph.edge_index.to(device), kwargs


# ------------------------------------------------------------- comparing ---
def output_and_grads(module, x, edge_index, kwargs, seed=0):
    """{'output': the output, 'gradient w.r.t. <name>': the gradient of
    <output, w> (w: fixed random) w.r.t. each float input (x, x_src, x_dst,
    edge_weight, edge_attr) and parameter ('param:<name>'); unused ones as
    zeros}."""
    leaves: Dict[str, Tensor] = {}

    def leaf(name, value):
        if not isinstance(value, Tensor) or not value.is_floating_point():
            return value
        leaves[name] = value.detach().clone().requires_grad_()
        return leaves[name]

    if isinstance(x, tuple):
        x = (leaf('x_src', x[0]), leaf('x_dst', x[1]))
    else:
        x = leaf('x', x)
    kwargs = {k: leaf(k, v) for k, v in kwargs.items()}
    out = module(x, edge_index, **kwargs)
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(out.shape, generator=g, dtype=torch.float64)
    wrt = dict(leaves)
    wrt.update(('param:' + n, p) for n, p in module.named_parameters())
    grads = torch.autograd.grad((out * w.to(out)).sum(), list(wrt.values()),
                                allow_unused=True, materialize_grads=True)
    result = {'output': out.detach()}
    result.update((f'gradient w.r.t. {k}', v) for k, v in zip(wrt, grads))
    return result


def assert_same(ours: dict, ref: dict, atol_of=None, **tol):
    """Outputs and gradients (output_and_grads) alike: within `tol`, or
    within atol_of(name, reference) (bfloat16 against float32; float32
    within twice PyG's own rounding)."""
    assert sorted(ours) == sorted(ref)
    for name, b in ref.items():
        a = ours[name]
        assert a.shape == b.shape, f'{name}: {a.shape} != {b.shape}'
        if atol_of is not None:
            a = a.to(b.dtype)
            tol = dict(rtol=tol.get('rtol', 0.0), atol=atol_of(name, b))
        torch.testing.assert_close(a, b, **tol,
                                   msg=lambda m, name=name: f'{name}: {m}')


def compare(case: Case, kind: str, device, dtype, train: bool, tol: dict):
    graph = graph_of(kind)
    ref, ours = layer_pair(case, graph.bipartite, device, dtype)
    ref.train(train)
    ours.train(train)
    x, edge_index, kwargs = inputs_for(case, graph, device, dtype)
    # PyG gets int64 edge_index also where ours gets int32: with int32,
    # torch (2.13, CPU) computes PyG's gradients wrong -- gather with an
    # expanded int32 index (the backward of PyG's scatter) reads wrong rows,
    # and scatter_reduce('amax')'s backward returns NaN.
    expected = output_and_grads(ref, x, edge_index.long(), kwargs)
    atol_of = None
    if dtype == torch.float32:
        # within tol, or within twice PyG's own float32 rounding (its
        # distance from PyG's layer in float64): an order of summation
        # other than PyG's (a matrix product for GATConv's scores) moves
        # elements that are small sums of large terms by more than tol
        exact = copy.deepcopy(ref).double()
        x64, _, kwargs64 = inputs_for(case, graph, device, torch.float64)
        exact = output_and_grads(exact, x64, edge_index.long(), kwargs64)

        def atol_of(name, reference):
            own = (reference.double() - exact[name]).abs()
            return max(tol['atol'],
                       2 * own.max().item() if own.numel() else 0.0)
    assert_same(output_and_grads(ours, x, edge_index, kwargs), expected,
                atol_of=atol_of, **tol)


def equality_params(kinds, modes=('eval', 'train')):
    return [pytest.param(case, kind, mode, id=f'{case.id}-{kind}-{mode}')
            for case in LAYER_CASES for kind in kinds for mode in modes
            if applies(case, kind)
            and not (mode == 'train' and case.dropout > 0)]


# ----------------------------------------------------------------- tests ---
@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('case,kind,mode', equality_params(GRAPH_KINDS))
def test_equal_to_pyg_float32(case, kind, mode, device):
    compare(case, kind, device, torch.float32, mode == 'train', F32)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('case,kind,mode', equality_params(
    ['random', 'bipartite', 'loader', 'loader_trimmed'], modes=['eval']))
def test_equal_to_pyg_float64(case, kind, mode, device):
    compare(case, kind, device, torch.float64, False, F64)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('case,kind,mode', equality_params(
    ['random', 'hub'], modes=['eval']))
def test_bfloat16_close_to_pyg_float32(case, kind, mode, device):
    """Ours in bfloat16 (weights and inputs rounded from PyG's float32)
    against PyG's layer in float32: the output within BF16_REL of its largest
    magnitude, each gradient within that or within twice the distance of
    PyG's own layer in bfloat16 (the gradients of GATConv's attention
    vectors are sums with cancellation: PyG's are up to 30% off in
    bfloat16). The output is bfloat16, or of the dtype PyG's layer gives in
    bfloat16 (RGCNConv: float32)."""
    graph = graph_of(kind)
    ref, ours = layer_pair(case, graph.bipartite, device, torch.float32,
                           ours_dtype=torch.bfloat16)
    ref_bf16 = copy.deepcopy(ref).to(torch.bfloat16)
    for module in (ref, ours, ref_bf16):
        module.eval()
    inputs = inputs_for(case, graph, device, torch.bfloat16)
    got = output_and_grads(ours, *inputs)
    pyg_bf16 = output_and_grads(ref_bf16, *inputs)
    expected = output_and_grads(
        ref, *inputs_for(case, graph, device, torch.float32))
    assert got['output'].dtype in (torch.bfloat16, pyg_bf16['output'].dtype)

    def atol_of(name, reference):
        bound = BF16_REL * max(reference.abs().max().item(), 1e-3)
        if name == 'output':
            return bound
        pyg_error = (pyg_bf16[name].to(reference) - reference).abs().max()
        return max(bound, 2 * pyg_error.item())

    assert_same(got, expected, atol_of=atol_of)


def test_loader_batch_layout_bounds_the_rows_with_in_edges():
    # A loader batch's layout knows from the per-hop counts which leading
    # target rows can have in-edges (the last hop's nodes have none), so
    # SAGEConv / RGCNConv aggregate and multiply those rows only (the
    # 'loader' graph kind above compares them with PyG's on it).
    b = loader_batch()
    nodes = list(accumulate(b.num_sampled_nodes))
    edges = list(accumulate(b.num_sampled_edges))
    N = b.num_nodes
    whole = target_layout(b.edge_index, N, N, 'test')
    assert whole.num_active == nodes[1] < N
    assert whole.active_rows().num_dst == nodes[1]
    assert torch.equal(whole.active_rows().ptr, whole.ptr[:nodes[1] + 1])
    assert int(whole.ptr[nodes[1]]) == b.edge_index.size(1)
    first_hop = target_layout(b.edge_index.narrow(1, 0, edges[0]), nodes[1],
                              nodes[1], 'test')
    assert first_hop.num_active == nodes[0]
    none = target_layout(b.edge_index.narrow(1, 0, 0), N, N, 'test')
    assert none.num_active == 0 and none.active_rows().num_dst == 0
    # any other edge_index: every row may have in-edges
    other = target_layout(b.edge_index.clone(), N, N, 'test')
    assert other.num_active == N and other.active_rows() is other


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('case', [pytest.param(c, id=c.id)
                                  for c in LAYER_CASES if not c.dropout])
def test_gradcheck_float64(case, device):
    """torch.autograd.gradcheck of our layer w.r.t. x, every parameter and
    the float per-edge input, on 8 nodes (isolated targets, duplicates,
    self-loops). gradcheck also checks that the backward is reentrant (the
    same gradients twice): on CUDA, GATConv's failed that while its
    per-edge gathers' backward was index_select's (atomics)."""
    graph = mixed_graph(SMALL.num_ids, 16, SMALL, seed=5)
    torch.manual_seed(0)
    conv = build(OURS, case, SMALL, False).to(device, torch.float64)
    x, edge_index, kwargs = inputs_for(case, graph, device, torch.float64)
    names = [n for n, _ in conv.named_parameters()]
    float_kw = [k for k, v in kwargs.items() if v.is_floating_point()]

    def f(x, *tensors):
        params = dict(zip(names, tensors))
        call_kw = dict(kwargs, **dict(zip(float_kw, tensors[len(names):])))
        return torch.func.functional_call(conv, params, (x, edge_index),
                                          call_kw)

    inputs = [x.detach().clone().requires_grad_()
              if x.is_floating_point() else x]
    inputs += [p.detach().clone().requires_grad_()
               for p in conv.parameters()]
    inputs += [kwargs[k].clone().requires_grad_() for k in float_kw]
    assert torch.autograd.gradcheck(f, tuple(inputs), eps=1e-6, atol=1e-6,
                                    rtol=1e-4)


@pytest.mark.parametrize('device', devices())
def test_gat_attention_dropout_statistics(device):
    """GATConv(dropout=0.5) in train mode drops attention coefficients at
    random, so its output is compared by statistics over 400 forwards: it
    differs from the eval output, its mean is the eval output (dropout
    rescales by 1 / (1 - p)) within 6 standard errors, and its variance is
    PyG's within 25%."""
    case = Case('GATConv', dict(heads=2, dropout=0.5))
    graph = graph_of('random')
    ref, ours = layer_pair(case, False, device)
    x, edge_index, _ = inputs_for(case, graph, device, torch.float32)
    with torch.no_grad():
        expected = ours.eval()(x, edge_index)
        torch.testing.assert_close(expected, ref.eval()(x, edge_index),
                                   **F32)
        torch.manual_seed(0)
        ours_runs = torch.stack([ours.train()(x, edge_index)
                                 for _ in range(400)])
        ref_runs = torch.stack([ref.train()(x, edge_index)
                                for _ in range(400)])
    assert not torch.allclose(ours_runs[0], expected)
    stderr = ours_runs.std(0) / 20
    excess = (ours_runs.mean(0) - expected).abs() - (6 * stderr + 1e-5)
    assert excess.max() <= 0, f'mean off by {excess.max()} past 6 stderr'
    ratio = ours_runs.var(0).sum() / ref_runs.var(0).sum()
    assert 0.8 <= ratio <= 1.25, f'variance ours / PyG = {ratio}'


# -------------------------------------------------------------- to_fused ---
class RGCN(torch.nn.Module):
    """A hand-written two-layer RGCN (basis decomposition, then plain)."""

    def __init__(self):
        super().__init__()
        self.conv1 = pyg_nn.RGCNConv(DIMS.in_src, 16, NUM_RELATIONS,
                                     num_bases=2)
        self.conv2 = pyg_nn.RGCNConv(16, DIMS.out, NUM_RELATIONS)

    def forward(self, x, edge_index, edge_type):
        x = self.conv1(x, edge_index, edge_type).relu()
        return self.conv2(x, edge_index, edge_type)


# name -> (model factory, the per-edge input its forward takes)
MODELS = {
    'GraphSAGE': (lambda: GraphSAGE(DIMS.in_src, 16, 2, DIMS.out), None),
    'GCN': (lambda: GCN(DIMS.in_src, 16, 2, DIMS.out), 'edge_weight'),
    'GAT': (lambda: GAT(DIMS.in_src, 16, 2, DIMS.out, heads=2, edge_dim=3),
            'edge_attr'),
    'RGCN': (RGCN, 'edge_type'),
}


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('trimmed', [False, True], ids=['whole', 'trimmed'])
@pytest.mark.parametrize('name', list(MODELS))
def test_to_fused(name, trimmed, device):
    """to_fused converts in place and returns the model; every PyG conv
    becomes ours with the same state dict; outputs and gradients on a loader
    batch (trimmed per layer through BasicGNN's num_sampled_*_per_hop)
    equal the unconverted copy's."""
    if trimmed and name == 'RGCN':
        pytest.skip('the hand-written RGCN model does not trim')
    factory, edge = MODELS[name]
    torch.manual_seed(0)
    model = factory().to(device)
    reference = copy.deepcopy(model)
    assert to_fused(model) is model

    convs = {n: m for n, m in reference.named_modules()
             if type(m) in PYG.values()}
    assert convs
    for path, pyg_conv in convs.items():
        conv = model.get_submodule(path)
        assert isinstance(conv, OURS[type(pyg_conv).__name__]), path
        state, pyg_state = conv.state_dict(), pyg_conv.state_dict()
        assert sorted(state) == sorted(pyg_state), path
        for key in pyg_state:
            assert torch.equal(state[key], pyg_state[key]), f'{path}.{key}'
    assert not [n for n, m in model.named_modules()
                if type(m) in PYG.values()]
    assert sorted(model.state_dict()) == sorted(reference.state_dict())

    batch = loader_batch().to(device)
    kwargs = {} if edge is None else {edge: batch[edge]}
    if trimmed:
        kwargs.update(num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                      num_sampled_edges_per_hop=batch.num_sampled_edges)
    if trimmed:
        # With the counts, to_fused's model computes only the rows each next
        # layer reads and returns the seeds' (PyG's trimmed model returns
        # the seeds' and their first hop's): the seeds' rows are compared.
        model, reference = SeedRows(model, batch), SeedRows(reference, batch)
    for train in (False, True):
        model.train(train)
        reference.train(train)
        assert_same(output_and_grads(model, batch.x, batch.edge_index,
                                     kwargs),
                    output_and_grads(reference, batch.x, batch.edge_index,
                                     kwargs), **F32)


class SeedRows(torch.nn.Module):
    def __init__(self, model, batch):
        super().__init__()
        self.model, self.batch_size = model, batch.batch_size

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)[:self.batch_size]


# ------------------------------------------------------------ bad inputs ---
# Run in the namespace of tests/bad_inputs_child.py (torch, dev, the 6-node
# graph ei, x = randn(6, 4), t(values)) after PRELUDE.
PRELUDE = '''
import pyg_fusesample.nn as fnn

def make(layer, in_channels=4, **kwargs):
    args = (in_channels, 8) + ((2, ) if layer == 'RGCNConv' else ())
    return getattr(fnn, layer)(*args, **kwargs).to(dev)

def call(conv, x, edge_index, **kwargs):
    if type(conv).__name__ == 'RGCNConv':
        kwargs.setdefault('edge_type', torch.zeros(
            edge_index.size(-1), dtype=torch.long, device=dev))
    return conv(x, edge_index, **kwargs)

def twice(conv, x, edge_index, **kwargs):
    # An error found on the device without a sync is raised by a later call.
    call(conv, x, edge_index, **kwargs)
    if dev == 'cuda':
        torch.cuda.synchronize()
    return call(conv, x, edge_index, **kwargs)
'''
BAD_CALLS = {
    'feature_width': "call(make({L}), torch.randn(N, 5, device=dev), ei)",
    'source_id_out_of_range': "call(make({L}), x, t([[0, N], [1, 2]]))",
    'target_id_out_of_range': "call(make({L}), x, t([[0, 1], [1, N]]))",
    'negative_id': "call(make({L}), x, t([[0, -1], [1, 2]]))",
    'float_edge_index': "call(make({L}), x, ei.float())",
    'one_dim_edge_index': "call(make({L}), x, ei[0])",
}
BIPARTITE_CALL = "call(make({L}, (4, 4)), (x, x[:3]), ei)"  # targets up to 5
BAD_CASES = {f'{layer}/{what}': code.format(L=repr(layer))
             for layer in LAYERS for what, code in BAD_CALLS.items()}
BAD_CASES.update({f'{layer}/target_beyond_x_dst':
                  BIPARTITE_CALL.format(L=repr(layer))
                  for layer in ('SAGEConv', 'GATConv', 'RGCNConv')})
BAD_CASES.update({
    # (on a GPU the error word reports a bad relation at the next call)
    'RGCNConv/edge_type_out_of_range':
        "twice(make('RGCNConv'), x, ei, edge_type=t([0, 1, 2, 0, 1, 0, 1]))",
    'RGCNConv/edge_type_negative':
        "twice(make('RGCNConv'), x, ei, edge_type=t([0, 1, -1, 0, 1, 0, 1]))",
    'RGCNConv/edge_type_length':
        "call(make('RGCNConv'), x, ei, edge_type=t([0, 1, 1]))",
    'GCNConv/edge_weight_length':
        "call(make('GCNConv'), x, ei, edge_weight=torch.rand(3, device=dev))",
    'GATConv/edge_attr_width':
        "call(make('GATConv', edge_dim=3), x, ei,"
        " edge_attr=torch.rand(7, 2, device=dev))",
})
ERRORS = ('ValueError', 'IndexError', 'RuntimeError', 'TypeError')
_bad_outcomes: Dict[str, dict] = {}


def bad_outcome(name: str, device: str) -> dict:
    """The case's outcome; all cases of a device run in one child process
    (a new one after a crash)."""
    if device not in _bad_outcomes:
        _bad_outcomes[device] = run_cases(
            [(n, PRELUDE + code) for n, code in BAD_CASES.items()], device)
    return _bad_outcomes[device][name]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('name', list(BAD_CASES))
def test_bad_input_raises(name, device):
    outcome = bad_outcome(name, device)
    assert 'crash' not in outcome, (
        f"{name} crashed the process ({outcome.get('crash')}): "
        f"{outcome.get('stderr', '')[-1500:]}")
    assert not outcome['ok'], f'{name} returned instead of raising'
    assert not outcome.get('lost'), (
        f"{name} lost the CUDA context instead of raising: {outcome['msg']}")
    assert set(ERRORS) & set(outcome['mro']), (
        f"{name} raised {outcome['type']}: {outcome['msg']}")
    assert outcome['msg'].strip(), f"{name} raised {outcome['type']} with " \
                                   f"no message"


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('out_channels,bipartite', [(16, False), (256, False),
                                                     (256, True)])
@pytest.mark.parametrize('amp', [True, False])
def test_odd_widths_padded_without_changing_the_result(
        device, out_channels, bipartite, amp, monkeypatch):
    # SAGEConv copies a 70-wide x into rows padded with zeros to 16 bytes
    # (aligned GEMMs: 72 values, in bf16 under autocast and in fp32 on a
    # GPU; not in fp32 on the CPU) and pads W's input width: outputs and
    # every gradient are those of the unpadded computation up to rounding
    # (linear_first or not, x_dst a prefix of x or not).
    from pyg_fusesample.ops import aggregate_linear as al
    torch.manual_seed(0)
    data = power_law_graph(400, 6, 70, 3, seed=0)
    b = next(iter(FusedNeighborLoader(data, num_neighbors=[5, 3],
                                      batch_size=32))).to(device)
    conv = SAGEConv(70, out_channels).to(device)
    T = b.num_sampled_nodes[0] + b.num_sampled_nodes[1]

    cast, pads = al._cast, []

    def spy(t, dtype, pad):
        pads.append(pad)
        return cast(t, dtype, pad)
    monkeypatch.setattr(al, '_cast', spy)

    def run(align_bytes, dtype=torch.float32, amp=amp):
        monkeypatch.setattr(al, '_ALIGN_BYTES', align_bytes)
        c = copy.deepcopy(conv).to(dtype)
        x = b.x.detach().to(dtype).requires_grad_()
        x_dst = x[:T].detach().clone().requires_grad_() if bipartite else None
        with torch.autocast(device, dtype=torch.bfloat16, enabled=amp):
            out = c((x, x_dst) if bipartite else x,
                    b.edge_index.narrow(1, 0, b.num_sampled_edges[0]
                                        + b.num_sampled_edges[1]))
        out.to(dtype).pow(2).sum().backward()
        grads = {n: p.grad for n, p in c.named_parameters()}
        grads['x'] = x.grad
        if bipartite:
            grads['x_dst'] = x_dst.grad
        grads['out'] = out
        return grads

    padded = run(16)
    if not amp and device == 'cpu':
        assert pads == []  # (fp32 on the CPU: no copy)
        return
    assert set(pads) == {2}  # (70 -> 72: the padded path ran)
    pads.clear()
    plain = run(2 if amp else 4)  # (bf16 / fp32: one value, no padding)
    assert set(pads) == ({0} if amp else set())
    assert padded['out'].dtype == (torch.bfloat16 if amp else torch.float32)
    assert padded.keys() == plain.keys()
    if not amp:  # (other cuBLAS kernels, other summation orders)
        for name in plain:
            torch.testing.assert_close(padded[name], plain[name], rtol=1e-4,
                                       atol=1e-4)
        return
    # bf16: both within bf16's rounding of the float64 computation, at each
    # tensor's scale: cuBLAS may split a weight gradient's sum over rows
    # and round the partial sums to bf16 (an H200 did, for the aligned
    # shapes: one bf16 ulp of a sum of ~300 is 2), as for PyG's layers
    # under autocast
    exact = run(2, torch.float64, amp=False)
    for name, want in exact.items():
        scale = want.detach().abs().max().item()
        for got in (padded[name], plain[name]):
            assert got.shape == want.shape, name
            err = (got.detach().double() - want.detach()).abs().max().item()
            assert err <= 2 ** -5 * scale, (name, err, scale)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16,
                                   torch.float64])
@pytest.mark.parametrize('rows,cols', [(1, 3), (1000, 40), (16385, 256)])
def test_column_sums_equal_the_sum_over_rows(device, dtype, rows, cols,
                                             monkeypatch):
    # The bias gradient's column sums, by ATen's reduction and as a GEMM
    # against a row of ones (the GPU's path for large gradients, forced here
    # for every size): both the float64 sum up to the dtype's rounding.
    from pyg_fusesample.ops import aggregate_linear as al
    g = torch.randn(rows, cols, generator=torch.Generator().manual_seed(0),
                    dtype=torch.float64).to(device, dtype)
    want = g.double().sum(0)
    tol = {torch.float64: 1e-12, torch.float32: 1e-5,
           torch.bfloat16: 2 ** -7}[dtype] * (1 + rows ** 0.5)
    for threshold in (1 << 62, 0):
        monkeypatch.setattr(al, '_GEMM_COLUMN_SUMS', threshold)
        got = al.column_sums(g)
        assert got.shape == (cols, ) and got.dtype == dtype
        assert (got.double() - want).abs().max().item() <= tol * (
            1 + want.abs().max().item())


@pytest.mark.cuda
def test_sage_bias_gradient_as_a_gemm_equals_the_reduction(monkeypatch):
    # SAGEConv's backward with the bias gradient as a GEMM (threshold 0) and
    # as ATen's reduction: the same gradients.
    from pyg_fusesample.ops import aggregate_linear as al
    data = power_law_graph(400, 6, 32, 3, seed=0)
    b = next(iter(FusedNeighborLoader(data, num_neighbors=[5, 3],
                                      batch_size=32))).to('cuda')
    conv = SAGEConv(32, 64).to('cuda')
    grads = []
    for threshold in (1 << 62, 0):
        monkeypatch.setattr(al, '_GEMM_COLUMN_SUMS', threshold)
        conv.zero_grad()
        conv(b.x, b.edge_index).pow(2).sum().backward()
        grads.append({n: p.grad.clone() for n, p in conv.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], rtol=1e-5,
                                   atol=1e-5)
