"""CUDA graphs that outlive a clear of ATen's cuBLAS workspaces: the eager
FusedGraphSAGE step (replayed from the op's own recordings) and CapturedStep
and CapturedBatchStep (its SAGE backward branching onto a second stream, as
by default) keep running, and write nothing into freed memory, after
torch._C._cuda_clearCublasWorkspaces() (what torch.compile's CUDA graphs
do around each recording) or after a model compiled with
mode='reduce-overhead' ran. Before the graphs owned their workspace, a
FusedGraphSAGE replay after that died with 'unspecified launch failure' on
a Reddit-like graph (a fault kills the process's CUDA context, so each case
runs in a subprocess)."""
import pytest

from example_runner import run_subprocess

pytestmark = pytest.mark.cuda

SCRIPT = r'''
import sys
import torch
import torch.nn.functional as F
from pyg_fusesample.nn import CapturedStep, FusedGraphSAGE

mode, trigger = sys.argv[1:3]
torch.manual_seed(0)
n, f, c, b = 20000, 602, 41, 1024  # (Reddit's widths)
ei = torch.randint(n, (2, 400000), device='cuda')
x = torch.randn(n, f, device='cuda')
y = torch.randint(c, (n,), device='cuda')
model = FusedGraphSAGE(f, 256, c, 2, [15, 10]).cuda()
opt = torch.optim.AdamW(model.parameters(), capturable=mode == 'captured')


def step(seeds):
    loss = F.cross_entropy(model(x, ei, seeds), y[seeds])
    loss.backward()
    opt.step()
    return loss


def eager(seeds):
    opt.zero_grad(set_to_none=True)
    return step(seeds)


def seeds():
    return torch.randint(n, (b,), device='cuda')


run = CapturedStep(step, opt, b, 'cuda') if mode == 'captured' else eager
if mode == 'batch':  # PyG's GraphSAGE swapped for ours, on loader batches:
    # its backward branches onto a second stream in the capture
    from torch_geometric.data import Data
    from torch_geometric.nn.models import GraphSAGE
    from pyg_fusesample.loader import FusedNeighborLoader
    from pyg_fusesample.nn import CapturedBatchStep, to_fused
    sage = to_fused(GraphSAGE(f, 256, 2, c)).cuda()
    opt = torch.optim.AdamW(sage.parameters(), capturable=True)
    loader = FusedNeighborLoader(Data(x=x, y=y, edge_index=ei, num_nodes=n),
                                 [15, 10], batch_size=b, shuffle=True,
                                 drop_last=True)

    def batches():
        while True:
            yield from loader
    stream = batches()

    def batch_step(batch):
        out = sage(batch.x, batch.edge_index,
                   num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                   num_sampled_edges_per_hop=batch.num_sampled_edges)
        loss = F.cross_entropy(out[:batch.batch_size],
                               batch.y[:batch.batch_size])
        loss.backward()
        opt.step()
        return loss
    captured = CapturedBatchStep(batch_step, opt, margin=1.0)
    run = lambda _: captured(next(stream))  # noqa: E731
for _ in range(4):  # (the eager step records on the 2nd, replays after)
    run(seeds())
torch.cuda.synchronize()
if trigger == 'clear':
    torch._C._cuda_clearCublasWorkspaces()
else:
    lin = torch.compile(torch.nn.Linear(64, 64).cuda(), mode='reduce-overhead')
    for _ in range(3):
        lin(torch.randn(8, 64, device='cuda')).sum()
# A freed workspace goes back to the allocator's blocks of its stream: fill
# blocks of its size on every pooled stream (CapturedStep's, and the one
# FusedGraphSAGE's recordings were captured on before they had their own,
# are among them); their values must stay.
sentinels = []
for _ in range(32):
    with torch.cuda.stream(torch.cuda.Stream()):
        sentinels += [torch.full((m, ), 7.0, device='cuda')
                      for m in (8 << 20, 8 << 20, 1 << 20, 1 << 20)]
torch.cuda.synchronize()
losses = torch.stack([run(seeds()).detach() for _ in range(6)])
torch.cuda.synchronize()
assert bool(torch.isfinite(losses).all()), losses
assert all(bool((s == 7.0).all()) for s in sentinels), \
    'a replay wrote into memory it does not own'
print('OK')
'''


@pytest.mark.parametrize('mode', ['replay', 'captured', 'batch'])
@pytest.mark.parametrize('trigger', ['clear', 'compile'])
def test_graphs_survive_a_workspace_clear(tmp_path, mode, trigger):
    script = tmp_path / 'replay_after_clear.py'
    script.write_text(SCRIPT)
    code, out, err = run_subprocess(script, [mode, trigger], timeout=300)
    assert code == 0 and 'OK' in out, err[-3000:]
