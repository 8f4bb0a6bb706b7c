"""examples/multi_gpu_sage.py and pyg_fusesample.loader.distributed.

* ``rank_seeds`` is DistributedSampler's split (equal shards, the remainder
  padded or dropped); ``rank_seed`` is ``seed + rank``.
* The example as a user starts it on the CPU: 2 gloo processes under
  torchrun print one line per epoch with the accuracy.
* Those 2 DDP processes end with the parameters of one process that, at
  every step, averages the gradients of both ranks' batches (the same
  shards, loaders and dropout streams, rebuilt here from the example's
  functions): what "agrees with a single-process run on the same seeds"
  means.
* A world size of 1 runs in this process (no torchrun) and equals the plain
  single-process loop.

The graph is SYNTHETIC products_like at scale 0.002 (4,898 nodes), batches
of 32, hidden 32: a few seconds of training on 2 busy cores.
"""
import csv
import os
import re
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

from example_runner import (EXAMPLES, REPO, load_script, run_inprocess,
                            run_subprocess)
from pyg_fusesample.loader import rank_seed, rank_seeds

SCRIPT = EXAMPLES / 'multi_gpu_sage.py'
TINY = ['--device', 'cpu', '--synthetic', '--scale', '0.002',
        '--batch-size', '32', '--hidden', '32', '--lr', '0.01', '--seed', '3']
EPOCHS, STEPS = 2, 3
EPOCH = re.compile(r'^\[SYNTHETIC products_like\(scale=0\.002\)\] '
                   r'Epoch: (\d+), Loss: ([\d.]+), Val: ([\d.]+), '
                   r'Test: ([\d.]+), Time: ([\d.]+)s, Seeds/s: ([\d,]+), '
                   r'Sampled edges/s: ([\d,]+), Eval: [\d.]+s, Peak memory per rank \(host peak RSS, '
                   r'MiB\): (\d+(?:, \d+)*)$', re.M)

needs_gloo = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason='torch.distributed with the gloo backend is not available')


# -- rank_seeds / rank_seed -------------------------------------------------
@pytest.mark.parametrize('drop_last', [False, True])
@pytest.mark.parametrize('shuffle', [False, True])
def test_rank_seeds_is_distributed_sampler(shuffle, drop_last):
    from torch.utils.data import DistributedSampler
    for n in (1, 5, 7, 12, 13):
        seeds = torch.arange(100, 100 + n) * 3
        for world_size in (1, 2, 3, 4):
            if drop_last and n < world_size:
                with pytest.raises(ValueError, match='empty'):
                    rank_seeds(seeds, 0, world_size, drop_last=True)
                continue
            shards = []
            for rank in range(world_size):
                ref = DistributedSampler(range(n), world_size, rank,
                                         shuffle=shuffle, seed=7,
                                         drop_last=drop_last)
                got = rank_seeds(seeds, rank, world_size, shuffle=shuffle,
                                 seed=7, drop_last=drop_last)
                assert got.dtype == torch.long
                assert torch.equal(got, seeds[torch.tensor(list(ref))])
                shards.append(got)
            # Equal sizes; the seeds covered (padding) or all distinct (drop).
            size = n // world_size if drop_last else -(-n // world_size)
            assert all(s.numel() == size for s in shards)
            union = torch.cat(shards)
            if drop_last:
                assert union.unique().numel() == union.numel()
                assert union.numel() == n - n % world_size
            else:
                assert set(union.tolist()) == set(seeds.tolist())


