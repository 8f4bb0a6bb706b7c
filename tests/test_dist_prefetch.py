"""FusedDistNeighborLoader's prefetch modes: ``True`` (one ahead in the
caller's thread, on a side stream on a GPU; the default there) and
``'thread'`` (background threads), each exchanging over process groups of
its own, give the batches of plain iteration (2 and 3 gloo processes; one
NCCL process on a GPU; 2 NCCL processes on 2 GPUs, where 'thread' is
refused: its threads' NCCL collectives in parallel with the training's on
other communicators of one GPU are what NCCL documents as unsafe), epoch
after epoch; an epoch left half-way on every rank ends without a hang and
the next epoch is still right (every rank stopped after the same batch:
their exchange counts agree); the training thread's collectives on the
world group interleave with the loader's on its own. Loaders share their
groups (a loader made every epoch makes no new ones), and an iterator
dropped after one batch (``next(iter(loader))``) leaves the next epoch
right. DDP training steps (GraphSAGE, all-reduce in the backward) from a
prefetching loader give plain iteration's losses (2 gloo processes; 2 NCCL
processes on 2 GPUs, marked)."""
import os

import pytest
import torch
import torch.distributed as dist

from test_dist_sampler import N, _join, on_parts, two_gpus

EPOCHS = 3  # the second one left after two batches


def _epochs(loader, device):
    # [epoch 1's batches, epoch 2's first two, epoch 3's], on the CPU; an
    # all_reduce on the world group after every batch, as DDP's gradients
    # would take, while the loader's threads exchange on theirs.
    out = []
    for epoch in range(EPOCHS):
        it = iter(loader)
        batches = []
        for b in it:
            total = torch.ones(1, device=device)
            dist.all_reduce(total)
            assert int(total) == dist.get_world_size()
            batches.append({k: v.cpu() if isinstance(v, torch.Tensor) else v
                            for k, v in b.to_dict().items()})
            if epoch == 1 and len(batches) == 2:
                break
        if hasattr(it, 'close'):
            it.close()
        out.append(batches)
    return out


def _part_on_device(rank, world, root, init, backend):
    # (a worker's process group, 30 s for a collective, and its part on
    # its device)
    from pyg_fusesample.distributed import read_partition
    _join(rank, world, init, seconds=30, backend=backend)
    device = torch.device('cuda', rank) if backend == 'nccl' else \
        torch.device('cpu')
    return device, read_partition(root, rank, device=device)


MODES = (False, True, 'thread')


def modes_of(world, backend):
    # ('thread' is refused across GPUs)
    return MODES if backend == 'gloo' or world == 1 else MODES[:2]


