"""The build a user meets: a wheel that installs and imports in a fresh
environment, an sdist that carries every kernel source, and a re-build with
nothing changed that compiles nothing (docs/building.md)."""
import glob
import os
import re
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
# A build on a GPU machine compiles the CUDA kernels; minutes, not seconds,
# if the object folder is cold. The CPU build reuses the objects of the
# in-place build the test command made (setup.py keeps one object folder).
pytestmark = pytest.mark.skipif(
    not glob.glob(str(ROOT / 'pyg_fusesample' / '_C*.so')),
    reason='the extension is not built in place (scripts/install.sh builds it)')


def run(args, cwd=ROOT, env=None, timeout=900):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, (f'{args} failed ({done.returncode}):\n'
                                  f'{done.stdout[-3000:]}\n{done.stderr[-3000:]}')
    return done.stdout + done.stderr


def local_version_tag() -> str:
    major, minor = torch.__version__.split('+')[0].split('.')[:2]
    cuda = torch.version.cuda
    return f'pt{major}{minor}' + (f"cu{cuda.replace('.', '')}" if cuda else 'cpu')


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    dist = tmp_path_factory.mktemp('dist')
    env = dict(os.environ, FUSESAMPLE_LOCAL_VERSION='auto')
    run([PY, '-m', 'pip', 'wheel', '--no-build-isolation', '--no-deps', '-q',
         '-w', str(dist), str(ROOT)], env=env)
    wheels = list(dist.glob('pyg_fusesample-*.whl'))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_is_named_for_its_torch_build(wheel):
    # pyg-lib's convention: the local version says which torch/CUDA pair the
    # compiled extension is for.
    assert f'+{local_version_tag()}-' in wheel.name


def test_wheel_installs_and_imports_in_a_fresh_environment(wheel, tmp_path):
    env_dir = tmp_path / 'venv'
    venv.create(env_dir, with_pip=False)
    vpy = str(env_dir / 'bin' / 'python')
    # torch and PyG (the wheel's dependencies) from this interpreter's
    # site-packages, listed as plain paths: their .pth files (this
    # checkout's editable install among them) are not run, so the package
    # can only come from the wheel.
    site_dir = run([vpy, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                   cwd=tmp_path).strip()
    Path(site_dir, '_parent_site.pth').write_text(
        '\n'.join(p for p in sys.path if p.endswith('-packages')) + '\n')
    run([PY, '-m', 'pip', '--python', vpy, 'install', '--no-deps', '--no-index', '-q',
         str(wheel)], cwd=tmp_path)
    out = run([vpy, '-c', (
        'import torch, pyg_fusesample as p\n'
        'print(p.__file__)\n'
        'try:  # a seed out of range: the op and its error path are there\n'
        '    torch.ops.fusesample.neighbor_sample(torch.zeros(3, dtype=torch.long),\n'
        '        torch.zeros(0, dtype=torch.long), None, torch.tensor([7]), [1])\n'
        'except RuntimeError as e:\n'
        '    print("error:", str(e).splitlines()[0])\n')], cwd=tmp_path)
    first = out.splitlines()[0]
    assert first.startswith(str(env_dir)), f'imported from {first}, not the wheel'
    assert 'error: fusesample::neighbor_sample' in out, out


def test_sdist_carries_every_kernel_source(tmp_path):
    run([PY, 'setup.py', '-q', 'sdist', '-d', str(tmp_path)])
    (sdist,) = tmp_path.glob('pyg_fusesample-*.tar.gz')
    with tarfile.open(sdist) as tar:
        names = {n.split('/', 1)[1] for n in tar.getnames() if '/' in n}
    sources = {str(p.relative_to(ROOT)) for ext in ('cpp', 'cu', 'h', 'cuh')
               for p in (ROOT / 'kernels').rglob(f'*.{ext}')}
    assert sources and not sources - names, sorted(sources - names)[:10]


def test_rebuild_with_nothing_changed_compiles_nothing():
    out = run([PY, 'setup.py', 'build_ext', '--inplace'])
    # ninja prints one [i/n] line per object it compiles.
    compiled = re.findall(r'^\[\d+/\d+\] .*(?:c\+\+|g\+\+|nvcc).* -c ', out, re.M)
    assert not compiled, compiled[:3]
    assert 'no work to do' in out or 'up-to-date' in out
