"""to_fused's grouping of to_hetero SAGE convs (nn/hetero_sage_groups.py):
the per-target-type sums of SAGE calls rewritten into one call with one root
GEMM give PyG's model's outputs and every gradient (float64), with trimmed
batches too; the state dict is kept; lazy models, unsupported options and
other aggregations are left to the convs."""
import copy

import pytest
import torch
from torch_geometric.nn import SAGEConv, to_hetero
from torch_geometric.utils import trim_to_layer

from conftest import devices
from pyg_fusesample import FusedNeighborLoader
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.nn import to_fused
from pyg_fusesample.nn.hetero_sage_groups import group_all


class Net(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), 16, **kwargs)
        self.conv2 = SAGEConv((-1, -1), 8, **kwargs)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


@pytest.fixture(scope='module')
def mag():
    data = get_dataset('mag', seed=0, scale=0.0005, features='all')
    for store in data.node_stores:
        store.x = store.x.double()
    return data


def batch_of(data, device):
    loader = FusedNeighborLoader(data, [4, 3], input_nodes=('paper', None),
                                 batch_size=16, device=device, seed=2)
    return next(iter(loader))


def outputs_and_grads(model, x_dict, ei_dict):
    out = model(x_dict, ei_dict)
    loss = sum((v * torch.arange(v.numel(), device=v.device).view_as(v)
                .sin()).sum() for v in out.values())
    params = [p for p in model.parameters()]
    return out, torch.autograd.grad(loss, params, allow_unused=True)


def assert_same(a, b):
    (out_a, grads_a), (out_b, grads_b) = a, b
    assert sorted(out_a) == sorted(out_b)
    for key in out_a:
        torch.testing.assert_close(out_a[key], out_b[key], atol=1e-10,
                                   rtol=1e-9)
    for ga, gb in zip(grads_a, grads_b):
        assert (ga is None) == (gb is None)
        if ga is not None:
            torch.testing.assert_close(ga, gb, atol=1e-10, rtol=1e-9)


def hetero_model(data, batch, hetero_aggr='sum', **kwargs):
    model = to_hetero(Net(**kwargs), data.metadata(), aggr=hetero_aggr)
    model = model.double().to(batch['paper'].x.device)
    with torch.no_grad():  # lazy shapes
        model(batch.x_dict, batch.edge_index_dict)
    return model


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('aggr', ['sum', 'mean'])
@pytest.mark.parametrize('sage_aggr', ['mean', 'sum', 'max'])
def test_grouped_model_equals_pyg(mag, device, aggr, sage_aggr):
    batch = batch_of(mag, device)
    pyg = hetero_model(mag, batch, aggr, aggr=sage_aggr)
    ours = to_fused(copy.deepcopy(pyg))
    # paper (3 edge types in) and author (2) per layer: 4 sums
    assert ours.code.count('hetero_sage_sum(') == 4
    assert sorted(ours.state_dict()) == sorted(pyg.state_dict())
    for key, value in pyg.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value)
    assert_same(outputs_and_grads(ours, batch.x_dict, batch.edge_index_dict),
                outputs_and_grads(pyg, batch.x_dict, batch.edge_index_dict))


@pytest.mark.parametrize('device', devices())
def test_trimmed_layers(mag, device):
    # One to_hetero module per layer with PyG's trim_to_layer between them
    # (as the layers benchmark's hetero model): prefixes of the batch.
    batch = batch_of(mag, device)

    class Layer(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.conv = SAGEConv((-1, -1), width)

        def forward(self, x, edge_index):
            return self.conv(x, edge_index)

    layers = torch.nn.ModuleList(
        to_hetero(Layer(w), mag.metadata(), aggr='sum') for w in (16, 8))

    def run(mods):
        x, ei = batch.x_dict, batch.edge_index_dict
        for i, layer in enumerate(mods):
            x, ei, _ = trim_to_layer(i, batch.num_sampled_nodes_dict,
                                     batch.num_sampled_edges_dict, x, ei)
            x = layer(x, ei)
            x = {k: v.relu() for k, v in x.items()} if i == 0 else x
        return x

    layers = layers.double().to(device)
    with torch.no_grad():
        run(layers)
    ours = to_fused(copy.deepcopy(layers))
    assert sum(group_all(ours).values()) == 0  # (to_fused grouped them)
    assert sum(m.code.count('hetero_sage_sum(') for m in ours) == 4

    class Wrap(torch.nn.Module):
        def __init__(self, mods):
            super().__init__()
            self.mods = mods

        def forward(self, x_dict, ei_dict):
            return run(self.mods)

    assert_same(outputs_and_grads(Wrap(ours), None, None),
                outputs_and_grads(Wrap(layers), None, None))


def test_lazy_model_is_grouped_after_its_first_call(mag):
    # to_fused before the first call: the convs initialise their lazy
    # weights in PyG's call order (so from the RNG as PyG's model does),
    # then the sums are grouped.
    batch = batch_of(mag, 'cpu')
    pyg = to_hetero(Net(), mag.metadata(), aggr='sum').double()
    ours = to_fused(copy.deepcopy(pyg))
    assert 'hetero_sage_sum' not in ours.code
    with torch.no_grad():
        torch.manual_seed(7)
        pyg(batch.x_dict, batch.edge_index_dict)
        torch.manual_seed(7)
        ours(batch.x_dict, batch.edge_index_dict)
    assert ours.code.count('hetero_sage_sum(') == 4
    for key, value in pyg.state_dict().items():  # the same initial weights
        assert torch.equal(ours.state_dict()[key], value), key
    assert_same(outputs_and_grads(ours, batch.x_dict, batch.edge_index_dict),
                outputs_and_grads(pyg, batch.x_dict, batch.edge_index_dict))


def test_not_grouped(mag):
    batch = batch_of(mag, 'cpu')
    # normalize=True: each conv's output is normalised before the sum
    model = to_fused(hetero_model(mag, batch, normalize=True))
    assert 'hetero_sage_sum' not in model.code
    # to_hetero's 'max' over edge types is no sum
    model = to_fused(hetero_model(mag, batch, hetero_aggr='max'))
    assert 'hetero_sage_sum' not in model.code
    # group=False
    model = to_fused(hetero_model(mag, batch), group=False)
    assert 'hetero_sage_sum' not in model.code