def test_rank_seeds_inputs():
    mask = torch.zeros(10, dtype=torch.bool)
    mask[[1, 4, 5, 8, 9]] = True
    idx = mask.nonzero().view(-1)
    for rank in range(2):
        assert torch.equal(rank_seeds(mask, rank, 2, seed=1),
                           rank_seeds(idx, rank, 2, seed=1))
        assert torch.equal(rank_seeds(None, rank, 2, num_nodes=10, seed=1),
                           rank_seeds(torch.arange(10), rank, 2, seed=1))
    # The same seed gives the same shards; another seed other shards.
    assert torch.equal(rank_seeds(idx, 0, 2, seed=1),
                       rank_seeds(idx, 0, 2, seed=1))
    assert not all(torch.equal(rank_seeds(torch.arange(100), 0, 2, seed=s),
                               rank_seeds(torch.arange(100), 0, 2, seed=1))
                   for s in (2, 3))
    # Unshuffled, the split is strided; the remainder padded from the start
    # or dropped.
    assert rank_seeds(idx, 0, 2, shuffle=False).tolist() == [1, 5, 9]
    assert rank_seeds(idx, 1, 2, shuffle=False).tolist() == [4, 8, 1]
    assert rank_seeds(idx, 0, 2, shuffle=False,
                      drop_last=True).tolist() == [1, 5]
    assert rank_seeds(idx, 1, 2, shuffle=False,
                      drop_last=True).tolist() == [4, 8]
    with pytest.raises(ValueError, match='num_nodes'):
        rank_seeds(None, 0, 2)
    with pytest.raises(ValueError, match='mask of length'):
        rank_seeds(mask, 0, 2, num_nodes=11)
    with pytest.raises(ValueError, match='integer'):
        rank_seeds(torch.ones(3), 0, 2)
    with pytest.raises(ValueError, match='1-dimensional'):
        rank_seeds(torch.ones(2, 2, dtype=torch.long), 0, 2)
    with pytest.raises(ValueError, match='rank'):
        rank_seeds(idx, 2, 2)
    with pytest.raises(ValueError, match='world_size'):
        rank_seeds(idx, 0, 0)
    with pytest.raises(ValueError, match='no seeds'):
        rank_seeds(torch.empty(0, dtype=torch.long), 0, 2)


def test_rank_seed():
    assert [rank_seed(5, r) for r in range(4)] == [5, 6, 7, 8]
    with pytest.raises(ValueError):
        rank_seed(-1, 0)
    with pytest.raises(ValueError):
        rank_seed(0, -1)


# -- the example ------------------------------------------------------------
def reference_run(argv, world_size, ranks=None):
    """What DDP over ``world_size`` ranks computes, in this process: each
    rank's loader (its shard, ``rank_seed``), the same initial model, each
    rank's dropout stream; every step averages the gradients of the ranks'
    batches (of ``ranks`` only, for a control) and takes one Adam step.
    Returns the final state_dict."""
    ex = load_script(SCRIPT)
    args = ex.parse_args(argv)
    data, _, _ = ex.load_graph(args, lambda msg: None)
    device = torch.device('cpu')
    loaders = [ex.make_train_loader(data, r, world_size, args)
               for r in range(world_size)]
    torch.manual_seed(args.seed)
    model = ex.build_model(args, data.num_features, int(data.y.max()) + 1)
    rng = []
    for r in range(world_size):
        torch.manual_seed(rank_seed(args.seed, r))
        rng.append(torch.get_rng_state())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    params = list(model.parameters())
    ranks = list(range(world_size)) if ranks is None else ranks
    model.train()
    for _ in range(args.epochs):
        iterators = [iter(loader) for loader in loaders]
        for _ in range(args.max_steps):
            grads = []
            for r, it in enumerate(iterators):
                batch = next(it)
                torch.set_rng_state(rng[r])
                optimizer.zero_grad()
                ex.batch_loss(model, batch, device, args.amp,
                              args.trim).backward()
                rng[r] = torch.get_rng_state()
                grads.append([p.grad.clone() for p in params])
            for i, p in enumerate(params):
                p.grad = torch.stack([grads[r][i] for r in ranks]).mean(0)
            optimizer.step()
    return model.state_dict()


def assert_same_model(got: dict, ref: dict):
    assert got.keys() == ref.keys()
    for key in ref:
        torch.testing.assert_close(got[key], ref[key], rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f'{key}: {m}')


