"""The benchmark harness on the CPU: rows carry the whole CSV schema, the
pipelined timer returns one period per step, the model-only floors are
filled for both timings, appending to a file of another schema is refused,
and the markdown report renders the ratios."""
import csv

import pytest
import torch

from pyg_fusesample.bench.csv_schema import COLUMNS, append_rows, read_rows
from pyg_fusesample.bench.report import markdown
from pyg_fusesample.bench.runner import (Bench, fill_model_ms, run_row,
                                         time_epoch)
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


def test_model_fresh_floor_uses_each_batch_once(bench):
    # model-fresh hands out distinct pre-sampled batches, one per call, and
    # fills its own floor columns beside model-only's.
    it = bench.batches('model-fresh', [3, 2], 32, 0, count=5)
    batches = list(it)
    assert len(batches) == 5
    assert len({tuple(b.n_id[:32].tolist()) for b in batches}) == 5
    rows = [run_row(bench, 'g', [3, 2], 32, False, variant, 0, steps=2,
                    warmup=1) for variant in ('fused', 'model-only',
                                              'model-fresh')]
    fill_model_ms(rows)
    assert rows[0]['fresh_model_ms'] == rows[2]['step_ms']
    assert rows[0]['pipelined_fresh_model_ms'] == rows[2]['pipelined_step_ms']
    assert rows[0]['model_ms'] == rows[1]['step_ms']
    assert rows[2]['loader_ms'] == '0'


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


def test_walk_columns_extend_the_schema(tmp_path):
    # bench walk's rows: the shared columns first, then its own; a file of
    # either schema refuses rows of the other.
    from pyg_fusesample.bench.csv_schema import WALK_COLUMNS
    assert WALK_COLUMNS[:len(COLUMNS)] == COLUMNS
    assert len(set(WALK_COLUMNS)) == len(WALK_COLUMNS)
    walk = tmp_path / 'walk.csv'
    append_rows(str(walk), [{'device': 'cpu', 'p': '1.0'}],
                columns=WALK_COLUMNS)
    assert read_rows(str(walk))[0]['p'] == '1.0'
    with pytest.raises(ValueError, match='other columns'):
        append_rows(str(walk), [{'device': 'cpu'}])
    shared = tmp_path / 'shared.csv'
    append_rows(str(shared), [{'device': 'cpu'}])
    with pytest.raises(ValueError, match='other columns'):
        append_rows(str(shared), [{'device': 'cpu'}], columns=WALK_COLUMNS)


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


def test_layers_fused_rows_against_pyg_layers(tmp_path):
    """--layers pyg fused: every variant with PyG's convs and with ours
    (to_fused, the batch's counts passed: trimmed); each row's floor is the
    model-only row of its own layers, and the report's speed-up compares
    every row with the NeighborLoader row on PyG's layers (the end-to-end
    figure of issue 44)."""
    from pyg_fusesample.bench.__main__ import main
    out = tmp_path / 'e2e.csv'
    assert main(['step', '--graph', 'arxiv', '--scale', '0.005', '--device',
                 'cpu', '--variants', 'pyg', 'fused', 'model-only',
                 '--fanouts', '3,2', '--batch-sizes', '32', '--steps', '2',
                 '--warmup', '1', '--layers', 'pyg', 'fused', '--out',
                 str(out)]) == 0
    rows = read_rows(str(out))
    assert [(r['layers'], r['variant']) for r in rows] == [
        (layers, v) for layers in ('pyg', 'fused')
        for v in ('pyg', 'fused', 'model-only')]
    for r in rows:
        floor = rows[3 * (r['layers'] == 'fused') + 2]
        assert r['model_ms'] == floor['step_ms']
    report = (tmp_path / 'e2e.md').read_text()
    assert '| fused + fused layers |' in report
    assert '| model-only + fused layers |' in report
    # (every row, ours included, against the NeighborLoader row)
    assert report.count('x (w=0)') == len(rows)
    with pytest.raises(SystemExit, match='node classification'):
        main(['step', '--task', 'link', '--layers', 'fused', '--graph',
              'arxiv', '--scale', '0.005', '--device', 'cpu'])


