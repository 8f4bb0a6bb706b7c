"""torch.compile(fullgraph=True) of models with the mini-batch layers: one
graph for every batch (no recompile per batch shape), outputs and
gradients equal to the eager model's, trimmed and not."""
import copy

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import GAT, GraphSAGE

from pyg_fusesample import FusedNeighborLoader
from pyg_fusesample.nn import to_fused

from conftest import devices


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def batches(device, count=4):
    g = torch.Generator().manual_seed(0)
    n = 1500
    data = Data(x=torch.randn(n, 24, generator=g),
                edge_index=torch.randint(0, n, (2, 15000), generator=g),
                num_nodes=n).to(device)
    loader = FusedNeighborLoader(data, num_neighbors=[5, 4, 3],
                                 batch_size=48, shuffle=True, seed=0)
    return [b for _, b in zip(range(count), loader)]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('model_cls', [GraphSAGE, GAT])
@pytest.mark.parametrize('trim', [True, False])
def test_compiled_equals_eager(model_cls, trim, device, monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, 'recompile_limit', 1)
    torch.manual_seed(0)
    eager = to_fused(model_cls(24, 32, 3, 5)).to(device)
    compiled_model = copy.deepcopy(eager)
    compiled = torch.compile(compiled_model, fullgraph=True, dynamic=True)
    for b in batches(device):  # shapes differ per batch: one graph serves all
        kwargs = dict(num_sampled_nodes_per_hop=b.num_sampled_nodes,
                      num_sampled_edges_per_hop=b.num_sampled_edges) \
            if trim else {}
        outs = []
        for model, fn in ((eager, eager), (compiled_model, compiled)):
            model.zero_grad()
            out = fn(b.x, b.edge_index, **kwargs)[:b.batch_size]
            out.square().sum().backward()
            outs.append((out.detach(), [p.grad.clone()
                                        for p in model.parameters()]))
        torch.testing.assert_close(outs[0][0], outs[1][0], atol=1e-5,
                                   rtol=1e-4)
        for a, c in zip(outs[0][1], outs[1][1]):
            torch.testing.assert_close(a, c, atol=1e-4, rtol=1e-4)