def _worker(rank, world, root, init, out_dir, backend):
    from pyg_fusesample.distributed import FusedDistNeighborLoader
    device, part = _part_on_device(rank, world, root, init, backend)
    modes = modes_of(world, backend)
    try:
        if 'thread' not in modes:
            with pytest.raises(ValueError, match='NCCL documents as unsafe'):
                FusedDistNeighborLoader(part, [4, 3], batch_size=16,
                                        prefetch='thread')
        train = torch.arange(N) % 2 == 0
        # one ahead by default on a GPU, else off; only over the world's
        # ranks
        default = FusedDistNeighborLoader(part, [4, 3], input_nodes=train,
                                          batch_size=16)
        assert default.prefetch is (backend == 'nccl')
        # (and 8 batches a call on a GPU, else 1)
        assert default.batches_per_call == (8 if backend == 'nccl' else 1)
        for prefetch in (True, 'thread'):
            with pytest.raises(ValueError, match='group'):
                FusedDistNeighborLoader(part, [4, 3], input_nodes=train,
                                        batch_size=16, prefetch=prefetch,
                                        group=dist.group.WORLD)
        with pytest.raises(ValueError, match="'prefetch' is None, False"):
            FusedDistNeighborLoader(part, [4, 3], batch_size=16,
                                    prefetch='threads')
        got = {}
        for prefetch in modes:  # (one batch a call: the modes compared)
            loader = FusedDistNeighborLoader(
                part, [4, 3], input_nodes=train, batch_size=16, shuffle=True,
                seed=5, cache_rows=20, prefetch=prefetch, batches_per_call=1)
            assert len(loader._lanes) == (
                0 if not prefetch else 1 if prefetch is True or
                backend == 'gloo' else 2)
            got[prefetch] = dict(epochs=_epochs(loader, device),
                                 exchanges=loader.sampler.exchanges,
                                 host_reads=loader.sampler.host_reads)
        # batches_per_call: a call a group of 3, one group ahead on the
        # loader's lane with prefetch=True (and made when asked for without)
        for prefetch in (True, False):
            loader = FusedDistNeighborLoader(
                part, [4, 3], input_nodes=train, batch_size=16, shuffle=True,
                seed=5, cache_rows=20, prefetch=prefetch, batches_per_call=3)
            got[('grouped', prefetch)] = dict(
                epochs=_epochs(loader, device),
                exchanges=loader.sampler.exchanges,
                host_reads=loader.sampler.host_reads)
        # a loader an epoch, the first dropped after one batch with its
        # threads mid-epoch: the same groups, and the later epochs are plain
        # iteration's
        from pyg_fusesample.distributed import dist_loader
        groups = {k: list(v) for k, v in dist_loader._LANE_GROUPS.items()}
        # (the first loader after it makes its batches in groups of 3,
        # ahead: the dropped loader's threads, where it has them, have
        # stopped when its epoch starts; the last loader, plain iteration)
        again, dropped = [], []
        for prefetch, per_call in [(modes[-1], None), (True, 3)] + [
                (p, None) for p in modes[-2::-1]] + [(False, 1)]:
            loader = FusedDistNeighborLoader(
                part, [4, 3], input_nodes=train, batch_size=16, seed=9,
                prefetch=prefetch, batches_per_call=per_call)
            if not again:
                next(iter(loader))
                dropped = dist_loader._LANE_THREADS.get(loader._lane_key, [])
                assert (len(dropped) > 0) == (prefetch == 'thread')
                again.append(None)
                continue
            it = iter(loader)
            assert not any(thread.is_alive() for thread in dropped)
            again.append([b.n_id.cpu() for b in it])
        got['again'] = again[1:]
        assert dist_loader._LANE_GROUPS == groups
        torch.save(got, os.path.join(out_dir, f'prefetch{rank}.pt'))
    finally:
        dist.destroy_process_group()


def check(world, backend):
    got = on_parts(_worker, world, 'prefetch', backend)
    modes = modes_of(world, backend)
    for g in got:
        plain = g[False]['epochs']
        assert len(plain[0]) > 2 and len(plain[1]) == 2
        for mode in modes[1:] + (('grouped', True), ('grouped', False)):
            ahead = g[mode]['epochs']
            assert [len(e) for e in plain] == [len(e) for e in ahead]
            for a_epoch, b_epoch in zip(ahead, plain):
                for a, b in zip(a_epoch, b_epoch):
                    assert a.keys() == b.keys()
                    for key, value in a.items():
                        if isinstance(value, torch.Tensor):
                            assert torch.equal(value, b[key]), key
                        else:
                            assert value == b[key], key
            # (made ahead: a few batches more in the epoch left half-way;
            # in groups: a call's exchanges for three batches)
            if not isinstance(mode, tuple):
                assert g[mode]['exchanges'] >= g[False]['exchanges']
            else:
                assert g[mode]['exchanges'] < g[False]['exchanges']
        *ahead, plain = g['again']
        assert len(plain) > 2
        for a in ahead:
            assert len(a) == len(plain)
            assert all(torch.equal(x, y) for x, y in zip(a, plain))
    # every rank stopped making batches after the same one
    for mode in modes[1:] + (('grouped', True), ('grouped', False)):
        assert len({g[mode]['exchanges'] for g in got}) == 1
        assert len({g[mode]['host_reads'] for g in got}) == 1


@pytest.mark.parametrize('world', [2, 3])
def test_prefetched_batches_are_plain_iterations(world):
    check(world, 'gloo')


@pytest.mark.cuda
def test_prefetched_batches_on_a_gpu():
    check(1, 'nccl')


@pytest.mark.cuda
@two_gpus
def test_prefetched_batches_on_gpus():
    check(2, 'nccl')