def test_a_setting_is_written_as_soon_as_it_is_measured(tmp_path,
                                                          monkeypatch):
    """A run stopped during a later setting (a time limit, a crash) keeps
    the CSV rows of the settings measured before it, floors filled."""
    from pyg_fusesample.bench import runner
    from pyg_fusesample.bench.__main__ import main
    measure = runner.run_row

    def failing(bench, graph, fanout, *args, **kwargs):
        if fanout == [2, 2]:
            raise RuntimeError('stopped')
        return measure(bench, graph, fanout, *args, **kwargs)
    monkeypatch.setattr(runner, 'run_row', failing)
    out = tmp_path / 'step.csv'
    with pytest.raises(RuntimeError, match='stopped'):
        main(['step', '--graph', 'arxiv', '--scale', '0.005', '--device',
              'cpu', '--variants', 'fused', 'model-only', '--fanouts', '3,2',
              '2,2', '--batch-sizes', '32', '--steps', '2', '--warmup', '1',
              '--out', str(out)])
    rows = read_rows(str(out))
    assert [(r['fanout'], r['variant']) for r in rows] == [
        ('3-2', 'fused'), ('3-2', 'model-only')]
    assert rows[0]['model_ms'] == rows[1]['step_ms']


def test_rounds_summary_compares_sage_rows_with_the_captured_step():
    """`bench sage` rows of several rounds: each row over the CapturedStep
    row (fused-sage-graph) of its own round."""
    from pyg_fusesample.bench.report import rounds_summary
    base = dict(device='d', graph='g', fanout='3-2', batch_size='32',
                amp='off', num_workers='0')
    rows = [dict(base, variant=v, step_ms=ms, round=rnd)
            for rnd, (captured, compiled) in enumerate([(1.0, 3.0), (2.0, 2.0)])
            for v, ms in (('fused-sage-graph', captured),
                          ('fused-sage-compiled', compiled))]
    summary = rounds_summary(rows)
    assert 'step / CapturedStep' in summary
    line = next(x for x in summary.splitlines() if 'fused-sage-compiled' in x)
    assert '2.500 (2.000-3.000)' in line and line.endswith('2.00 (1.00-3.00) |')


def test_rounds_must_be_positive():
    from pyg_fusesample.bench.__main__ import main
    with pytest.raises(SystemExit):
        main(['step', '--rounds', '0'])


# Heterogeneous node classification and link prediction ####################

@pytest.fixture(scope='module')
def mag_bench():
    from pyg_fusesample.datasets.mag_like import mag_like
    return Bench(mag_like(scale=0.001, features='all'), torch.device('cpu'),
                 seed=0)


@pytest.fixture(scope='module')
def link_bench():
    from pyg_fusesample.bench.link import LinkBench
    data = power_law_graph(600, 6.0, num_features=8, num_classes=3, seed=1)
    return LinkBench(data, torch.device('cpu'), seed=0)


def _check_rows(rows, data):
    """Every row fills the schema; model-only is every row's floor."""
    fill_model_ms(rows)
    floor = rows[-1]
    assert floor['variant'] == 'model-only' and floor['loader_ms'] == '0'
    for row in rows:
        assert set(row) <= set(COLUMNS)
        assert row['num_nodes'] == data.num_nodes
        assert row['num_edges'] == data.num_edges
        assert float(row['step_ms']) > 0
        assert row['model_ms'] == floor['step_ms']
        assert row['pipelined_model_ms'] == floor['pipelined_step_ms']
        if row is not floor:
            assert float(row['pipelined_step_ms']) > 0
            assert float(row['loader_ms']) > 0
            assert float(row['sampled_edges_per_s']) > 0
    table = markdown(rows)
    assert table.count('\n') == 2 + len(rows)


@pytest.mark.parametrize('train', [True, False])
def test_hetero_rows_fill_the_schema(mag_bench, train):
    """mag_like: seeds are the train papers, the to_hetero model trains on
    them, sampled edges count every edge type."""
    assert mag_bench.node_type == 'paper'
    assert 'torch-gpu' not in mag_bench.VARIANTS
    rows = [run_row(mag_bench, 'mag_like', [3, 2], 32, False, variant, 0,
                    steps=1, warmup=0, train=train)
            for variant in ('pyg', 'fused', 'fused-sync', 'model-only')]
    _check_rows(rows, mag_bench.data_cpu)


