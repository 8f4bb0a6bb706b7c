"""fusesample::sample_aggregate (and its backward) against the Python
reference, plus gradients, statistics, determinism, opcheck and bad
inputs."""
import math

import pytest
import torch

import pyg_fusesample  # noqa: F401
from pyg_fusesample.ops import csc_from_coo, sample_aggregate

import reference as ref
import reference_aggregate as ra
from conftest import devices

REDUCES = ['sum', 'mean', 'max']
NUM_NODES, HUB, HUB_DEGREE, ISOLATED = 600, 0, 500, 10


def hub_graph(row_dtype=torch.long, seed=0):
    """600 nodes: node 0 has in-degree 500 (the hub), the last 10 are
    isolated, the rest have small random in-degrees (several below 5)."""
    g = torch.Generator().manual_seed(seed)
    active = NUM_NODES - ISOLATED
    ei = ref.random_graph(NUM_NODES, 1500, seed, hubs=0, isolated=ISOLATED)
    ei = ei[:, ei[1] != HUB]
    hub_src = 1 + torch.randperm(active - 1, generator=g)[:HUB_DEGREE]
    hub_ei = torch.stack([hub_src, torch.full_like(hub_src, HUB)])
    ei = torch.cat([ei, hub_ei], dim=1)
    colptr, row, _ = csc_from_coo(ei, NUM_NODES)
    return colptr, row.to(row_dtype)