@pytest.fixture(scope='module')
def torchrun(tmp_path_factory):
    """The example under torchrun: 2 gloo processes, 2 epochs of 3 steps."""
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip('torch.distributed with the gloo backend is not available')
    tmp = tmp_path_factory.mktemp('multi_gpu')
    model, table = tmp / 'model.pt', tmp / 'epochs.csv'
    argv = TINY + ['--epochs', EPOCHS, '--max-steps', STEPS]
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone',
           '--nproc_per_node', '2', str(SCRIPT), *map(str, argv),
           '--save-model', str(model), '--csv', str(table)]
    env = dict(os.environ, OMP_NUM_THREADS='1')
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout, model, table, [str(a) for a in argv]


@needs_gloo
def test_torchrun_two_gloo_processes(torchrun):
    out, model, table, _ = torchrun
    assert 'SYNTHETIC' in out and 'world size 2 (gloo, cpu)' in out, out
    epochs = EPOCH.findall(out)
    # Rank 0 alone prints: one line per epoch.
    assert [int(e[0]) for e in epochs] == list(range(1, EPOCHS + 1)), out
    for e in epochs:
        assert all(0.0 <= float(v) <= 1.0 for v in e[2:4]), out
        assert int(e[6].replace(',', '')) > 0  # sampled edges/s
        assert len(e[7].split(', ')) == 2  # a peak per rank
    assert model.exists()
    with open(table, newline='') as f:
        rows = list(csv.DictReader(f))
    assert [int(r['epoch']) for r in rows] == list(range(1, EPOCHS + 1))
    for r in rows:
        assert (r['device'], r['world_size'], r['backend'], r['amp'],
                r['synthetic']) == ('cpu', '2', 'gloo', 'none', 'True')
        assert int(r['steps_per_rank']) == STEPS
        assert float(r['seeds_per_s']) > 0
        assert float(r['sampled_edges_per_s']) > float(r['seeds_per_s'])
        assert r['cache_hit_rate'] == ''  # (no --cache-mb)
        assert len(r['peak_mem_mib_per_rank'].split(';')) == 2


@needs_gloo
def test_ddp_equals_one_process_averaging_both_ranks(torchrun, one_thread):
    _, model, _, argv = torchrun
    got = torch.load(model, weights_only=True)
    ref = reference_run(argv, world_size=2)
    assert_same_model(got, ref)
    # Not vacuous: rank 0's gradients alone give another model.
    alone = reference_run(argv, world_size=2, ranks=[0])
    assert any(not torch.allclose(alone[k], ref[k], rtol=1e-3, atol=1e-4)
               for k in ref)


@needs_gloo
@pytest.mark.parametrize('layers', ['pyg', 'fused'])
def test_world_size_one_in_process(tmp_path, capsys, one_thread, layers):
    # --layers fused: DDP over the to_fused model (trimmed by default)
    # trains as the plain loop over the same model does.
    model, table = tmp_path / 'model.pt', tmp_path / 'epochs.csv'
    argv = TINY + ['--epochs', '1', '--max-steps', '2', '--layers', layers]
    code, out, err = run_inprocess(
        SCRIPT, argv + ['--world-size', '1', '--save-model', model,
                        '--csv', table], capsys)
    assert code == 0, out + err
    assert 'world size 1 (gloo, cpu)' in out, out
    assert [int(e[0]) for e in EPOCH.findall(out)] == [1], out
    assert not dist.is_initialized()  # the process group was torn down
    with open(table, newline='') as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]['world_size'] == '1'
    assert (rows[0]['layers'], rows[0]['trim']) == (layers, 'on')
    assert float(rows[0]['peak_host_rss_mib_max']) > 0
    got = torch.load(model, weights_only=True)
    assert_same_model(got, reference_run(argv, world_size=1))


