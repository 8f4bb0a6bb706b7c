"""`bench conv` on the CPU: one row per (F, dtype, variant) with the CSV's
columns, a rival that cannot take a dtype gets an 'unsupported' row instead
of failing the run, a 16-bit cell is also compared with AutoSpMMConv's own
float32 row, and the verdict flags a slower cell."""
import torch

from pyg_fusesample.bench import conv_runner
from pyg_fusesample.bench.csv_schema import append_rows, read_rows
from pyg_fusesample.datasets import power_law_graph


def test_rows_and_verdicts(tmp_path, monkeypatch):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', str(tmp_path / 'at.json'))
    data = power_law_graph(300, 5.0, num_features=4, num_classes=3, seed=2)
    rows = conv_runner.layer_rows('g', data, torch.device('cpu'), [8],
                                  ['float32', 'bfloat16'], steps=1)
    assert [(r['dtype'], r['variant']) for r in rows] == [
        (d, v) for d in ('float32', 'bfloat16') for v in conv_runner.VARIANTS]
    for r in rows:
        assert set(r) <= set(conv_runner.COLUMNS)
        assert ('warm_ms' in r) != r.get('note', '').startswith('unsupported')
        if r['variant'] == 'autospmm':  # the kernels it ran, both ways
            assert r['note'].startswith('forward ') and '; backward ' in r['note']
    path = tmp_path / 'conv.csv'
    append_rows(str(path), rows, columns=conv_runner.COLUMNS)
    written = read_rows(str(path))
    v = {x['dtype']: x for x in conv_runner.verdicts(written)}
    assert set(v['float32']['rivals']) == {'gcnconv', 'gcnconv-csr'}
    assert 'autospmm-fp32' in v['bfloat16']['rivals']
    assert v['bfloat16']['rivals']['autospmm-fp32'] == float(
        rows[0]['warm_ms'])
    md = conv_runner.markdown(str(path))
    assert md.count('\n| g | 8 |') == 2


def test_verdict_flags_a_slower_cell():
    base = dict(graph='g', features='8', cold_ms='1')
    rows = [dict(base, dtype='float32', variant='autospmm', warm_ms='2.0'),
            dict(base, dtype='float32', variant='gcnconv', warm_ms='1.0'),
            dict(base, dtype='float32', variant='gcnconv-csr', warm_ms='',
                 note='unsupported: x')]
    (v, ) = conv_runner.verdicts(rows)
    assert v['best_rival'] == 'gcnconv' and v['ratio'] == 2.0
    assert v['rivals'] == {'gcnconv': 1.0}


def test_decision_quality_times_the_choice_against_every_candidate(
        tmp_path, monkeypatch):
    """--quality: a fresh decision (the memo entry dropped, no decision
    file) and the chosen kernel over the best candidate, both SpMMs."""
    from pyg_fusesample.bench import decision_quality
    from pyg_fusesample.sparse.csr_graph import CSRGraph
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', str(tmp_path / 'at.json'))
    data = power_law_graph(300, 5.0, num_features=4, num_classes=3, seed=2)
    graph = CSRGraph.from_edge_index(data.edge_index, data.num_nodes)
    q = decision_quality.quality(graph, 8, torch.float32)
    assert q['decision_s'] > 0 and q['best_ms'] <= q['chosen_ms']
    assert q['ratio'] == q['chosen_ms'] / q['best_ms'] >= 1.0
    assert not (tmp_path / 'at.json').exists()  # the file was off
    labels = [c.label for c in decision_quality.all_candidates(
        graph, 8, torch.bfloat16)]
    assert 'cusparse' in labels and any(l.startswith('fp32:') for l in labels)
    rows = conv_runner.layer_rows('g', data, torch.device('cpu'), [8],
                                  ['float32'], steps=1,
                                  variants=('autospmm', ), quality=True)
    assert float(rows[0]['vs_best_fwd']) >= 1.0
    assert rows[0]['best_kernels'].startswith('forward ')
    path = tmp_path / 'conv.csv'
    append_rows(str(path), rows, columns=conv_runner.COLUMNS)
    assert ' / ' in conv_runner.markdown(str(path)).splitlines()[-1]


def test_16_bit_decision_quality_times_a_first_call_in_that_dtype(
        monkeypatch):
    """A 16-bit key's decision time includes the float32 decision it takes
    its cast reference from, memoised or not before (a bf16-only user's
    first call makes both)."""
    from pyg_fusesample.autotune import scheduler
    from pyg_fusesample.bench import decision_quality
    from pyg_fusesample.sparse.csr_graph import CSRGraph
    data = power_law_graph(300, 5.0, num_features=4, num_classes=3, seed=2)
    graph = CSRGraph.from_edge_index(data.edge_index, data.num_nodes)
    scheduler.choose(graph, 8, torch.float32)  # memoised beforehand
    made = []
    decide = scheduler._decide
    monkeypatch.setattr(scheduler, '_decide', lambda graph, F, dtype, *a, **k:
                        (made.append(dtype), decide(graph, F, dtype, *a, **k))[1])
    decision_quality.quality(graph, 8, torch.bfloat16)
    assert made[:2] == [torch.bfloat16, torch.float32]