def features(num_rows=NUM_NODES, num_features=8, dtype=torch.float32,
             seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(num_rows, num_features, generator=g).to(dtype)


def targets():
    """The hub, isolated nodes, -1 padding, duplicates, random nodes."""
    g = torch.Generator().manual_seed(1)
    rand = torch.randint(0, NUM_NODES, (24, ), generator=g)
    fixed = torch.tensor([HUB, NUM_NODES - 1, -1, 3, 3, HUB, -1, 595, 7])
    return torch.cat([fixed, rand])


def small_graph(seed=0, num_nodes=20, num_edges=70, row_dtype=torch.long):
    ei = ref.random_graph(num_nodes, num_edges, seed, hubs=1, isolated=2)
    colptr, row, _ = csc_from_coo(ei, num_nodes)
    return colptr, row.to(row_dtype)


def to(device, *tensors):
    return tuple(t.to(device) for t in tensors)


# 1. forward vs reference ####################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('k', [-1, 0, 2, 5, 100])  # 100 > 64: bitmap Floyd
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('reduce', REDUCES)
@pytest.mark.parametrize('row_dtype', [torch.long, torch.int])
def test_matches_reference(device, k, replace, reduce, row_dtype):
    colptr, row = hub_graph(row_dtype)
    x, target = features(), targets()
    rng_seed, level = 12345, 1
    out = sample_aggregate(*to(device, colptr, row, x, target), k, reduce,
                           replace, rng_seed, level)
    exp_out, exp_nbr, exp_arg = ra.sample_aggregate(
        colptr, row, x, target, k, reduce, replace, rng_seed, level)
    assert out.out.dtype == x.dtype and out.out.device.type == device
    assert out.nbr.dtype == torch.long
    assert torch.equal(out.nbr.cpu(), exp_nbr)
    assert torch.equal(out.arg.cpu(), exp_arg)
    torch.testing.assert_close(out.out.cpu(), exp_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('device', devices())
def test_output_shapes_and_padding(device):
    colptr, row = hub_graph()
    x = features()
    target = torch.tensor([-1, NUM_NODES - 1, HUB])
    for k, reduce in [(5, 'max'), (-1, 'mean'), (0, 'sum')]:
        out = sample_aggregate(*to(device, colptr, row, x, target), k, reduce,
                               rng_seed=3)
        assert out.out.shape == (3, 8)
        assert out.nbr.shape == (3, max(k, 0))
        assert out.arg.shape == ((3, 8) if reduce == 'max' else (0, ))
        # padding and isolated targets: zero output, no neighbours, arg -1
        assert torch.equal(out.out[:2].cpu(), torch.zeros(2, 8))
        assert bool((out.nbr[:2] == -1).all())
        if reduce == 'max':
            assert bool((out.arg[:2] == -1).all())
        if k > 0:  # the hub fills all k slots with distinct neighbours
            assert out.nbr[2].unique().numel() == k
        if k == 0:
            assert torch.equal(out.out.cpu(), torch.zeros(3, 8))


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('reduce', REDUCES)
def test_degree_below_k_takes_all_neighbours(device, reduce):
    colptr, row = hub_graph()
    x = features()
    deg = colptr.diff()
    target = torch.nonzero((deg > 0) & (deg < 5)).view(-1)[:10]
    out = sample_aggregate(*to(device, colptr, row, x, target), 5, reduce,
                           rng_seed=9)
    full = sample_aggregate(colptr, row, x, target, -1, reduce)
    for t, v in enumerate(target.tolist()):
        d = int(deg[v])
        nbr = out.nbr[t].cpu()
        # every in-neighbour once, in CSC order, the rest of the slots -1
        assert torch.equal(nbr[:d], row[colptr[v]:colptr[v + 1]])
        assert bool((nbr[d:] == -1).all())
    torch.testing.assert_close(out.out.cpu(), full.out)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('reduce', REDUCES)
def test_empty_target_and_empty_graph(device, reduce):
    colptr, row = hub_graph()
    x, empty = features(), torch.empty(0, dtype=torch.long)
    for k in (-1, 0, 3):
        out = sample_aggregate(*to(device, colptr, row, x, empty), k, reduce)
        assert out.out.shape == (0, 8) and out.nbr.shape == (0, max(k, 0))
    # nodes but no edges, with and without replacement
    colptr0 = torch.zeros(6, dtype=torch.long)
    target = torch.tensor([0, 4, -1])
    for replace in (False, True):
        out = sample_aggregate(*to(device, colptr0, empty, features(6),
                                   target), 3, reduce, replace)
        assert torch.equal(out.out.cpu(), torch.zeros(3, 8))
        assert torch.equal(out.nbr.cpu(), torch.full((3, 3), -1))


@pytest.mark.parametrize('device', devices())
def test_add_alias_and_noncontiguous_x(device):
    colptr, row = hub_graph()
    target = targets()
    x = features(num_features=8).t().contiguous().t()  # column-major view
    assert not x.is_contiguous()
    out = sample_aggregate(*to(device, colptr, row, x, target), 5, 'add',
                           rng_seed=4)
    exp = sample_aggregate(colptr, row, x.contiguous(), target, 5, 'sum',
                           rng_seed=4)
    assert torch.equal(out.nbr.cpu(), exp.nbr)
    torch.testing.assert_close(out.out.cpu(), exp.out)


@pytest.mark.parametrize('device', devices())
def test_bipartite_sources(device):
    """Sources index rows of x, targets the columns of the CSC graph: the
    two sets may have different sizes."""
    colptr = torch.tensor([0, 2, 2, 5])  # 3 targets
    row = torch.tensor([7, 1, 0, 9, 4])  # 10 sources
    x = features(10, 4)
    target = torch.tensor([2, 0, 1])
    out = sample_aggregate(*to(device, colptr, row, x, target), -1, 'sum')
    exp = torch.stack([x[[0, 9, 4]].sum(0), x[[7, 1]].sum(0), torch.zeros(4)])
    torch.testing.assert_close(out.out.cpu(), exp)


@pytest.mark.cuda
@pytest.mark.parametrize('dtype,tol', [
    (torch.float64, 1e-12), (torch.float32, 1e-5), (torch.float16, 1e-2),
    (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize('k,replace', [(-1, False), (5, False), (100, False),
                                       (5, True)])
@pytest.mark.parametrize('reduce', REDUCES)
@pytest.mark.parametrize('row_dtype', [torch.long, torch.int])
def test_cuda_matches_cpu(dtype, tol, k, replace, reduce, row_dtype):
    colptr, row = hub_graph(row_dtype)
    x, target = features(dtype=dtype), targets()
    args = (k, reduce, replace, 77, 2)
    cpu = sample_aggregate(colptr, row, x, target, *args)
    gpu = sample_aggregate(*to('cuda', colptr, row, x, target), *args)
    assert gpu.out.dtype == dtype
    assert torch.equal(gpu.nbr.cpu(), cpu.nbr)
    torch.testing.assert_close(gpu.out.cpu(), cpu.out, rtol=tol, atol=tol)
    if reduce == 'max':  # the maxima are elements of x: exact
        assert torch.equal(gpu.out.cpu(), cpu.out)
        assert torch.equal(gpu.arg.cpu(), cpu.arg)


# 2. gradcheck ###############################################################

@pytest.mark.parametrize('k', [-1, 2, 5])
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('reduce', REDUCES)
def test_gradcheck(k, replace, reduce):
    colptr, row = small_graph()
    x = features(20, 3, torch.float64).requires_grad_()
    target = torch.tensor([0, 5, -1, 18, 5, 19, 2, 11])  # 18, 19: isolated

    def fn(x):
        return sample_aggregate(colptr, row, x, target, k, reduce, replace,
                                rng_seed=31, level=1).out

    assert torch.autograd.gradcheck(fn, (x, ))


@pytest.mark.cuda
@pytest.mark.parametrize('k', [-1, 2, 5, 100])
@pytest.mark.parametrize('replace', [False, True])
@pytest.mark.parametrize('reduce', REDUCES)
def test_cuda_gradients_match_cpu(k, replace, reduce):
    colptr, row = hub_graph()
    target = targets()
    grads = []
    for device in ('cpu', 'cuda'):
        x = features(dtype=torch.float64).to(device).requires_grad_()
        out = sample_aggregate(*to(device, colptr, row), x, target.to(device),
                               k, reduce, replace, 5, 0).out
        grad_out = features(target.numel(), dtype=torch.float64, seed=3)
        out.backward(grad_out.to(device))
        grads.append(x.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-12, atol=1e-12)


# 3. backward vs autograd of the reference ###################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('k,replace', [(-1, False), (0, False), (3, False),
                                       (100, False), (4, True)])
@pytest.mark.parametrize('reduce', REDUCES)
def test_backward_matches_reference(device, k, replace, reduce):
    colptr, row = hub_graph()
    target = targets()
    grad_out = features(target.numel(), seed=5)
    x = features().to(device).requires_grad_()
    out = sample_aggregate(*to(device, colptr, row), x, target.to(device), k,
                           reduce, replace, 99, 3).out
    out.backward(grad_out.to(device))
    x_ref = features().requires_grad_()
    exp, _, _ = ra.sample_aggregate(colptr, row, x_ref, target, k, reduce,
                                    replace, 99, 3)
    exp.backward(grad_out)
    torch.testing.assert_close(x.grad.cpu(), x_ref.grad, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.cuda
@pytest.mark.parametrize('dtype,tol', [(torch.float16, 2e-2),
                                       (torch.bfloat16, 5e-2)])
@pytest.mark.parametrize('k,replace', [(-1, False), (3, False), (4, True)])
@pytest.mark.parametrize('reduce', REDUCES)
def test_backward_low_precision_matches_reference(dtype, tol, k, replace,
                                                  reduce):
    colptr, row = hub_graph()
    target = targets()
    x_low = features().to(dtype)
    grad_out = features(target.numel(), seed=5).to(dtype)
    x = x_low.cuda().requires_grad_()
    res = sample_aggregate(*to('cuda', colptr, row), x, target.cuda(), k,
                           reduce, replace, 99, 3)
    res.out.backward(grad_out.cuda())
    assert x.grad.dtype == dtype
    # replay the op's own draws in float32
    x_ref = x_low.float().requires_grad_()
    exp = ra.replay(x_ref, colptr, row, target, res.nbr.cpu(), res.arg.cpu(),
                    k, reduce)
    exp.backward(grad_out.float())
    torch.testing.assert_close(x.grad.float().cpu(), x_ref.grad, rtol=tol,
                               atol=tol)
    torch.testing.assert_close(res.out.float().cpu(), exp.detach(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize('device', devices())
def test_backward_replays_hub_sampled_by_many_targets(device):
    """A source drawn by many targets sums all their gradients."""
    n = 300
    # every target 1..n has the same 3 in-neighbours {0, n+1, n+2}
    src = torch.tensor([0, n + 1, n + 2]).repeat(n)
    dst = torch.arange(1, n + 1).repeat_interleave(3)
    colptr, row, _ = csc_from_coo(torch.stack([src, dst]), n + 3)
    x = features(n + 3, 20).to(device).requires_grad_()
    target = torch.arange(1, n + 1).to(device)
    out = sample_aggregate(*to(device, colptr, row), x, target, 2, 'mean',
                           rng_seed=1).out
    out.sum().backward()
    picked = torch.bincount(
        sample_aggregate(colptr, row, x.detach().cpu(), target.cpu(), 2,
                         rng_seed=1).nbr.view(-1), minlength=n + 3)
    expected = (picked.double() / 2).view(-1, 1).expand(-1, 20)
    torch.testing.assert_close(x.grad.cpu().double(), expected)


# 4. statistics ##############################################################

def chi_square_threshold(df: int, p: float = 1e-3) -> float:
    """Upper p-quantile of chi-square(df): scipy's when installed, else the
    Wilson-Hilferty approximation (z = 3.0902 for p = 1e-3)."""
    try:
        from scipy.stats import chi2
        return float(chi2.ppf(1 - p, df))
    except ImportError:
        assert p == 1e-3
        z = 3.090232
        c = 2 / (9 * df)
        return df * (1 - c + z * math.sqrt(c))**3


def chi_square(counts, total, cells):
    expected = total / cells
    observed = list(counts) + [0] * (cells - len(counts))
    return sum((o - expected)**2 / expected for o in observed)


def star_graph(num_targets, d):
    """Targets d..d+num_targets-1 each have in-neighbours 0..d-1."""
    src = torch.arange(d).repeat(num_targets)
    dst = torch.arange(d, d + num_targets).repeat_interleave(d)
    colptr, row, _ = csc_from_coo(torch.stack([src, dst]), d + num_targets)
    return colptr, row, torch.arange(d, d + num_targets)


@pytest.mark.parametrize('device', devices())
def test_uniform_subsets_chi_square(device):
    """Without replacement all C(8, 3) = 56 subsets are equally likely (over
    rng_seeds and nodes), with no duplicate within a draw."""
    d, k, num_targets, num_seeds = 8, 3, 100, 200
    colptr, row, target = star_graph(num_targets, d)
    x = features(d + num_targets, 1)
    args = to(device, colptr, row, x, target)
    counts = {}
    for s in range(num_seeds):
        nbr = sample_aggregate(*args, k, 'sum', rng_seed=s).nbr.cpu()
        assert bool((nbr >= 0).all())
        subsets = nbr.sort(dim=1).values
        assert bool((subsets[:, 1:] != subsets[:, :-1]).all()), 'duplicate'
        for sub in map(tuple, subsets.tolist()):
            counts[sub] = counts.get(sub, 0) + 1
    cells = math.comb(d, k)
    assert len(counts) == cells
    stat = chi_square(counts.values(), num_targets * num_seeds, cells)
    assert stat < chi_square_threshold(cells - 1), \
        f'subset frequencies not uniform (chi2={stat:.1f})'


@pytest.mark.parametrize('device', devices())
def test_uniform_with_replacement_chi_square(device):
    d, k, num_targets, num_seeds = 10, 5, 100, 20
    colptr, row, target = star_graph(num_targets, d)
    x = features(d + num_targets, 1)
    args = to(device, colptr, row, x, target)
    picks = torch.cat([sample_aggregate(*args, k, 'sum', True,
                                        rng_seed=s).nbr.cpu().view(-1)
                       for s in range(num_seeds)])
    assert bool((picks >= 0).all()) and bool((picks < d).all())
    freq = torch.bincount(picks, minlength=d).tolist()
    stat = chi_square(freq, picks.numel(), d)
    assert stat < chi_square_threshold(d - 1), \
        f'draws not uniform (chi2={stat:.1f})'
    # with replacement duplicates do occur
    rows = picks.view(-1, k).sort(dim=1).values
    assert bool((rows[:, 1:] == rows[:, :-1]).any())


def test_sum_over_sampled_rows_matches_nbr():
    """out is exactly the reduction over the rows listed in nbr."""
    colptr, row = hub_graph()
    x, target = features(dtype=torch.float64), targets()
    for replace in (False, True):
        res = sample_aggregate(colptr, row, x, target, 7, 'sum', replace, 8)
        valid = res.nbr >= 0
        rows = x[res.nbr.clamp_min(0)] * valid.unsqueeze(-1)
        torch.testing.assert_close(res.out, rows.sum(1))


# 5. determinism #############################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('reduce', REDUCES)
def test_determinism(device, reduce):
    colptr, row = hub_graph()
    x, target = features(), targets()
    args = to(device, colptr, row, x, target)
    a = sample_aggregate(*args, 5, reduce, rng_seed=42, level=0)
    b = sample_aggregate(*args, 5, reduce, rng_seed=42, level=0)
    assert torch.equal(a.nbr, b.nbr) and torch.equal(a.out, b.out)
    assert torch.equal(a.arg, b.arg)
    # another level or another seed: other draws (on the hub at least)
    c = sample_aggregate(*args, 5, reduce, rng_seed=42, level=1)
    d = sample_aggregate(*args, 5, reduce, rng_seed=43, level=0)
    assert not torch.equal(a.nbr[0], c.nbr[0])
    assert not torch.equal(a.nbr[0], d.nbr[0])
    assert not torch.equal(a.nbr, c.nbr) and not torch.equal(a.nbr, d.nbr)
    # a node met twice at one level draws the same neighbours, wherever it is
    t = target.tolist()
    assert t[0] == t[5] == HUB and t[3] == t[4] == 3
    for i, j in [(0, 5), (3, 4)]:
        assert torch.equal(a.nbr[i], a.nbr[j])
        assert torch.equal(a.out[i], a.out[j])
    alone = sample_aggregate(*to(device, colptr, row, x, torch.tensor([HUB])),
                             5, reduce, rng_seed=42, level=0)
    assert torch.equal(alone.nbr[0], a.nbr[0])
    assert torch.equal(alone.out[0], a.out[0])


def test_default_key_comes_from_torch_generator():
    """rng_seed=-1 (the default) takes the next key of PyTorch's default
    CPU generator: torch.manual_seed makes it repeatable, each call draws a
    new key, and the draws are those of that key."""
    colptr, row = hub_graph()
    x, target = features(), targets()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        a = sample_aggregate(colptr, row, x, target, 5, 'mean')
        b = sample_aggregate(colptr, row, x, target, 5, 'mean', rng_seed=-1)
        torch.manual_seed(7)
        c = sample_aggregate(colptr, row, x, target, 5, 'mean')
        torch.manual_seed(7)
        key = ra.default_generator_key()
    assert torch.equal(a.nbr, c.nbr) and torch.equal(a.out, c.out)
    assert not torch.equal(a.nbr, b.nbr)
    exp_out, exp_nbr, _ = ra.sample_aggregate(colptr, row, x, target, 5,
                                              'mean', False, key, 0)
    assert torch.equal(a.nbr, exp_nbr)
    torch.testing.assert_close(a.out, exp_out)


@pytest.mark.cuda
def test_default_key_cuda_repeatable_under_manual_seed():
    colptr, row = to('cuda', *hub_graph())
    x, target = features().cuda(), targets().cuda()
    with torch.random.fork_rng(devices=[0]):
        torch.manual_seed(7)
        a = sample_aggregate(colptr, row, x, target, 5, 'mean')
        b = sample_aggregate(colptr, row, x, target, 5, 'mean')
        torch.manual_seed(7)
        c = sample_aggregate(colptr, row, x, target, 5, 'mean')
    assert torch.equal(a.nbr, c.nbr) and torch.equal(a.out, c.out)
    assert not torch.equal(a.nbr, b.nbr)


def test_thread_count_invariance():
    colptr, row = hub_graph()
    x = features(num_features=40)
    target = torch.randint(0, NUM_NODES, (2000, ),
                           generator=torch.Generator().manual_seed(0))
    threads = torch.get_num_threads()
    results = []
    try:
        for n in (1, max(2, threads)):
            torch.set_num_threads(n)
            x_ = x.clone().requires_grad_()
            res = sample_aggregate(colptr, row, x_, target, 4, 'mean',
                                   rng_seed=5)
            res.out.backward(torch.ones_like(res.out))
            results.append((res.nbr, res.out, x_.grad))
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(*results):
        assert torch.equal(a, b)


# 6. opcheck #################################################################

@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('reduce,k,replace', [('mean', 3, False),
                                              ('max', 2, True),
                                              ('sum', -1, False)])
def test_opcheck(device, reduce, k, replace):
    colptr, row = small_graph()
    colptr, row = to(device, colptr, row)
    target = torch.tensor([0, 5, -1, 18, 5], device=device)
    x = features(20, 4, torch.float64).to(device).requires_grad_()
    torch.library.opcheck(torch.ops.fusesample.sample_aggregate.default,
                          (colptr, row, x, target, k, reduce, replace, 7, 1))
    res = sample_aggregate(colptr, row, x.detach(), target, k, reduce,
                           replace, 7, 1)
    grad_out = torch.randn(5, 4, dtype=torch.float64, device=device)
    torch.library.opcheck(
        torch.ops.fusesample.sample_aggregate_backward.default,
        (grad_out, colptr, row, target, res.nbr, res.arg, k, reduce, 20))


# 7. bad inputs ##############################################################

def _bad_cases():
    def x_1d(a):
        a['x'] = a['x'][:, 0]

    def x_int(a):
        a['x'] = a['x'].long()

    def target_float(a):
        a['target'] = a['target'].float()

    def target_high(a):
        a['target'] = torch.tensor([0, 20], device=a['target'].device)

    def target_low(a):
        a['target'] = torch.tensor([-2], device=a['target'].device)

    def reduce_min(a):
        a['reduce'] = 'min'

    def k_minus_2(a):
        a['num_neighbors'] = -2

    def row_short(a):
        a['row'] = a['row'].short()

    def row_float(a):
        a['row'] = a['row'].float()

    def colptr_int(a):
        a['colptr'] = a['colptr'].int()

    def x_too_few_rows(a):
        a['x'] = a['x'][:5]

    def rng_seed_minus_2(a):
        a['rng_seed'] = -2

    # (corrupt, message, checked on the host on every device)
    return [
        pytest.param(x_1d, "'x' must be 2-dimensional", True, id='x-1d'),
        pytest.param(x_int, "'x' must be float64, float32", True, id='x-int'),
        pytest.param(target_float, "'target' must be Long", True,
                     id='target-float'),
        pytest.param(target_high, "'target' holds ids", False,
                     id='target-high'),
        pytest.param(target_low, "'target' holds ids", False,
                     id='target-low'),
        pytest.param(reduce_min, "'reduce' must be 'sum', 'mean' or 'max'",
                     True, id='reduce-min'),
        pytest.param(k_minus_2, "'num_neighbors' is -2", True,
                     id='k-minus-2'),
        pytest.param(row_short, "'row' must be int64 or int32", True,
                     id='row-int16'),
        pytest.param(row_float, "'row' must be int64 or int32", True,
                     id='row-float'),
        pytest.param(colptr_int, "'colptr' must be Long", True,
                     id='colptr-int32'),
        pytest.param(x_too_few_rows, "'x' has only 5 rows", False,
                     id='x-too-few-rows'),
        pytest.param(rng_seed_minus_2, "'rng_seed' must be >= 0", True,
                     id='rng-seed-minus-2'),
    ]


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('corrupt,match,on_host', _bad_cases())
def test_bad_inputs(device, corrupt, match, on_host):
    if device == 'cuda' and not on_host:
        pytest.skip('a value check: a device-side assert on CUDA')
    colptr, row = small_graph()
    a = dict(colptr=colptr.to(device), row=row.to(device),
             x=features(20, 4).to(device),
             target=torch.tensor([0, 5], device=device), num_neighbors=2,
             reduce='mean', rng_seed=0)
    corrupt(a)
    with pytest.raises(RuntimeError, match=match):
        sample_aggregate(a['colptr'], a['row'], a['x'], a['target'],
                         a['num_neighbors'], a['reduce'],
                         rng_seed=a['rng_seed'])


@pytest.mark.cuda
def test_bad_inputs_devices_mixed():
    colptr, row = small_graph()
    with pytest.raises(RuntimeError, match="'x' is on"):
        sample_aggregate(colptr.cuda(), row.cuda(), features(20, 4),
                         torch.tensor([0], device='cuda'), 2)


@pytest.mark.parametrize('device', devices())
@pytest.mark.parametrize('reduce', REDUCES)
def test_backward_bad_inputs(device, reduce):
    colptr, row = to(device, *small_graph())
    target = torch.tensor([0, 5, 7], device=device)
    res = sample_aggregate(colptr, row, features(20, 4).to(device), target,
                           3, reduce, rng_seed=1)
    grad_out = torch.ones(3, 4, device=device)
    backward = torch.ops.fusesample.sample_aggregate_backward
    with pytest.raises(RuntimeError, match=r"'nbr' must have shape \[3, 3\]"):
        backward(grad_out, colptr, row, target, res.nbr[:, :2], res.arg, 3,
                 reduce, 20)
    with pytest.raises(RuntimeError, match=r"'nbr' must have shape \[3, 3\]"):
        backward(grad_out, colptr, row, target, res.nbr[:2], res.arg, 3,
                 reduce, 20)
    with pytest.raises(RuntimeError, match="'nbr' must be Long"):
        backward(grad_out, colptr, row, target, res.nbr.int(), res.arg, 3,
                 reduce, 20)
    with pytest.raises(RuntimeError, match="'grad_out' has 2 rows"):
        backward(grad_out[:2], colptr, row, target, res.nbr, res.arg, 3,
                 reduce, 20)
    with pytest.raises(RuntimeError, match="'num_src' must be >= 0"):
        backward(grad_out, colptr, row, target, res.nbr, res.arg, 3, reduce,
                 -1)
    if reduce == 'max':
        with pytest.raises(RuntimeError, match="'arg' must have shape"):
            backward(grad_out, colptr, row, target, res.nbr, res.arg[:, :2],
                     3, reduce, 20)
