"""`bench subgraph` on the CPU: each loader trains its model for a step
through the loader and on pre-sampled batches, rows fill the CSV's columns,
and the markdown gives the loader / pre-sampled ratios, synchronised and
pipelined."""
import torch

from pyg_fusesample.bench import subgraph_runner
from pyg_fusesample.bench.csv_schema import append_rows
from pyg_fusesample.datasets import power_law_graph


def test_every_loader_steps_and_reports(tmp_path):
    data = power_law_graph(400, 6.0, num_features=8, num_classes=3, seed=1)
    rows = subgraph_runner.loader_rows('g', data, torch.device('cpu'),
                                       list(subgraph_runner.LOADERS),
                                       steps=2, warmup=1, cached=1,
                                       rounds=2)
    assert [(r['loader'], r['variant']) for r in rows] == [
        (name, v) for name in subgraph_runner.LOADERS
        for v in ('loader', 'loader-prefetch', 'pre-sampled')]
    for r in rows:
        assert set(r) <= set(subgraph_runner.COLUMNS)
        assert float(r['step_ms']) > 0 and r['batch_edges'] > 0
        assert float(r['pipelined_ms']) > 0
        # the steps pooled over the interleaved rounds
        assert r['steps'] == 2 and '2 interleaved rounds' in r['note']
    path = str(tmp_path / 'subgraph.csv')
    append_rows(path, rows, columns=subgraph_runner.COLUMNS)
    md = subgraph_runner.markdown(path)
    for name in subgraph_runner.LOADERS:
        line = next(x for x in md.splitlines() if f'| {name} |' in x)
        cells = line.strip(' |').split(' | ')
        # both ratios: synchronised and pipelined
        assert float(cells[8]) > 0 and float(cells[11]) > 0
        assert abs(float(cells[8]) - float(cells[6]) / float(cells[7])) < 0.01
    assert sum('(prefetch) |' in x for x in md.splitlines()) == len(
        subgraph_runner.LOADERS)