@needs_gloo
def test_graph_cache_and_eval_every(tmp_path, capsys, one_thread):
    # --graph-cache: the generated graph is written once and read back by
    # the next run (same data, so the same trained model); --eval-every 2
    # over 3 epochs evaluates after epochs 2 and 3 only, 0 never.
    cache = tmp_path / 'graphs'
    argv = TINY + ['--epochs', '3', '--max-steps', '1', '--world-size', '1',
                   '--graph-cache', cache, '--progress']
    models = []
    for run, every in enumerate(('2', '0')):
        model, table = tmp_path / f'm{run}.pt', tmp_path / f'e{run}.csv'
        code, out, err = run_inprocess(
            SCRIPT, argv + ['--eval-every', every, '--save-model', model,
                            '--csv', table], capsys)
        assert code == 0, out + err
        assert [p.name for p in cache.iterdir()] == [
            'products_scale0.002_seed3.pt']
        written = next(cache.iterdir()).stat().st_mtime_ns
        if run == 0:
            first = written
        assert written == first  # read, not written again
        with open(table, newline='') as f:
            evaluated = [r['test_acc'] != 'nan' for r in csv.DictReader(f)]
        assert evaluated == ([False, True, True] if every == '2'
                             else [False, False, False])
        models.append(torch.load(model, weights_only=True))
    assert_same_model(models[0], models[1])
    code, out, err = run_inprocess(SCRIPT, TINY + ['--eval-every', '-1'],
                                   capsys)
    assert code == 2 and '--eval-every must be at least 0' in err


@needs_gloo
def test_pyg_loader_baseline_in_process(tmp_path, capsys, one_thread):
    import torch_geometric.typing
    # --loader pyg: PyG's NeighborLoader over the rank's CPU graph (the
    # scaling run's baseline) trains, and the CSV says which loader ran.
    table = tmp_path / 'epochs.csv'
    argv = TINY + ['--epochs', '1', '--max-steps', '2', '--world-size', '1',
                   '--loader', 'pyg', '--num-workers', '0', '--csv', table]
    code, out, err = run_inprocess(SCRIPT, argv, capsys)
    assert code == 0, out + err
    assert 'loader: PyG NeighborLoader (0 workers per rank)' in out, out
    assert [int(e[0]) for e in EPOCH.findall(out)] == [1], out
    with open(table, newline='') as f:
        rows = list(csv.DictReader(f))
    assert [(r['loader'], r['num_workers']) for r in rows] == [('pyg', '0')]
    # Trimmed by default only where PyG's batches carry per-hop counts.
    assert rows[0]['trim'] == ('on' if torch_geometric.typing.WITH_PYG_LIB
                               else 'off')
    code, out, err = run_inprocess(
        SCRIPT, TINY + ['--loader', 'pyg', '--host-memory', 'features'],
        capsys)
    assert code == 2 and '--host-memory is for the fused loader' in err


@pytest.mark.parametrize('loader,layers', [('fused', 'pyg'), ('pyg', 'pyg'),
                                           ('fused', 'fused')])
def test_trim_gives_the_same_seed_outputs(loader, layers, one_thread):
    # --trim runs GraphSAGE with trim_to_layer over either loader's per-hop
    # counts (--layers fused: the to_fused model's own trimming, which
    # returns the seeds' rows only): the seeds' outputs (eval mode: no
    # dropout) are the untrimmed model's, and the loss is too.
    import torch_geometric.typing
    ex = load_script(SCRIPT)
    argv = TINY + ['--loader', loader, '--num-workers', '0',
                   '--layers', layers]
    if loader == 'pyg' and not torch_geometric.typing.WITH_PYG_LIB:
        # PyG's batches carry per-hop counts only through pyg-lib.
        with pytest.raises(SystemExit):
            ex.parse_args(argv + ['--trim'])
        pytest.skip('pyg-lib is not installed')
    args = ex.parse_args(argv + ['--trim'])
    data, _, _ = ex.load_graph(args, lambda msg: None)
    torch.manual_seed(args.seed)
    model = ex.build_model(args, data.num_features,
                           int(data.y.max()) + 1).eval()
    batch = next(iter(ex.make_train_loader(data, 0, 1, args)))
    assert len(batch.num_sampled_nodes) == len(args.num_neighbors) + 1
    device = torch.device('cpu')
    with torch.no_grad():
        full = ex.seed_outputs(model, batch)
        trimmed = ex.seed_outputs(model, batch, trim=True)
        assert full.size(0) == batch.batch_size
        torch.testing.assert_close(trimmed, full, rtol=1e-5, atol=1e-5)
        if layers == 'fused':  # only the seeds' rows were computed
            out = model(batch.x, batch.edge_index,
                        **ex.trim_kwargs(batch, True))
            assert out.size(0) == batch.batch_size
        torch.testing.assert_close(
            ex.batch_loss(model, batch, device, 'none', trim=True),
            ex.batch_loss(model, batch, device, 'none'))


