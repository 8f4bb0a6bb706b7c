"""``python -m pyg_fusesample.bench walk`` on the CPU, on a small graph:
every variant gets a row of the walk schema, the fused ones measured (walk
steps/s and the memory bound > 0), those that need torch_cluster or pyg-lib
reported as skipped, with the reason, where those are not installed."""
import csv
import importlib.util
import math

import pytest
import torch

from pyg_fusesample.bench.__main__ import main
from pyg_fusesample.bench.csv_schema import WALK_COLUMNS, read_rows
from pyg_fusesample.bench.walk_runner import (N2V_VARIANTS, WALK_VARIANTS,
                                              out_bytes, uniform_step_sectors)

HAS_TORCH_CLUSTER = importlib.util.find_spec('torch_cluster') is not None


def test_uniform_step_sectors():
    # rowptr pair (1 + 8/granule), col (1), the node written (8/granule),
    # and the edge id too (16/granule) for torch_cluster
    assert uniform_step_sectors(32) == pytest.approx(2.5)
    assert uniform_step_sectors(32, 16) == pytest.approx(2.75)
    assert uniform_step_sectors(64) == pytest.approx(2.25)
    assert uniform_step_sectors(64, out_bytes('torch-cluster-uniform')) \
        == pytest.approx(2.375)
    assert out_bytes('fused-uniform') == 8


def test_walk_bench_cpu(tmp_path, capsys):
    out = tmp_path / 'walk.csv'
    argv = ['walk', '--graphs', 'products', '--scale', 'small', '--device',
            'cpu', '--walk-length', '20', '--repeats', '3', '--warmup', '1',
            '--n2v-steps', '2', '--n2v-warmup', '1', '--n2v-batch-size', '64',
            '--out', str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    with open(out, newline='') as f:
        assert next(csv.reader(f)) == WALK_COLUMNS
    rows = read_rows(str(out))
    by = {(r['task'], r['variant']): r for r in rows}
    assert len(by) == len(rows)
    assert set(by) == ({('walk', v) for v in WALK_VARIANTS}
                       | {('node2vec', v) for v in N2V_VARIANTS})
    for r in rows:
        assert r['graph'].startswith('products_like(scale=')
        assert r['device'].startswith('cpu') and r['torch']
        assert int(r['num_nodes']) == 2000 and int(r['num_edges']) > 0

    for v in ('fused-uniform', 'fused-node2vec', 'fused-weighted'):
        r = by['walk', v]
        assert r['note'].startswith('timer=perf_counter')
        # (a 2,000-node graph sits in the cache: the row says so)
        assert 'the DRAM bound does not hold' in r['note']
        assert float(r['step_ms']) > 0 and r['steps'] == '3'
        assert float(r['walk_steps_per_s']) > 0
        assert r['sampled_edges_per_s'] == r['walk_steps_per_s']
        assert int(r['batch_size']) == 2000 and r['walk_steps'] == '20'
        assert float(r['sectors_per_s']) > 0
        assert float(r['sectors_per_step']) == pytest.approx(2.25)
        assert float(r['bound_steps_per_s']) == pytest.approx(
            float(r['sectors_per_s']) / 2.25, rel=1e-3)
    assert (by['walk', 'fused-node2vec']['p'],
            by['walk', 'fused-node2vec']['q']) == ('1.0', '0.5')
    assert (by['walk', 'fused-uniform']['p'],
            by['walk', 'fused-uniform']['q']) == ('1.0', '1.0')

    fused = by['node2vec', 'FusedNode2Vec']
    assert float(fused['step_ms']) > 0 and float(fused['loader_ms']) > 0
    assert fused['walk_steps'] == '19' and fused['batch_size'] == '64'
    assert int(fused['epoch_steps']) == math.ceil(2000 / 64)
    # (epoch_s is written with 2 decimals: up to 0.005 s off, 1.3% of a
    # 0.39 s epoch, so a relative tolerance alone failed by chance)
    assert float(fused['epoch_s']) == pytest.approx(
        int(fused['epoch_steps']) * float(fused['step_ms']) / 1e3, rel=0.01,
        abs=0.0051)
    fused_adam = by['node2vec', 'FusedNode2Vec+FusedSparseAdam']
    assert float(fused_adam['step_ms']) > 0
    assert 'optimizer FusedSparseAdam' in fused_adam['note']
    assert 'FusedSparseAdam' not in fused['note']

    if HAS_TORCH_CLUSTER:  # (measured like the fused rows)
        for v in ('torch-cluster-uniform', 'torch-cluster-node2vec'):
            r = by['walk', v]
            assert float(r['walk_steps_per_s']) > 0, r['note']
            assert float(r['bound_steps_per_s']) > 0
            assert float(r['sectors_per_step']) == pytest.approx(2.375)
        assert float(by['node2vec', 'pyg-node2vec-torch-cluster'][
            'step_ms']) > 0
    else:
        for key in (('walk', 'torch-cluster-uniform'),
                    ('walk', 'torch-cluster-node2vec'),
                    ('node2vec', 'pyg-node2vec-torch-cluster')):
            r = by[key]
            assert r['note'].startswith('skipped: torch_cluster not '
                                        'importable'), r['note']
            assert r['step_ms'] == '' and r['walk_steps_per_s'] == ''
            assert f"{key[1]}: skipped: torch_cluster" in printed

    from torch_geometric.typing import WITH_PYG_LIB
    if not WITH_PYG_LIB:
        assert by['node2vec', 'pyg-node2vec']['note'].startswith(
            'skipped: ')
    assert (tmp_path / 'walk.md').read_text().count('\n') == 4 + len(rows)


def test_hub_starts(tmp_path):
    # --hub-starts K: the walks start from the K nodes of highest out-degree
    # in equal shares, and the rows say so.
    from pyg_fusesample.bench.walk_runner import WalkBench
    from pyg_fusesample.datasets import products_like
    data = products_like(scale=2000 / 2449029)
    bench = WalkBench(data, 'g', torch.device('cpu'), 100, 5, 1.0, 1.0, 0,
                      1e9, hubs=4)
    deg = bench.graph.rowptr.diff()
    top = set(torch.topk(deg, 4).indices.tolist())
    assert bench.start.numel() == 100
    assert set(bench.start.tolist()) == top
    assert sorted(torch.bincount(bench.start).tolist())[-4:] == [25] * 4
    out = tmp_path / 'walk.csv'
    assert main(['walk', '--graphs', 'products', '--scale', 'small',
                 '--device', 'cpu', '--walk-length', '5', '--repeats', '1',
                 '--warmup', '0', '--n2v-steps', '0', '--hub-starts', '8',
                 '--variants', 'fused-uniform', '--out', str(out)]) == 0
    row, = read_rows(str(out))
    assert 'starts: the 8 highest out-degree nodes, 250 walks each' in \
        row['note'] and row['batch_size'] == '2000'