def _ddp_losses(part, device, prefetch):
    # Two epochs of DDP training steps (GraphSAGE on the batches: forward,
    # backward with DDP's all-reduce, AdamW): their losses. A function of
    # its own so that the model (DDP's reducer) is freed on return, while
    # the process group lives: freed after destroy_process_group, the
    # reducer's last reference to the gloo group joins the group's threads
    # with the GIL held while one of them waits for it to free a finished
    # all-reduce (whose thread-local state holds a Python object since
    # torch 2.13), which hung this test in CI.
    from torch.nn.parallel import DistributedDataParallel
    from torch_geometric.nn.models import GraphSAGE

    from pyg_fusesample.distributed import FusedDistNeighborLoader
    torch.manual_seed(0)
    model = DistributedDataParallel(
        GraphSAGE(5, 16, 2, 4).to(device),
        device_ids=None if device.type == 'cpu' else [device.index])
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    loader = FusedDistNeighborLoader(
        part, [4, 3], input_nodes=torch.arange(N) % 2 == 0, batch_size=16,
        shuffle=True, seed=3, prefetch=prefetch)
    got = []
    for _ in range(2):
        for b in loader:
            opt.zero_grad(set_to_none=True)
            out = model(b.x, b.edge_index)[:b.batch_size]
            loss = torch.nn.functional.cross_entropy(out, b.y[:b.batch_size])
            loss.backward()
            opt.step()
            got.append(float(loss))
    return got


def _ddp_worker(rank, world, root, init, out_dir, backend):
    # Plain iteration's and the prefetching loaders' losses. The
    # collectives' timeout (30 s) ends a hang in an exchange with an error.
    device, part = _part_on_device(rank, world, root, init, backend)
    try:
        losses = {prefetch: _ddp_losses(part, device, prefetch)
                  for prefetch in modes_of(world, backend)}
        torch.save(losses, os.path.join(out_dir, f'ddp{rank}.pt'))
    finally:
        dist.destroy_process_group()


def check_ddp(backend):
    for losses in on_parts(_ddp_worker, 2, 'ddp', backend):
        plain = losses.pop(False)
        assert len(plain) > 4
        for ahead in losses.values():
            if backend == 'gloo':
                assert ahead == plain
            else:  # (PyG's scatter sums with atomics on a GPU)
                torch.testing.assert_close(ahead, plain, rtol=1e-3,
                                           atol=1e-3)


def test_ddp_training_from_a_prefetching_loader():
    check_ddp('gloo')


@pytest.mark.cuda
@two_gpus
def test_ddp_training_from_a_prefetching_loader_on_gpus():
    # (prefetch=True, the default there: the loader's and DDP's NCCL
    # collectives on two communicators, issued by one thread)
    check_ddp('nccl')


def test_prefetch_refusal():
    from pyg_fusesample.distributed.dist_loader import prefetch_refusal
    assert 'use prefetch=True' in prefetch_refusal(torch.device('cuda', 0), 2)
    assert prefetch_refusal(torch.device('cuda', 0), 1) is None
    assert prefetch_refusal(torch.device('cpu'), 4) is None


def test_prefetch_mode():
    # (the argument's checks and default: no process group needed)
    from pyg_fusesample.distributed.dist_loader import _prefetch_mode
    gpu, cpu, group = torch.device('cuda', 0), torch.device('cpu'), object()
    assert _prefetch_mode(None, gpu, None, 'L') is True
    assert _prefetch_mode(None, cpu, None, 'L') is False
    assert _prefetch_mode('thread', cpu, None, 'L') == 'thread'
    with pytest.warns(UserWarning, match='made when asked for'):
        assert _prefetch_mode(None, gpu, group, 'L') is False
    assert _prefetch_mode(None, cpu, group, 'L') is False  # (no warning)
    assert _prefetch_mode(False, gpu, group, 'L') is False
    with pytest.raises(ValueError, match="with a 'group' of your own"):
        _prefetch_mode(True, gpu, group, 'L')
    with pytest.raises(ValueError, match="None, False, True or 'thread'"):
        _prefetch_mode('threads', cpu, None, 'L')
