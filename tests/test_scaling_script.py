"""benchmarks/scaling.py: the summary's arithmetic (epochs after the first,
efficiency against one process, speed-up against PyG's loader) on made-up
rows, and one real run of 1 and 2 gloo processes with both loaders on a
tiny SYNTHETIC graph."""
import csv
import os
import subprocess
import sys

import pytest

from example_runner import REPO, load_script

SCRIPT = REPO / 'benchmarks' / 'scaling.py'
scaling = load_script(SCRIPT)


def _row(loader, n, epoch, seeds_per_s, acc=0.5):
    return {'graph': 'products', 'data': 'g', 'loader': loader, 'amp': 'none',
            'world_size': str(n), 'epoch': str(epoch), 'num_workers': '8',
            'device_name': 'dev', 'epoch_time_s': str(100 / seeds_per_s),
            'seeds_per_s': str(seeds_per_s), 'test_acc': str(acc),
            'peak_mem_mib_max': '10', 'torch': 't'}


def test_summary_arithmetic():
    rows = [_row('fused', 1, 1, 10.0), _row('fused', 1, 2, 100.0),
            _row('fused', 2, 1, 10.0), _row('fused', 2, 2, 180.0, acc=0.6),
            _row('pyg', 1, 1, 20.0), _row('pyg', 2, 1, 36.0, acc=float('nan'))]
    s = {(r['loader'], r['world_size']): r for r in scaling.summarise(rows)}
    # the first epoch is left out where there are more
    assert s['fused', 1]['seeds_per_s'] == 100.0
    assert s['fused', 2]['efficiency'] == pytest.approx(180 / (2 * 100))
    assert s['fused', 2]['speedup_vs_pyg'] == pytest.approx(180 / 36)
    assert s['fused', 2]['test_acc'] == 0.6 and s['fused', 2]['epochs'] == 2
    # a one-epoch run uses its epoch; PyG rows get no speed-up over PyG
    assert s['pyg', 2]['seeds_per_s'] == 36.0
    assert s['pyg', 2]['speedup_vs_pyg'] is None
    table = scaling.markdown(list(s.values()))
    assert '| g | fused | none | 2 |' in table
    assert '| not evaluated |' in table  # a run with --eval-every 0



def test_trimmed_runs_are_settings_of_their_own():
    # --extra=--trim rows: their own efficiency and PyG comparison; rows of
    # files written before the trim column count as untrimmed.
    rows = [_row('fused', 1, 1, 100.0), _row('pyg', 1, 1, 20.0),
            dict(_row('fused', 1, 1, 150.0), trim='on'),
            dict(_row('fused', 2, 1, 280.0), trim='on'),
            dict(_row('pyg', 2, 1, 40.0), trim='on')]
    s = {(r['loader'], r['trim'], r['world_size']): r
         for r in scaling.summarise(rows)}
    assert s['fused', 'off', 1]['speedup_vs_pyg'] == pytest.approx(5.0)
    assert s['fused', 'on', 1]['speedup_vs_pyg'] is None  # no trimmed PyG row
    assert s['fused', 'on', 2]['efficiency'] == pytest.approx(280 / 300)
    assert s['fused', 'on', 2]['speedup_vs_pyg'] == pytest.approx(7.0)
    assert '| g | fused, trimmed | none | 2 |' in scaling.markdown(
        list(s.values()))

def test_two_gloo_processes_both_loaders(tmp_path):
    # --no-trim: the example trims by default where the batches carry
    # per-hop counts, which PyG's have only with pyg-lib (not here): the
    # loaders are compared untrimmed, like with like.
    out = tmp_path / 'scaling.csv'
    env = dict(os.environ, OMP_NUM_THREADS='1',
               PYTHONPATH=os.pathsep.join(
                   [str(REPO), os.environ.get('PYTHONPATH', '')]))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), '--device', 'cpu', '--synthetic',
         '--gpus', '1', '2', '--loaders', 'fused', 'pyg', '--amp', 'none',
         '--epochs', '1', '--max-steps', '2', '--batch-size', '32',
         '--num-workers', '0', '--extra=--scale=0.002', '--extra=--hidden=32',
         '--extra=--no-trim', '--out', str(out)], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, newline='') as f:
        rows = list(csv.DictReader(f))
    assert sorted((r['loader'], r['world_size']) for r in rows) == [
        ('fused', '1'), ('fused', '2'), ('pyg', '1'), ('pyg', '2')]
    fused2 = next(r for r in rows
                  if (r['loader'], r['world_size']) == ('fused', '2'))
    assert float(fused2['efficiency']) > 0 and float(fused2['speedup_vs_pyg']) > 0
    assert (tmp_path / 'scaling.md').exists()
    assert (tmp_path / 'scaling_epochs.csv').exists()
    # --summarise-only rewrites the summary from the epochs CSV, running
    # nothing (a merged file of runs split over several calls).
    (tmp_path / 'scaling.csv').unlink()
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), '--summarise-only', '--out', str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '$ ' not in proc.stdout  # no run started
    with open(out, newline='') as f:
        assert list(csv.DictReader(f)) == rows
