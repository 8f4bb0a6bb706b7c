"""fusesample::skipgram_loss against PyG's Node2Vec.loss arithmetic (a plain
PyTorch reference): values and gradients per device and dtype, float64
gradcheck, opcheck, NaN for a group without pairs as PyG's empty mean gives,
bad inputs; FusedNode2Vec.loss against PyG's own Node2Vec.loss on the same
windows, with sparse and dense gradients."""
import pytest
import torch
from torch.library import opcheck
from torch_geometric.nn import Node2Vec

from conftest import devices
from pyg_fusesample.nn import FusedNode2Vec
from pyg_fusesample.ops import skipgram_loss

EPS = 1e-15


def reference(h, pos, neg, eps=EPS):
    # PyG's Node2Vec.loss on rows of h (its embedding lookups as indexing).
    def group(w, positive):
        out = (h[w[:, :1]] * h[w[:, 1:]]).sum(-1).view(-1)
        s = torch.sigmoid(out)
        return -torch.log((s if positive else 1 - s) + eps).mean()
    return group(pos, True) + group(neg, False)


def inputs(device, dtype=torch.float64, U=40, D=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(U, D, generator=g, dtype=dtype)
    # Repeated ids within and across windows; a different width for neg.
    pos = torch.randint(U, (30, 5), generator=g)
    neg = torch.randint(U, (45, 4), generator=g)
    return h.to(device), pos.to(device), neg.to(device)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.float64, torch.float32])
def test_matches_pyg_loss(device, dtype):
    h, pos, neg = inputs(device, dtype)
    h.requires_grad_(True)
    ours = skipgram_loss(h, pos, neg)
    ref = reference(h, pos, neg)
    assert ours.shape == () and ours.dtype == dtype and ours.device == h.device
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else {}
    torch.testing.assert_close(ours, ref, **tol)
    (g_ours, ), (g_ref, ) = (torch.autograd.grad(x, h) for x in (ours, ref))
    torch.testing.assert_close(g_ours, g_ref, **tol)


@pytest.mark.parametrize('device', devices())
def test_gradcheck_and_opcheck(device):
    h, pos, neg = inputs(device, U=15, D=5)
    h.requires_grad_(True)
    # CUDA's backward scatters with float64 atomics: the order of the adds,
    # and so the last bits, vary between calls (documented).
    tol = 1e-12 if device == 'cuda' else 0.0
    assert torch.autograd.gradcheck(lambda h: skipgram_loss(h, pos, neg),
                                    (h, ), nondet_tol=tol)
    # A scaled upstream gradient (the op reads it on the device).
    assert torch.autograd.gradcheck(
        lambda h: 3.5 * skipgram_loss(h, pos, neg), (h, ), nondet_tol=tol)
    opcheck(torch.ops.fusesample.skipgram_loss.default,
            (h, pos, neg, EPS, True))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_16_bit_close_to_float32(device, dtype):
    h, pos, neg = inputs(device, torch.float32, D=16)
    h = h * 0.25
    ref = skipgram_loss(h, pos, neg)
    low = h.to(dtype).requires_grad_(True)
    ours = skipgram_loss(low, pos, neg)
    assert ours.dtype == dtype
    torch.testing.assert_close(ours.float(), ref, rtol=2e-2, atol=2e-2)
    ours.backward()
    assert low.grad.dtype == dtype and torch.isfinite(low.grad).all()


@pytest.mark.parametrize('device', devices())
def test_a_group_without_pairs_is_nan_as_in_pyg(device):
    h, pos, neg = inputs(device)
    single = pos[:, :1]  # context_size 1: windows without a context node
    assert torch.isnan(reference(h, single, neg))
    assert torch.isnan(skipgram_loss(h, single, neg))
    empty = neg[:0]
    assert torch.isnan(skipgram_loss(h, pos, empty))


@pytest.mark.parametrize('device', devices())
def test_bad_inputs(device):
    h, pos, neg = inputs(device)
    with pytest.raises(RuntimeError, match="'h' must be 2-dimensional"):
        skipgram_loss(h[0], pos, neg)
    with pytest.raises(RuntimeError, match="'pos' must be 2-dimensional"):
        skipgram_loss(h, pos[0], neg)
    with pytest.raises(RuntimeError, match="'neg' must be Long"):
        skipgram_loss(h, pos, neg.int())
    with pytest.raises(RuntimeError, match="'h' must be float64"):
        skipgram_loss(h.long(), pos, neg)
    bad = pos.clone()
    bad[3, 2] = h.size(0)
    with pytest.raises(RuntimeError, match=r"'pos' holds ids in \[\d+, 40\]"):
        skipgram_loss(h, bad, neg)
    if device == 'cuda':
        with pytest.raises(RuntimeError, match="'pos' is on cpu"):
            skipgram_loss(h, pos.cpu(), neg)


@pytest.mark.cuda
@pytest.mark.parametrize('D', [64, 136, 7, 130])
def test_cuda_matches_cpu(D):
    # (float32 rows of a multiple of 4 are scattered four columns an atomic,
    # over one or more passes of the warp; other widths one column)
    h, pos, neg = inputs('cpu', torch.float32, U=500, D=D)
    cpu = h.clone().requires_grad_(True)
    gpu = h.cuda().requires_grad_(True)
    a = skipgram_loss(cpu, pos, neg)
    b = skipgram_loss(gpu, pos.cuda(), neg.cuda())
    torch.testing.assert_close(b.cpu(), a)
    a.backward()
    b.backward()
    torch.testing.assert_close(gpu.grad.cpu(), cpu.grad)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('sparse', [True, False])
def test_fused_node2vec_loss_equals_pyg(device, sparse):
    g = torch.Generator().manual_seed(3)
    edge_index = torch.randint(80, (2, 500), generator=g)
    model = FusedNode2Vec(edge_index, embedding_dim=16, walk_length=8,
                          context_size=4, walks_per_node=2,
                          num_negative_samples=2, sparse=sparse,
                          seed=1).to(device)
    pos, neg = model.sample(torch.arange(30))
    grads = []
    for loss_fn in (model.loss, lambda p, n: Node2Vec.loss(model, p, n)):
        model.embedding.weight.grad = None
        loss = loss_fn(pos, neg)
        loss.backward()
        grad = model.embedding.weight.grad
        assert grad.is_sparse == sparse
        grads.append((loss.detach(), grad.to_dense() if sparse else grad))
    (a, ga), (b, gb) = grads
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(ga, gb)