@needs_gloo
def test_trim_run_is_recorded(tmp_path, capsys, one_thread):
    # Trimmed by default (the fused loader's batches carry the counts),
    # --trim says so explicitly, --no-trim turns it off.
    table = tmp_path / 'epochs.csv'
    argv = TINY + ['--epochs', '1', '--max-steps', '1', '--world-size', '1',
                   '--csv', table]
    for flag, note in (([], 'trim: on'), (['--trim'], 'trim: on'),
                       (['--no-trim'], 'trim: off (--no-trim)')):
        code, out, err = run_inprocess(SCRIPT, argv + flag, capsys)
        assert code == 0, out + err
        assert [int(e[0]) for e in EPOCH.findall(out)] == [1], out
        assert note in out, out
    with open(table, newline='') as f:
        assert [r['trim'] for r in csv.DictReader(f)] == ['on', 'on', 'off']


@pytest.mark.cuda
@pytest.mark.parametrize('host_memory', ['features', 'all'])
def test_one_gpu_with_host_memory(host_memory):
    # World size 1 on a GPU, the features (and the graph) in pinned host
    # memory with a GPU cache: trains, reports the cache's hit rate.
    argv = [a for a in TINY if a != 'cpu' and a != '--device'] + [
        '--device', 'cuda', '--epochs', '1', '--max-steps', '2',
        '--host-memory', host_memory, '--cache-mb', '1']
    # In its own process: an NCCL process group torn down after a failure
    # can abort the interpreter that holds it.
    code, out, err = run_subprocess(SCRIPT, argv + ['--world-size', '1'])
    assert code == 0, out + err
    assert 'world size 1 (nccl, NVIDIA' in out, out  # the GPU's name
    assert 'Cache hit rate' in out and f'Host memory: {host_memory}' in out


def test_pyg_baseline_shares_one_sampler_over_target_sorted_edges():
    """--loader pyg: the edges are sorted by target in place (stably, the
    same edge set) and every PyG loader of the rank shares one
    NeighborSampler built with is_sorted=True -- no per-loader CSC copies
    (three of them ran the full-size papers100M-like run out of host
    memory)."""
    from types import SimpleNamespace
    from torch_geometric.data import Data
    module = load_script(SCRIPT)
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, 50, (2, 400), generator=g)
    before = set(map(tuple, ei.t().tolist()))
    data = Data(edge_index=ei.clone(), num_nodes=50)
    args = SimpleNamespace(num_neighbors=[3, 2], num_workers=0)
    sampler = module.pyg_sampler(data, args)
    col = data.edge_index[1]
    assert bool((col[1:] >= col[:-1]).all())
    assert set(map(tuple, data.edge_index.t().tolist())) == before
    assert module.pyg_sampler(data, args) is sampler
    loaders = [module.pyg_loader(data, args, torch.arange(10), shuffle=False,
                                 batch_size=5, seed=0) for _ in range(2)]
    assert all(l.node_sampler is sampler for l in loaders)
    assert sampler.perm is None  # (PyG kept views: no sorted copy)
    batch = next(iter(loaders[0]))
    src, dst = batch.n_id[batch.edge_index]
    assert set(zip(src.tolist(), dst.tolist())) <= before
