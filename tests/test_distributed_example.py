"""examples/distributed_sage.py as a user starts it (issue 45): 2 gloo
processes under torchrun print one line per epoch with the test accuracy;
a run stopped after an epoch and resumed from its checkpoint prints the
same later losses and accuracies as an uninterrupted run; two torchrun
"nodes" on one host (each writing its own partition files, sharing only the
process group) train as the single-node run does; bad arguments stop it
with a message. SYNTHETIC products-like at scale 0.01, and the mag-like
(heterogeneous) form at scale 0.003 (run, resume)."""
import re
import socket
import subprocess
import sys

import pytest
import torch

from example_runner import EXAMPLES, REPO

SCRIPT = EXAMPLES / 'distributed_sage.py'
EPOCH = re.compile(r'^SYNTHETIC (?:products|mag)-like: epoch (\d+): loss '
                   r'([\d.]+), (\d+) steps a rank, [\d.]+ s, test accuracy '
                   r'([\d.]+)$', re.M)


def torchrun(*args, nodes=None, timeout=240, device='cpu', scale='0.01'):
    cmd = [sys.executable, '-m', 'torch.distributed.run']
    cmd += nodes or ['--standalone', '--nproc_per_node', '2']
    cmd += [str(SCRIPT), '--device', device, '--synthetic', '--scale', scale,
            *map(str, args)]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(proc, timeout=240):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-3000:]
    return out


def epochs(out):
    return [(int(e), loss, int(steps), acc)
            for e, loss, steps, acc in EPOCH.findall(out)]


def test_two_processes_print_the_accuracy(tmp_path):
    out = finish(torchrun('--epochs', '1', '--partition-dir', tmp_path))
    (epoch, loss, steps, acc), = epochs(out)
    assert epoch == 1 and steps > 0 and 0 < float(acc) <= 1


two_gpus = pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason='needs 2 GPUs (one per rank)')


@pytest.mark.cuda
@two_gpus
@pytest.mark.parametrize('pin', [False, True])
def test_two_gpus_print_the_accuracy(tmp_path, pin):
    # NCCL, rank r's part on GPU r (its features pinned in host memory with
    # --pin-features)
    out = finish(torchrun('--epochs', '1', '--partition-dir', tmp_path,
                          *(['--pin-features'] if pin else []),
                          device='cuda'))
    assert '(cuda, nccl)' in out
    (epoch, loss, steps, acc), = epochs(out)
    assert epoch == 1 and steps > 0 and 0 < float(acc) <= 1


def test_mag_like_prints_the_accuracy(tmp_path):
    # a heterogeneous partition: PyG's to_hetero GraphSAGE, paper seeds
    out = finish(torchrun('--epochs', '1', '--graph', 'mag', '--partition-dir',
                          tmp_path, scale='0.003'))
    assert 'SYNTHETIC mag-like: 2 ranks' in out
    (epoch, loss, steps, acc), = epochs(out)
    assert epoch == 1 and steps > 0 and 0 <= float(acc) <= 1


@pytest.mark.parametrize('graph', ['products', 'mag'])
def test_resume_gives_the_uninterrupted_run(tmp_path, graph):
    parts = ['--partition-dir', tmp_path / 'parts', '--graph', graph]
    scale = '0.003' if graph == 'mag' else '0.01'
    full = epochs(finish(torchrun('--epochs', '3', *parts, scale=scale)))
    ckpt = tmp_path / 'ckpt.pt'
    first = epochs(finish(torchrun('--epochs', '1', '--checkpoint', ckpt,
                                   *parts, scale=scale)))
    rest = finish(torchrun('--epochs', '3', '--checkpoint', ckpt, '--resume',
                           *parts, scale=scale))
    assert 'resumed after epoch 1' in rest
    assert first + epochs(rest) == full
    assert len(full) == 3


def _free_port():
    with socket.socket() as s:
        s.bind(('localhost', 0))
        return s.getsockname()[1]


def test_two_nodes_share_only_the_process_group(tmp_path):
    port = _free_port()
    runs = [torchrun('--epochs', '2', '--partition-dir', tmp_path, nodes=[
        '--nnodes', '2', '--node_rank', str(node), '--nproc_per_node', '1',
        '--rdzv_backend', 'c10d', '--rdzv_endpoint', f'localhost:{port}',
        '--rdzv_id', 'test']) for node in (0, 1)]
    outs = [finish(p) for p in runs]
    # each node wrote its own partition folder
    assert sorted(p.name.rsplit('_', 1)[1] for p in tmp_path.iterdir()) == [
        'node0', 'node1']
    single = epochs(finish(torchrun('--epochs', '2', '--partition-dir',
                                    tmp_path / 'single')))
    assert epochs(outs[0]) + epochs(outs[1]) == single


@pytest.mark.parametrize('args,message', [
    pytest.param(['--device', 'cuda', '--synthetic'], 'no CUDA GPU',
                 marks=pytest.mark.skipif(torch.cuda.is_available(),
                                          reason='a GPU is visible')),
    (['--device', 'cpu', '--synthetic', '--pin-features'], 'needs --device '
     'cuda'),
    ([], '--partition-root DIR'),
])
def test_bad_arguments(args, message):
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and message in proc.stderr
