"""CUDA graph replay inside fusesample::sage_tree (FusedGraphSAGE's eager
step): replayed steps compute what eager ones compute, hand out fresh
tensors, draw new neighbours on every replay, fall back (with a warning) when
a recording is busy, and leave CapturedStep working."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import pyg_fusesample  # noqa: F401
from pyg_fusesample.nn import CapturedStep, FusedGraphSAGE

pytestmark = pytest.mark.cuda

N, IN, HID, OUT, B = 64, 6, 8, 4, 16


def ring(degree=3):
    """Every node has exactly `degree` in-neighbours: with fan-outs >= degree
    the tree is the same on every draw (only the order of children varies),
    so replayed and eager steps can be compared value by value."""
    dst = torch.arange(N).repeat_interleave(degree)
    src = (dst + torch.arange(1, degree + 1).repeat(N)) % N
    return torch.stack([src, dst]).cuda()


def make(replay, aggr='mean'):
    torch.manual_seed(0)
    model = FusedGraphSAGE(IN, HID, OUT, 2, [3, 3], aggr=aggr,
                           replay=replay).cuda().train()
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def train(model, opt, x, ei, steps, amp=False):
    y = torch.arange(N, device='cuda') % OUT
    outs = []
    for i in range(steps):
        seeds = torch.arange(i, i + B, device='cuda') % N
        opt.zero_grad(set_to_none=True)
        with torch.autocast('cuda', dtype=torch.bfloat16, enabled=amp):
            out = model(x, ei, seeds)
        F.cross_entropy(out.float(), y[seeds]).backward()
        outs.append((out.detach(), [p.grad.clone() for p in model.parameters()]))
        opt.step()
    return outs


@pytest.mark.parametrize('aggr', ['mean', 'max'])
@pytest.mark.parametrize('amp', [False, True])
def test_replayed_steps_match_eager(aggr, amp):
    ei = ring()
    x = torch.randn(N, IN, device='cuda')
    eager = train(*make(False, aggr), x, ei, 6, amp)
    replayed = train(*make(True, aggr), x, ei, 6, amp)
    tol = dict(rtol=2e-2, atol=2e-2) if amp else {}
    for (out, grads), (exp, exp_grads) in zip(replayed, eager):
        torch.testing.assert_close(out, exp, **tol)
        for g, e in zip(grads, exp_grads):
            torch.testing.assert_close(g, e, **tol)


def test_outputs_are_fresh_and_draws_change():
    # a hub graph: 3 of 40 in-neighbours drawn per step
    dst = torch.zeros(40, dtype=torch.long)
    ei = torch.stack([torch.arange(1, 41), dst]).cuda()
    x = torch.randn(N, IN, device='cuda')
    model, opt = make(True)
    seeds = torch.zeros(B, dtype=torch.long, device='cuda')
    outs = []
    for _ in range(5):  # no optimizer step: only the draws change
        out = model(x, ei, seeds)
        out.sum().backward()
        outs.append(out.detach())
    kept = outs[2].clone()
    model(x, ei, seeds).sum().backward()
    assert torch.equal(outs[2], kept)  # a later replay did not overwrite it
    assert not all(torch.equal(outs[2], o) for o in outs[3:])


def test_busy_recording_runs_eagerly_with_a_warning():
    ei, x = ring(), torch.randn(N, IN, device='cuda')
    model, _ = make(True)
    seeds = torch.arange(B, device='cuda')
    for _ in range(3):  # recorded on the second call
        model(x, ei, seeds).sum().backward()
    first = model(x, ei, seeds)
    with pytest.warns(UserWarning, match='still waiting for its backward'):
        second = model(x, ei, seeds)
    torch.testing.assert_close(first, second)  # same tree (ring graph)
    model.zero_grad()
    (first.sum() + second.sum()).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.replay = False
    (2 * model(x, ei, seeds).sum()).backward()
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g, p.grad)


def test_captured_step_still_records_the_op():
    ei, x = ring(), torch.randn(N, IN, device='cuda')
    y = torch.arange(N, device='cuda') % OUT
    torch.manual_seed(0)
    model = FusedGraphSAGE(IN, HID, OUT, 2, [3, 3]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, capturable=True)

    def step(seeds):
        loss = F.cross_entropy(model(x, ei, seeds), y[seeds])
        loss.backward()
        opt.step()
        return loss

    graphed = CapturedStep(step, opt, B, 'cuda')
    before = [p.detach().clone() for p in model.parameters()]
    losses = [float(graphed(torch.arange(i, i + B, device='cuda') % N))
              for i in range(20)]
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))


def test_generator_warns_once_and_runs_eagerly():
    ei, x = ring(), torch.randn(N, IN, device='cuda')
    model = FusedGraphSAGE(IN, HID, OUT, 2, [3, 3],
                           generator=torch.Generator().manual_seed(0)).cuda()
    seeds = torch.arange(B, device='cuda')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        for _ in range(3):
            model(x, ei, seeds).sum().backward()
    assert any('explicit rng_seed' in str(m.message) for m in w)


def test_recordings_of_a_deleted_model_are_dropped():
    import gc
    ei, x = ring(), torch.randn(N, IN, device='cuda')
    seeds = torch.arange(512, device='cuda') % N  # big enough to see

    def train_a_model():
        torch.manual_seed(0)
        model = FusedGraphSAGE(IN, 1024, OUT, 2, [3, 3]).cuda()
        for _ in range(3):  # recorded on the second call
            model(x, ei, seeds).sum().backward()
        return model

    first = train_a_model()  # (the side stream's workspaces come first)
    gc.collect()
    after_first = torch.cuda.memory_allocated()
    second = train_a_model()
    after_second = torch.cuda.memory_allocated()
    one = after_second - after_first  # a model, its grads and a recording
    del second
    gc.collect()
    third = train_a_model()  # its lookup drops the second one's recording
    after_third = torch.cuda.memory_allocated()
    assert one > 10 * 2**20
    assert after_third - after_second < 0.5 * one
    del first, third
