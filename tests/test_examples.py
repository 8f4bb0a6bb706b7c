"""examples/cora_sage.py runs with either loader (the one-line swap)."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / 'examples' / 'cora_sage.py'
PYG_IMPORT = 'from torch_geometric.loader import NeighborLoader'
SWAP = 'from pyg_fusesample import FusedNeighborLoader as NeighborLoader'


def run_example(*args, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_import_is_the_only_difference():
    lines = SCRIPT.read_text().splitlines()
    code = [ln for ln in lines if ln.strip()]
    pyg = [i for i, ln in enumerate(code) if ln.startswith(PYG_IMPORT)]
    swap = [i for i, ln in enumerate(code) if ln.startswith('# ' + SWAP)]
    # The top reads: PyG's import, then the commented one-line swap.
    assert len(pyg) == 1 and swap == [pyg[0] + 1]
    # Apart from the import, the code only knows the name NeighborLoader.
    tree = ast.parse(SCRIPT.read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert 'NeighborLoader' in names and 'FusedNeighborLoader' not in names
    imports = [(n.module, a.name, a.asname) for n in ast.walk(tree)
               if isinstance(n, ast.ImportFrom) for a in n.names
               if 'NeighborLoader' in a.name]
    assert sorted(imports, key=str) == sorted(
        [('torch_geometric.loader', 'NeighborLoader', None),
         ('pyg_fusesample', 'FusedNeighborLoader', 'NeighborLoader')],
        key=str)

@pytest.mark.parametrize('loader', ['pyg', 'fused'])
def test_cora_sage_example(cora_root, loader):
    proc = run_example('--root', cora_root, '--epochs', 2, '--loader', loader,
                       '--device', 'cpu')
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    expected = {'pyg': 'torch_geometric.loader', 'fused': 'pyg_fusesample'}
    assert re.search(rf'^Loader: {re.escape(expected[loader])}\S*'
                     rf'NeighborLoader,', out, re.M), out
    epochs = re.findall(r'^Epoch: (\d+), Loss: ([\d.]+), Val: ([\d.]+), '
                        r'Test: ([\d.]+), Time: ([\d.]+)s$', out, re.M)
    assert [int(e[0]) for e in epochs] == [1, 2], out
    final = re.search(r'^Final test accuracy: ([\d.]+)$', out, re.M)
    assert final, out
    acc = float(final.group(1))
    assert acc == float(epochs[-1][3])
    # Two epochs of GraphSAGE on Cora beat the majority class (~0.32).
    assert 0.45 < acc <= 1.0, out


def test_cora_sage_example_missing_root(tmp_path):
    proc = run_example('--root', tmp_path / 'nowhere', '--epochs', 1,
                       '--loader', 'fused', timeout=120)
    assert proc.returncode != 0
    assert 'Cora' in proc.stderr and 'raw' in proc.stderr
