"""benchmarks/dist_accuracy.py (issue 45's accuracy parity on Cora): one
seed, one epoch, single process and 2 gloo ranks, writes its CSV rows."""
import csv
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_dist_accuracy_runs(cora_root, tmp_path):
    out = tmp_path / 'acc.csv'
    done = subprocess.run(
        [sys.executable, str(REPO / 'benchmarks' / 'dist_accuracy.py'),
         '--cora-root', str(cora_root), '--seeds', '0', '--epochs', '1',
         '--out', str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = list(csv.DictReader(out.open()))
    assert [(r['world'], r['batch_per_rank']) for r in rows] == [
        ('1', '32'), ('2', '16')]
    assert all(0.0 <= float(r['test_accuracy']) <= 1.0 for r in rows)
    assert 'largest per-seed difference' in done.stdout