def test_hetero_model_and_loss(mag_bench):
    """Lazy layers are initialised before the optimizer takes them; the loss
    is the cross-entropy of the paper seeds."""
    from pyg_fusesample.bench.runner import forward
    from torch.nn.parameter import is_lazy
    model, opt = mag_bench.model(2)
    assert not any(is_lazy(p) for p in model.parameters())
    assert sum(len(g['params']) for g in opt.param_groups) == len(
        list(model.parameters()))
    batch = next(mag_bench.batches('fused', [3, 2], 16, 0))
    assert set(batch.edge_types) == set(mag_bench.data_cpu.edge_types)
    out = forward(model, batch)['paper']
    assert out.shape == (batch['paper'].num_nodes, mag_bench.num_classes)
    assert mag_bench.loss(model, batch).dim() == 0


def test_hetero_needs_features_for_every_type():
    from pyg_fusesample.datasets.mag_like import mag_like
    with pytest.raises(ValueError, match="have no 'x'"):
        Bench(mag_like(scale=0.0003), torch.device('cpu'))


@pytest.mark.parametrize('train', [True, False])
def test_link_rows_fill_the_schema(link_bench, train):
    rows = [run_row(link_bench, 'g/link', [3, 2], 32, False, variant, 0,
                    steps=1, warmup=0, train=train)
            for variant in ('pyg', 'fused', 'per-hop', 'model-only')]
    _check_rows(rows, link_bench.data_cpu)


def test_link_seeds_and_batches(link_bench):
    """10% of the graph's edges, drawn by the seed; a batch of 32 seed edges
    carries 32 positives and 32 binary negatives."""
    from pyg_fusesample.bench.link import SEED_FRACTION, LinkBench
    data = link_bench.data_cpu
    assert link_bench.num_seeds() == round(SEED_FRACTION * data.num_edges)
    index = link_bench.label_index
    assert torch.equal(index, LinkBench(data, link_bench.device,
                                        seed=0).label_index)
    keys = set((data.edge_index[0] * data.num_nodes
                + data.edge_index[1]).tolist())
    assert set((index[0] * data.num_nodes + index[1]).tolist()) <= keys
    for variant in ('pyg', 'fused'):
        batch = next(link_bench.batches(variant, [3, 2], 32, 0))
        assert batch.edge_label_index.shape == (2, 64)
        assert batch.edge_label.tolist() == [1.0] * 32 + [0.0] * 32
    with pytest.raises(ValueError, match='unknown variant'):
        link_bench.batches('fused-sync', [3], 32, 0)


