"""``bench gather`` on the CPU: the schema, the host row, skip reasons; on a
GPU every variant measures (and the cache's hit rate is reported)."""
import argparse
import csv

import pytest
import torch

from pyg_fusesample.bench import gather_runner


def _args(tmp_path, device):
    return argparse.Namespace(scale=0.005, features=[32], dtypes=['float32'],
                              rows=2000, cache_fractions=[0.1], repeats=3,
                              seed=0, device=device,
                              out=str(tmp_path / 'gather.csv'))


def _rows(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def test_cpu_rows(tmp_path):
    args = _args(tmp_path, 'cpu')
    assert gather_runner.main(args) == 0
    rows = _rows(args.out)
    assert list(rows[0]) == gather_runner.GATHER_COLUMNS
    by = {r['variant']: r for r in rows}
    assert float(by['cpu-index-select']['gb_per_s']) > 0
    for v in ('memcpy-h2d', 'host-gather', 'device-gather',
              'cached-gather-0.1'):
        assert by[v]['note'].startswith('skipped: needs a CUDA device')


def test_hot_batch_is_distinct_and_degree_biased():
    degree = torch.tensor([1000, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    hits = sum(int(0 in gather_runner.hot_batch(degree, 2, s).tolist())
               for s in range(50))
    assert hits == 50
    batch = gather_runner.hot_batch(torch.ones(100, dtype=torch.long), 60, 0)
    assert batch.unique().numel() == 60


@pytest.mark.cuda
def test_cuda_rows(tmp_path):
    args = _args(tmp_path, 'cuda')
    assert gather_runner.main(args) == 0
    by = {r['variant']: r for r in _rows(args.out)}
    for v in ('memcpy-h2d', 'host-gather', 'device-gather',
              'cached-gather-0.1', 'cpu-index-select'):
        assert float(by[v]['gb_per_s']) > 0
    assert 0 < float(by['cached-gather-0.1']['hit_rate']) <= 1
