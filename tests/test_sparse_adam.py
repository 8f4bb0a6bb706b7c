"""fusesample::sparse_adam_ and FusedSparseAdam against torch.optim.SparseAdam
(the reference): the same moments bit for bit and the same parameters (bit
for bit on CUDA; on the CPU up to torch's vectorised square root) over
several steps (float32 and float64, maximize, repeated rows in the gradient, an
empty gradient, rows not named untouched), the same state dict, the
unfused path with its warning, opcheck, bad inputs."""
import copy

import pytest
import torch
from torch.library import opcheck

from conftest import devices
from pyg_fusesample.ops import sparse_adam_
from pyg_fusesample.ops.sparse_adam import sparse_adam_step_size
from pyg_fusesample.optim import FusedSparseAdam


def sparse_grad(rows, values, num_rows):
    return torch.sparse_coo_tensor(rows.unsqueeze(0), values,
                                   (num_rows, ) + values.shape[1:])


def embedding_grads(device, dtype, R=50, D=9, steps=4, seed=0):
    """Per step a row-sparse gradient as nn.Embedding(sparse=True) gives:
    repeated rows (uncoalesced), a different set each step."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        rows = torch.randint(R, (30, ), generator=g)
        values = torch.randn(30, D, generator=g, dtype=dtype)
        out.append(sparse_grad(rows, values, R).to(device))
    return out


def assert_same_params(ours, theirs):
    """Bitwise on CUDA. On the CPU torch's vectorised square root is not
    correctly rounded (float32: a fifth of its results one ulp off the IEEE
    one, which the op computes; float64: about 1%), so an update may differ
    in its last bit."""
    if ours.device.type == 'cpu':
        torch.testing.assert_close(ours, theirs)  # (dtype's default: ulps)
    else:
        assert torch.equal(ours, theirs)


def run(optimizer_cls, param, grads, **kwargs):
    p = torch.nn.Parameter(param.clone())
    opt = optimizer_cls([p], **kwargs)
    for grad in grads:
        p.grad = grad.clone()
        opt.step()
    return p.detach(), opt


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
@pytest.mark.parametrize('kwargs', [
    dict(lr=0.01),
    dict(lr=0.3, betas=(0.5, 0.7), eps=1e-3, maximize=True),
])
def test_matches_torch_sparse_adam_bitwise(device, dtype, kwargs):
    torch.manual_seed(0)
    R, D = 50, 9
    param = torch.randn(R, D, dtype=dtype, device=device)
    grads = embedding_grads(device, dtype, R, D)
    ours, opt = run(FusedSparseAdam, param, grads, **kwargs)
    theirs, ref = run(torch.optim.SparseAdam, param, grads, **kwargs)
    assert_same_params(ours, theirs)
    (s, ), (r, ) = opt.state.values(), ref.state.values()
    assert s['step'] == r['step'] == len(grads)
    assert torch.equal(s['exp_avg'], r['exp_avg'])
    assert torch.equal(s['exp_avg_sq'], r['exp_avg_sq'])
    named = torch.cat([g.coalesce()._indices()[0] for g in grads]).unique()
    untouched = torch.ones(R, dtype=torch.bool, device=device)
    untouched[named] = False
    assert untouched.any()
    assert torch.equal(ours[untouched], param[untouched])


@pytest.mark.parametrize('device', devices())
def test_state_dict_carries_over_to_torch(device):
    R, D = 20, 4
    param = torch.randn(R, D, device=device)
    grads = embedding_grads(device, torch.float32, R, D, steps=3)
    _, opt = run(FusedSparseAdam, param, grads[:2], lr=0.05)
    p = opt.param_groups[0]['params'][0]
    ref = torch.optim.SparseAdam([p], lr=0.05)
    ref.load_state_dict(copy.deepcopy(opt.state_dict()))
    q = torch.nn.Parameter(p.detach().clone())
    opt2 = FusedSparseAdam([q], lr=0.05)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    p.grad, q.grad = grads[2].clone(), grads[2].clone()
    ref.step()
    opt2.step()
    assert_same_params(q, p)


@pytest.mark.parametrize('device', devices())
def test_empty_gradient_counts_a_step_and_changes_nothing(device):
    R, D = 10, 3
    param = torch.randn(R, D, device=device)
    empty = sparse_grad(torch.empty(0, dtype=torch.long),
                        torch.empty(0, D), R).to(device)
    ours, opt = run(FusedSparseAdam, param, [empty], lr=0.1)
    assert torch.equal(ours, param)
    assert next(iter(opt.state.values()))['step'] == 1


@pytest.mark.parametrize('device', devices())
def test_embedding_training_matches(device):
    """nn.Embedding(sparse=True) through a loss, the usual setting."""
    torch.manual_seed(1)
    emb = torch.nn.Embedding(40, 8, sparse=True).to(device)
    twin = copy.deepcopy(emb)
    opt = FusedSparseAdam(emb.parameters(), lr=0.01)
    ref = torch.optim.SparseAdam(twin.parameters(), lr=0.01)
    for _ in range(5):
        idx = torch.randint(40, (64, ), device=device)
        for module, o in ((emb, opt), (twin, ref)):
            o.zero_grad()
            module(idx).pow(2).sum().backward()
            o.step()
    assert_same_params(emb.weight, twin.weight)


def test_other_dtypes_take_torchs_path_with_a_warning():
    param = torch.randn(12, 4, dtype=torch.float16)
    grads = [sparse_grad(torch.tensor([1, 5, 5]), torch.randn(3, 4).half(), 12)]
    with pytest.warns(RuntimeWarning, match="torch's sparse_adam"):
        ours, _ = run(FusedSparseAdam, param, grads, lr=0.1)
    theirs, _ = run(torch.optim.SparseAdam, param, grads, lr=0.1)
    assert torch.equal(ours, theirs)


def test_dense_gradient_is_refused_as_torch_does():
    p = torch.nn.Parameter(torch.randn(3, 2))
    p.grad = torch.ones(3, 2)
    with pytest.raises(RuntimeError, match='dense gradients'):
        FusedSparseAdam([p]).step()


@pytest.mark.parametrize('device', devices())
def test_opcheck(device):
    R, D = 16, 5
    args = [torch.randn(R, D, device=device) for _ in range(2)] + [
        torch.rand(R, D, device=device),
        torch.tensor([0, 3, 7], device=device),
        torch.randn(3, D, device=device),
        sparse_adam_step_size(0.01, 0.9, 0.999, 2), 0.9, 0.999, 1e-8, False]
    opcheck(torch.ops.fusesample.sparse_adam_.default, args)


def test_bad_inputs():
    p, m, v = (torch.zeros(6, 3) for _ in range(3))
    rows, vals = torch.tensor([0, 2]), torch.ones(2, 3)
    step = (0.1, 0.9, 0.999, 1e-8)
    with pytest.raises(RuntimeError, match="'param' must be float32 or float64"):
        sparse_adam_(p.half(), m.half(), v.half(), rows, vals.half(), *step)
    with pytest.raises(RuntimeError, match="'exp_avg' has shape"):
        sparse_adam_(p, torch.zeros(5, 3), v, rows, vals, *step)
    with pytest.raises(RuntimeError, match="'rows' must be"):
        sparse_adam_(p, m, v, rows.int(), vals, *step)
    with pytest.raises(RuntimeError, match="'values' must hold one row"):
        sparse_adam_(p, m, v, rows, torch.ones(2, 4), *step)
    with pytest.raises(RuntimeError, match=r"'rows' holds ids in \[0, 6\]"):
        sparse_adam_(p, m, v, torch.tensor([0, 6]), vals, *step)
    with pytest.raises(RuntimeError, match="'exp_avg_sq' must be contiguous"):
        sparse_adam_(p, m, torch.zeros(3, 6).t(), rows, vals, *step)


@pytest.mark.parametrize('device', devices())
def test_param_groups_tensor_lr_and_closure(device):
    """Several groups with their own hyper-parameters, a tensor lr, a
    parameter without a gradient, and a closure, as torch's optimizer."""
    torch.manual_seed(2)
    params = [torch.randn(30, 6, device=device) for _ in range(3)]
    grads = [embedding_grads(device, torch.float32, 30, 6, steps=2, seed=s)
             for s in range(2)]

    def train(cls):
        ps = [torch.nn.Parameter(p.clone()) for p in params]
        opt = cls([{'params': ps[:1]},
                   {'params': ps[1:], 'lr': torch.tensor(0.05),
                    'betas': (0.8, 0.99)}], lr=0.02)
        for step in range(2):
            def closure():
                ps[0].grad = grads[0][step].clone()
                ps[1].grad = grads[1][step].clone()
                return torch.tensor(1.0)  # ps[2] keeps no gradient
            assert float(opt.step(closure)) == 1.0
        return ps

    for ours, theirs in zip(train(FusedSparseAdam),
                            train(torch.optim.SparseAdam)):
        assert_same_params(ours.detach(), theirs.detach())
    assert torch.equal(train(FusedSparseAdam)[2], params[2])
