"""The benchmark harness on the CPU: rows carry the whole CSV schema, the
pipelined timer returns one period per step, the model-only floors are
filled for both timings, appending to a file of another schema is refused,
and the markdown report renders the ratios."""
import csv

import pytest
import torch

from pyg_fusesample.bench.csv_schema import COLUMNS, append_rows, read_rows
from pyg_fusesample.bench.report import markdown
from pyg_fusesample.bench.runner import Bench, fill_model_ms, run_row
from pyg_fusesample.bench.timing import pipelined_periods
from pyg_fusesample.datasets import power_law_graph


@pytest.fixture(scope='module')
def bench():
    data = power_law_graph(600, 6.0, num_features=8, num_classes=3, seed=1)
    return Bench(data, torch.device('cpu'), seed=0)


def test_pipelined_periods_one_per_step():
    calls = []
    periods = pipelined_periods(lambda: calls.append(1), steps=4, warmup=2,
                                device=torch.device('cpu'))
    assert len(periods) == 4 and len(calls) == 2 + 4 + 1
    assert all(p >= 0 for p in periods)


@pytest.mark.parametrize('train', [True, False])
def test_rows_fill_the_schema(bench, train):
    rows = [run_row(bench, 'g', [3, 2], 32, False, variant, 0, steps=2,
                    warmup=1, train=train)
            for variant in ('fused', 'fused-sync', 'per-hop', 'model-only')]
    fill_model_ms(rows)
    for row in rows:
        assert set(row) <= set(COLUMNS)
        assert float(row['step_ms']) > 0
        if train or row['variant'] != 'model-only':  # else: next() of a list
            assert float(row['pipelined_step_ms']) > 0
        assert row['model_ms'] == rows[-1]['step_ms']
        assert row['pipelined_model_ms'] == rows[-1]['pipelined_step_ms']
    assert rows[-1]['loader_ms'] == '0'
    assert float(rows[0]['sampled_edges_per_s']) > 0
    table = markdown(rows)
    assert 'pipelined / model-only' in table
    assert table.count('\n') == 2 + len(rows)


def test_unknown_variant_raises(bench):
    with pytest.raises(ValueError, match='unknown variant'):
        run_row(bench, 'g', [3], 32, False, 'fastest', 0, steps=1, warmup=0)


def test_append_rows_refuses_another_schema(tmp_path):
    path = tmp_path / 'rows.csv'
    append_rows(str(path), [{'device': 'cpu', 'step_ms': '1.0'}])
    append_rows(str(path), [{'device': 'cpu', 'step_ms': '2.0'}])
    rows = read_rows(str(path))
    assert [r['step_ms'] for r in rows] == ['1.0', '2.0']
    old = tmp_path / 'old.csv'
    with open(old, 'w', newline='') as f:
        csv.writer(f).writerow(COLUMNS[:-1])
    with pytest.raises(ValueError, match='other columns'):
        append_rows(str(old), [{'device': 'cpu'}])


def test_rounds_interleave_and_compare_within_a_round(tmp_path):
    """--rounds N measures every variant N times, in turn; each row's floor
    is the model-only row of its own round, and the report adds the median
    (min-max) of those ratios over the rounds."""
    from pyg_fusesample.bench.__main__ import main
    out = tmp_path / 'step.csv'
    assert main(['step', '--graph', 'arxiv', '--scale', '0.005', '--device',
                 'cpu', '--variants', 'fused', 'model-only', '--fanouts',
                 '3,2', '--batch-sizes', '32', '--steps', '2', '--warmup',
                 '1', '--rounds', '2', '--out', str(out)]) == 0
    rows = read_rows(str(out))
    assert [(r['round'], r['variant']) for r in rows] == [
        ('0', 'fused'), ('0', 'model-only'), ('1', 'fused'),
        ('1', 'model-only')]
    for r in rows:
        floor = rows[2 * int(r['round']) + 1]
        assert r['model_ms'] == floor['step_ms']
        assert r['pipelined_model_ms'] == floor['pipelined_step_ms']
    report = (tmp_path / 'step.md').read_text()
    assert 'fused (round 1)' in report
    assert 'Median (min-max) over the interleaved rounds' in report
    summary = report.split('own round:')[1]
    assert summary.count('| fused | 0 | 2 |') == 1


def test_rounds_must_be_positive():
    from pyg_fusesample.bench.__main__ import main
    with pytest.raises(SystemExit):
        main(['step', '--rounds', '0'])