def test_epoch_rows_of_the_new_tasks(mag_bench, link_bench):
    """One epoch is ceil(seeds / batch size) batches: train papers, seed
    edges."""
    for bench, bs in ((mag_bench, 256), (link_bench, 64)):
        row = time_epoch(bench, 'g', [3, 2], bs, 'fused')
        assert row['steps'] == -(-bench.num_seeds() // bs)
        assert float(row['sampled_edges_per_s']) > 0


def test_link_task_cli_and_report(tmp_path):
    """`step --task link`: rows name the task in graph, variants that link
    prediction lacks are refused before anything runs, and the report
    reads the CSV."""
    from pyg_fusesample.bench.__main__ import main
    out = tmp_path / 'link.csv'
    argv = ['step', '--task', 'link', '--graph', 'arxiv', '--scale',
            '0.005', '--device', 'cpu', '--fanouts', '3,2', '--batch-sizes',
            '32', '--steps', '1', '--warmup', '0', '--out', str(out)]
    with pytest.raises(SystemExit, match='do not apply'):
        main(argv + ['--variants', 'fused-prefetch'])
    assert not out.exists()
    assert main(argv + ['--variants', 'pyg', 'fused', 'model-only']) == 0
    rows = read_rows(str(out))
    assert [r['variant'] for r in rows] == ['pyg', 'fused', 'model-only']
    assert {r['graph'] for r in rows} == {'arxiv_like(scale=0.005)/link'}
    assert all(r['model_ms'] == rows[-1]['step_ms'] for r in rows)
    report = (tmp_path / 'link.md').read_text()
    assert report.count('arxiv_like(scale=0.005)/link') == 3


def test_hetero_link_rows(tmp_path):
    """user_item: the seed edges are ('user', 'rates', 'item') ones, the
    to_hetero encoder scores them by dot product."""
    from pyg_fusesample.bench.link import LinkBench
    from pyg_fusesample.datasets import get_dataset
    bench = LinkBench(get_dataset('user_item', scale=0.1),
                      torch.device('cpu'), seed=0)
    assert bench.edge_type == ('user', 'rates', 'item')
    rows = [run_row(bench, 'user_item/link', [3, 2], 16, False, variant, 0,
                    steps=1, warmup=0)
            for variant in ('pyg', 'fused', 'model-only')]
    _check_rows(rows, bench.data_cpu)


def test_mag_cli_and_default_variants(tmp_path):
    """`--graph mag` builds mag_like with features for every node type; a
    default variant list drops what a graph lacks (torch-gpu on a
    HeteroData), an explicit one is refused."""
    import argparse
    from pyg_fusesample.bench.__main__ import _variants, main
    out = tmp_path / 'loader.csv'
    assert main(['loader', '--graph', 'mag', '--scale', '0.001', '--device',
                 'cpu', '--fanouts', '3,2', '--batch-sizes', '32', '--steps',
                 '1', '--warmup', '0', '--out', str(out)]) == 0
    rows = read_rows(str(out))
    assert [r['variant'] for r in rows] == ['pyg', 'fused']
    assert {r['graph'] for r in rows} == {'mag_like(scale=0.001)'}
    assert all(float(r['sampled_edges_per_s']) > 0 for r in rows)
    parser = argparse.ArgumentParser()
    parser.add_argument('--variants', nargs='+', default=['fused',
                                                          'torch-gpu'])
    supported = ('fused', 'model-only')
    assert _variants(parser.parse_args([]), parser, supported) == ['fused']
    with pytest.raises(SystemExit, match='do not apply'):
        _variants(parser.parse_args(['--variants', 'torch-gpu']), parser,
                  supported)


def test_fused_sage_compiled_row(bench):
    """The fused-sage-compiled variant (FusedGraphSAGE under
    torch.compile(fullgraph=True)) fills a row; its model trains."""
    from pyg_fusesample.bench.sage_runner import FusedSage, sage_row
    torch._dynamo.reset()
    row = sage_row(bench, 'g', [3, 2], 32, False, 'fused-sage-compiled',
                   steps=2, warmup=1)
    assert row['variant'] == 'fused-sage-compiled'
    assert float(row['step_ms']) > 0 and set(row) <= set(COLUMNS)
    run = FusedSage(bench, [3, 2], hidden=16, compile_mode='default')
    assert run.forward is not run.model
    seeds = run.train_idx[:32]
    before = [p.detach().clone() for p in run.model.parameters()]
    run.step(seeds, torch.autocast('cpu', enabled=False))
    assert any(not torch.equal(a, p) for a, p in
               zip(before, run.model.parameters()))


def test_compile_floor_row(bench):
    """The compile-floor variant (GEMMs with FusedGraphSAGE's parameters,
    compiled) fills a row without sampled edges; its model has
    FusedGraphSAGE's parameter shapes and trains."""
    from pyg_fusesample.bench.sage_runner import FusedSage, sage_row
    torch._dynamo.reset()
    row = sage_row(bench, 'g', [3, 2], 32, False, 'compile-floor',
                   steps=2, warmup=1)
    assert row['variant'] == 'compile-floor'
    assert float(row['step_ms']) > 0 and float(row['sampled_edges_per_s']) == 0
    floor = FusedSage(bench, [3, 2], hidden=16, floor=True)
    sage = FusedSage(bench, [3, 2], hidden=16)
    assert (sorted(p.shape for p in floor.model.parameters())
            == sorted(p.shape for p in sage.model.parameters()))
    before = [p.detach().clone() for p in floor.model.parameters()]
    floor.step(floor.train_idx[:32], torch.autocast('cpu', enabled=False))
    assert all(not torch.equal(a, p) for a, p in
               zip(before, floor.model.parameters()))
    x = bench.data_dev.x  # (no seeds: every node, as sage-curve's inference)
    assert floor.model(x, bench.data_dev.edge_index).shape == (
        x.size(0), bench.num_classes)
