"""`bench layers` on the CPU at a tiny scale: one row per (graph, model,
dtype, variant) with its columns filled and a floor > 0, the PyG variants
always, the fused ones where ``pyg_fusesample.nn.to_fused`` exists (else a
row noted 'skipped'); and the floor's arithmetic on a batch small enough to
count by hand."""
import types

import pytest

from pyg_fusesample.bench import layer_runner
from pyg_fusesample.bench.__main__ import main
from pyg_fusesample.bench.csv_schema import LAYER_COLUMNS, read_rows


def _has_to_fused() -> bool:
    try:
        from pyg_fusesample.nn import to_fused  # noqa: F401
    except ImportError:
        return False
    return True


FUSED = _has_to_fused()
TINY = ['--device', 'cpu', '--scale', '0.001', '--batch-size', '16',
        '--batches', '2', '--steps', '1', '--warmup', '0', '--hidden', '16']
# Columns every timed row fills (vs_pyg: every model has a 'pyg' row here).
FILLED = ['device', 'torch', 'graph', 'num_nodes', 'num_edges', 'model',
          'layers', 'hidden', 'fanout', 'batch_size', 'batches', 'dtype',
          'variant', 'execution', 'round', 'steps', 'warmup', 'step_ms',
          'first_step_ms', 'batch_nodes', 'batch_edges', 'layer_edges',
          'floor_mb', 'floor_gflop', 'bandwidth_gbps', 'gemm_tflops',
          'floor_ms', 'ratio_to_floor', 'vs_pyg', 'vs_best_pyg', 'best_pyg']


def test_every_model_and_variant_gives_a_filled_row(tmp_path):
    out = tmp_path / 'layers.csv'
    variants = list(layer_runner.PYG_VARIANTS) + (['fused'] if FUSED else [])
    assert main(['layers', *TINY, '--graphs', 'products', 'mag',
                 '--variants', *variants, '--out', str(out)]) == 0
    rows = read_rows(str(out))
    assert list(rows[0]) == LAYER_COLUMNS
    expected = [(m, d, v) for m in layer_runner.DEFAULT_MODELS
                for d in layer_runner.DTYPES for v in variants
                if v in layer_runner._variants_of(m)]
    assert [(r['model'], r['dtype'], r['variant']) for r in rows] == expected
    for r in rows:
        where = (r['model'], r['dtype'], r['variant'], r['note'])
        assert all(r[c] != '' for c in FILLED), (where, r)
        assert float(r['floor_ms']) > 0 and float(r['step_ms']) > 0, where
        assert float(r['floor_mb']) > 0 and float(r['floor_gflop']) > 0
        assert r['execution'] == 'eager'
        assert not r['note'].startswith(('error', 'unsupported')), where
        if r['variant'] == 'fused':
            assert r['note'].startswith('to_fused: '), where
    graphs = {r['model']: r['graph'] for r in rows}
    assert graphs['rgcn'].endswith('/homogeneous')
    # the floor depends on the dtype, not on the variant
    floors = {}
    for r in rows:
        floors.setdefault((r['model'], r['dtype']), set()).add(r['floor_ms'])
    assert all(len(f) == 1 for f in floors.values())
    md = (tmp_path / 'layers.md').read_text()
    assert md.count('\n| ') == len(rows) + 1  # the header, a line a row
    if FUSED:
        assert '≥5x pyg: ' in md and '≥4x pyg-fast: ' in md


@pytest.mark.skipif(FUSED, reason='pyg_fusesample.nn.to_fused exists')
def test_fused_variants_without_to_fused_are_noted(tmp_path):
    out = tmp_path / 'layers.csv'
    assert main(['layers', *TINY, '--graphs', 'products', '--models', 'sage',
                 '--dtypes', 'float32', '--variants', 'pyg', 'fused',
                 'fused-compiled', '--out', str(out)]) == 0
    rows = {r['variant']: r for r in read_rows(str(out))}
    for v in ('fused', 'fused-compiled'):
        assert rows[v]['note'].startswith('skipped: ')
        assert not rows[v]['step_ms']
    assert rows['fused-compiled']['execution'] == 'compiled'


def test_floor_counts_a_tiny_batch():
    """SAGE, 2 layers, widths 8 -> 16 -> 4, float32; hops of 2, 3, 4 nodes
    and 3, 5 edges. Layer 0 sees 9 sources, 5 targets, 8 edges; layer 1
    5, 2, 3.
    Layer 0 bytes: x read 9*8*4 = 288, out written and its gradient read
    2*5*16*4 = 640, gathers 8*8*4 = 256 (no gradient to x): 1184.
    Layer 1: 5*16*4 = 320 read, 2*2*4*4 = 64 written + read, 320 gradient
    written, gathers forward and backward 2*3*16*4 = 384: 1088.
    FLOPs: layer 0, forward + weight gradient of two 5x8x16 GEMMs:
    2 * 2 * (2*5*8*16) = 5120; layer 1, with the input gradient,
    3 * 2 * (2*2*16*4) = 1536."""
    b = types.SimpleNamespace(hetero=False, nsn=[2, 3, 4], nse=[3, 5],
                              edge_index=None, edge_type=None)
    spec = layer_runner.Spec((2, 2), 16, False)
    nbytes, flops = layer_runner.batch_floor('sage', spec, b, [8, 16, 4], 4, 4)
    assert (nbytes, flops) == (1184 + 1088, 5120 + 1536)
    # bf16: the input x still read at 4 bytes, the rest at 2
    nbytes16, _ = layer_runner.batch_floor('sage', spec, b, [8, 16, 4], 4, 2)
    assert nbytes16 == 288 + 640 // 2 + 256 + (1088 // 2)


def test_speedups_compare_rows_of_one_setting_and_round():
    base = dict(graph='g', model='sage', dtype='float32', round=0)
    rows = [dict(base, variant='pyg', step_ms='8.0'),
            dict(base, variant='pyg-trim', step_ms='4.0'),
            dict(base, variant='pyg-trim-sparse', step_ms='',
                 note='unsupported: x'),
            dict(base, variant='fused', step_ms='1.0'),
            dict(base, variant='fused', step_ms='1.0', round=1)]
    layer_runner.fill_speedups(rows)
    assert (rows[3]['vs_pyg'], rows[3]['vs_best_pyg'], rows[3]['best_pyg']) \
        == ('8.00', '4.00', 'pyg-trim')
    assert rows[1]['vs_pyg'] == '2.00' and 'vs_pyg' not in rows[2]
    assert 'vs_pyg' not in rows[4]  # no PyG row in round 1


@pytest.mark.skipif(not FUSED, reason='pyg_fusesample.nn.to_fused is missing')
def test_compiled_variant_gives_a_row_or_a_note(tmp_path):
    """fused-compiled: timed, or a row noted 'compile failed: ...' (the
    run goes on); compiled either way."""
    out = tmp_path / 'layers.csv'
    assert main(['layers', *TINY, '--batches', '1', '--graphs', 'products',
                 '--models', 'sage', '--dtypes', 'float32', '--variants',
                 'pyg', 'fused-compiled', '--out', str(out)]) == 0
    row = read_rows(str(out))[-1]
    assert row['variant'] == 'fused-compiled'
    assert row['execution'] == 'compiled'
    assert row['step_ms'] or row['note'].startswith('compile failed: ')
