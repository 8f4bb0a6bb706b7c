"""The SpMM scheduler: memo, decision file, guardrail, toggles, probe graph.

No real kernels: ``scheduler.measure`` is replaced by a fake timer, and a
fake ``ops`` module stands in where dispatch is exercised. CPU only.
"""
import builtins
import collections
import json
import os
import time
import warnings

import pytest
import torch

from pyg_fusesample import autotune
from pyg_fusesample.autotune import cache, candidates, config, scheduler
from pyg_fusesample.sparse import CSRGraph


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    """No user toggles leak in; the decision file lives in tmp_path."""
    for name in list(os.environ):
        if name.startswith(config.PREFIX):
            monkeypatch.delenv(name)
    path = tmp_path / 'autotune.json'
    monkeypatch.setenv(config.PREFIX + 'CACHE', str(path))
    return path


def skewed_graph(seed=0, rows=2000, hubs=10, hub_degree=400, cols=500):
    """Light rows of degree 1..8 and a few hub rows at random positions."""
    g = torch.Generator().manual_seed(seed)
    deg = torch.randint(1, 9, (rows,), generator=g)
    deg[torch.randperm(rows, generator=g)[:hubs]] = hub_degree
    rowptr = torch.zeros(rows + 1, dtype=torch.long)
    rowptr[1:] = deg.cumsum(0)
    col = torch.randint(0, cols, (int(rowptr[-1]),), generator=g)
    return CSRGraph(rowptr, col, None, cols)


def fake_ms(ms, c):
    """A fake time: by label when given, else by variant (a hub-split
    kernel's index-order twin 1.5x its time unless named); PyG's scatter
    path, a reference, takes 5 ms unless named."""
    if c.label in ms:
        return ms[c.label]
    if c.variant == 'scatter':
        return 5.0
    return ms[c.variant] * (1.5 if c.params.get('index_order') else 1)


class FakeTimer:
    """Stands in for ``scheduler.measure``: fixed ms per candidate label
    (see fake_ms), records what was probed on which graph."""

    def __init__(self, ms):
        self.ms, self.calls, self.cutoffs = ms, [], []

    def __call__(self, c, graph, x, reduce, budget_ms,
                 cutoff_ms=None, warmup=None):
        self.calls.append((c, graph))
        self.cutoffs.append(cutoff_ms)
        return fake_ms(self.ms, c)


@pytest.fixture
def timer(monkeypatch):
    t = FakeTimer({'cusparse': 1.0, 'scatter': 5.0, 'cpu': 0.5, 'warp': 0.9,
                   'subwarp': 2.0,
                   'hub': 0.4, 'hub-subwarp': 0.6})
    monkeypatch.setattr(scheduler, 'measure', t)
    return t


@pytest.fixture
def cuda_rules(monkeypatch):
    """The CUDA shortlist for a CPU graph (hub thresholds, several kernels)."""
    real = candidates.shortlist
    seen = []

    def shortlist(stats, F, dtype, device_type):
        # One lane layout per kernel keeps these tests' candidate counts
        # fixed; test_lane_layouts_in_shortlist covers the second layout.
        seen.append(stats)
        return [c for c in real(stats, F, dtype, 'cuda') if 'lanes' not in c.params]
    monkeypatch.setattr(candidates, 'shortlist', shortlist)
    return seen


def test_probe_then_memo_hit_without_io_or_hashing(timer, monkeypatch, env):
    g = skewed_graph()
    d = autotune.choose(g, 16, torch.float32)
    assert (d.variant, d.source) == ('cpu', 'probe')
    assert d.timings == {'cusparse': 1.0, 'scatter': 5.0, 'cpu': 0.5}
    assert env.exists()

    def boom(*args, **kwargs):
        raise AssertionError('memo hit touched files, config or hashing')
    for target, name in [(builtins, 'open'), (os, 'stat'), (cache, 'load'),
                         (cache, 'make_key'), (cache, 'graph_signature'),
                         (config, 'read'), (scheduler, 'measure')]:
        monkeypatch.setattr(target, name, boom)
    hit = autotune.choose(g, 16, torch.float32)
    assert (hit.variant, hit.params, hit.source) == ('cpu', {}, 'memo')
    # with_value() copies share the structure, hence the decision.
    assert autotune.choose(g.with_value(torch.rand(g.nnz)), 16,
                           torch.float32).source == 'memo'
    t = time.perf_counter()
    for _ in range(10000):
        autotune.choose(g, 16, torch.float32)
    assert (time.perf_counter() - t) / 10000 < 20e-6  # a dict lookup


def test_cache_round_trip_in_fresh_state(timer, cuda_rules, monkeypatch):
    g = skewed_graph()
    first = autotune.choose(g, 32, torch.float32, reduce='mean')
    assert first.source == 'probe'
    # Fresh process state: a new graph object, no memo, no signature memo.
    g2 = CSRGraph(g.rowptr.clone(), g.col.clone(), None, g.num_cols)
    monkeypatch.setattr(scheduler, 'measure', None)  # must not probe
    again = autotune.choose(g2, 32, torch.float32, reduce='mean')
    assert again.source == 'cache'
    assert (again.variant, again.params, again.timings) == (
        first.variant, first.params, first.timings)
    # Other F / reduce / dtype are other keys.
    monkeypatch.setattr(scheduler, 'measure', timer)
    assert autotune.choose(g2, 64, torch.float32,
                           reduce='mean').source == 'probe'
    assert autotune.choose(g2, 32, torch.float64,
                           reduce='mean').source == 'probe'
    assert autotune.choose(g2, 32, torch.float32).source == 'probe'


def test_corrupt_file_is_ignored_with_warning_and_rewritten(timer, env):
    env.write_text('{"schema": "pyg_fusesample.autotune", "entr')
    with pytest.warns(RuntimeWarning, match='not valid JSON'):
        d = autotune.choose(skewed_graph(), 16, torch.float32)
    assert d.source == 'probe'
    data = json.loads(env.read_text())
    assert data['schema'] == cache.SCHEMA and len(data['entries']) == 1


def test_foreign_file_is_ignored_and_left_untouched(timer, env):
    env.write_text('{"model": "resnet", "epochs": 3}')
    with pytest.warns(RuntimeWarning, match='not a pyg_fusesample'):
        d = autotune.choose(skewed_graph(), 16, torch.float32)
    assert d.source == 'probe'
    assert json.loads(env.read_text()) == {'model': 'resnet', 'epochs': 3}


def test_other_version_and_malformed_entries_are_not_trusted(timer, env):
    g = skewed_graph()
    key, fields = cache.make_key(g, 16, torch.float32, 'spmm', 'sum')
    entry = dict(key=fields, variant='cusparse', params={}, timings={})
    env.write_text(json.dumps({'schema': cache.SCHEMA, 'version': 0,
                               'entries': {key: entry}}))
    with pytest.warns(RuntimeWarning, match='schema version 0'):
        assert autotune.choose(g, 16, torch.float32).source == 'probe'
    assert json.loads(env.read_text())['version'] == cache.VERSION
    # Our schema, but an entry whose variant or key does not check out.
    bad = {key: dict(entry, variant='rm -rf'),
           'x|y': dict(entry)}
    env.write_text(json.dumps({'schema': cache.SCHEMA, 'version': 1,
                               'entries': bad}))
    autotune.forget(g)
    with pytest.warns(RuntimeWarning, match='2 malformed entries'):
        assert autotune.choose(g, 16, torch.float32).source == 'probe'


def test_atomic_write_crash_keeps_old_file(timer, env, monkeypatch):
    autotune.choose(skewed_graph(0), 16, torch.float32)
    old = env.read_text()

    def crash(*args, **kwargs):
        raise RuntimeError('killed mid-write')
    with monkeypatch.context() as m:
        m.setattr(cache.json, 'dump', crash)
        with pytest.raises(RuntimeError, match='mid-write'):
            autotune.choose(skewed_graph(1), 16, torch.float32)
    assert env.read_text() == old
    assert os.listdir(env.parent) == [env.name]  # no temp file left
    replaced = []
    real = os.replace
    monkeypatch.setattr(cache.os, 'replace',
                        lambda a, b: (replaced.append((a, b)), real(a, b)))
    cache.store(str(env), 'k', {})
    assert replaced[0][1] == str(env) and replaced[0][0].endswith('.tmp')


def test_replay_only_missing_entry_raises_clear_error(timer, monkeypatch):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_REPLAY_ONLY', '1')
    g = skewed_graph()
    with pytest.raises(autotune.ReplayMiss) as err:
        autotune.choose(g, 16, torch.float32)
    key, _ = cache.make_key(g, 16, torch.float32, 'spmm', 'sum')
    msg = str(err.value)
    assert key in msg and 'without FUSESAMPLE_AUTOTUNE_REPLAY_ONLY' in msg
    assert timer.calls == []


def test_replay_only_present_entry(timer, monkeypatch):
    g = skewed_graph()
    recorded = autotune.choose(g, 16, torch.float32)
    autotune.forget(g)
    timer.calls.clear()
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_REPLAY_ONLY', '1')
    d = autotune.choose(g, 16, torch.float32)
    assert (d.variant, d.source) == (recorded.variant, 'cache')
    assert timer.calls == []


@pytest.mark.parametrize('cpu_ms,expect', [(0.96, 'cusparse'),
                                           (0.95, 'cpu'), (0.5, 'cpu')])
def test_guardrail(timer, cpu_ms, expect):
    timer.ms['cpu'] = cpu_ms  # baseline 1.0 ms, alpha 0.95
    d = autotune.choose(skewed_graph(), 16, torch.float32)
    assert d.variant == expect
    assert d.source == ('guardrail' if expect == 'cusparse' else 'probe')


def test_guardrail_alpha_toggle_and_failing_kernel(timer, monkeypatch):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_ALPHA', '0.4')
    assert autotune.choose(skewed_graph(0), 16,
                           torch.float32).variant == 'cusparse'

    def fails(c, graph, x, reduce, budget_ms,
              cutoff_ms=None, warmup=None):
        if c.variant != 'cusparse':
            raise RuntimeError('no kernel image')
        return 1.0
    monkeypatch.setattr(scheduler, 'measure', fails)
    d = autotune.choose(skewed_graph(1), 16, torch.float32)
    assert (d.variant, d.timings['cpu']) == ('cusparse', None)
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_ALPHA', 'fast')
    with pytest.raises(ValueError, match='ALPHA'):
        autotune.choose(skewed_graph(2), 16, torch.float32)


def test_force(timer, cuda_rules, monkeypatch, env):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_FORCE', 'cusparse')
    d = autotune.choose(skewed_graph(0), 16, torch.float32)
    assert (d.variant, d.source) == ('cusparse', 'forced')
    assert timer.calls == [] and not env.exists()
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_FORCE', 'hub:96')
    assert candidates.forced('hub:96', {}, 'cuda').params == {
        'hub_threshold': 96}
    with pytest.raises(ValueError, match="'hub:96' names no kernel on cpu"):
        autotune.choose(skewed_graph(1), 16, torch.float32)
    g = skewed_graph(2)
    assert candidates.forced('hub', g.stats(), 'cuda').params == {
        'hub_threshold': candidates.hub_thresholds(g.stats())[0]}
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_FORCE', 'cpu')
    assert autotune.choose(g, 16, torch.float32).variant == 'cpu'


def test_telemetry_lines(timer, cuda_rules, monkeypatch, tmp_path):
    log = tmp_path / 'probes.jsonl'
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_TELEMETRY', str(log))
    g = skewed_graph()
    d = autotune.choose(g, 32, torch.float32)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    key, _ = cache.make_key(g, 32, torch.float32, 'spmm', 'sum')
    # cusparse, scatter, warp, subwarp, hub at two thresholds, hub-subwarp
    # at its own, then the best (hub)'s index-order twin
    packed = len(candidates.packed_hub_thresholds(g.stats()))
    assert packed >= 1
    n = 7 + packed
    assert len(lines) == len(timer.calls) == n
    assert {r['key'] for r in lines} == {key}
    assert [r['candidate'] for r in lines] == [
        'cusparse', 'scatter', 'warp', 'subwarp', 'hub', 'hub'] + \
        ['hub-subwarp'] * packed + ['hub']
    twin = lines[-1]
    assert twin['params'] == dict(d.params, index_order=1)
    assert twin['ms'] == 0.4 * 1.5 and not twin['chosen']
    by = {(r['candidate'], r['params'].get('hub_threshold')): r for r in lines[:-1]}
    assert by[('cusparse', None)]['guardrail'] == 'baseline'
    assert by[('scatter', None)]['guardrail'] == 'baseline'
    assert by[('subwarp', None)]['guardrail'] == 'fail'
    assert by[('warp', None)]['guardrail'] == 'pass'
    chosen = [r for r in lines if r['chosen']]
    assert len(chosen) == 1 and chosen[0]['candidate'] == d.variant == 'hub'
    assert chosen[0]['params'] == d.params and chosen[0]['ms'] == 0.4
    autotune.forget(g)
    autotune.choose(g, 32, torch.float32)  # from the file: no new lines
    assert len(log.read_text().splitlines()) == n


def test_full_graph_thresholds_are_used_on_probe_subgraph(
        timer, cuda_rules, monkeypatch):
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    full = candidates.hub_thresholds(g.stats())
    d = autotune.choose(g, 128, torch.float32)
    # Shortlist built once, from the full graph's statistics.
    assert cuda_rules == [g.stats()]
    probed = [(c, sub) for c, sub in timer.calls  # not the confirmation,
              if c.variant == 'hub' and sub is not g  # nor the order twin
              and not c.params.get('index_order')]
    assert [c.params['hub_threshold'] for c, _ in probed] == full
    sub = probed[0][1]
    assert sub.num_rows < g.num_rows and sub.num_cols == g.num_cols
    # Re-deriving on the sample (AutoSAGE's bug) would give other numbers.
    assert candidates.hub_thresholds(sub.stats()) != full
    assert d.variant == 'hub' and d.params == {'hub_threshold': full[0]}


def test_probe_subgraph_rows_and_proportions():
    g = skewed_graph(rows=20000, hubs=40, hub_degree=900)
    sub = autotune.probe_subgraph(g, 4000)
    assert abs(sub.nnz - 4000) < 1500 and sub.num_cols == g.num_cols
    t = candidates.hub_thresholds(g.stats())[0]
    share = sub.hub_rows(t).numel() / sub.num_rows
    assert abs(share - g.hub_rows(t).numel() / g.num_rows) <= 1 / sub.num_rows
    assert sub.degree().max() == g.degree().max()  # the heaviest row is in
    # Every sampled row is an exact copy of a full-graph row.
    def rows(h):
        return [tuple(c.tolist()) for c in h.col.split(h.degree().tolist())]
    assert set(rows(sub)) <= set(rows(g))
    assert autotune.probe_subgraph(g, g.nnz) is g


def test_key_names_device_versions_signature_F_dtype_op():
    g = skewed_graph()
    key, fields = cache.make_key(g, 64, torch.bfloat16, 'spmm', 'mean')
    assert set(fields) == set(cache.KEY_FIELDS)
    assert (fields['op'], fields['reduce'], fields['F'], fields['dtype']) == (
        'spmm', 'mean', 64, 'bfloat16')
    assert fields['device'].startswith('cpu') and fields['torch'] == \
        torch.__version__
    assert fields['graph'] == cache.graph_signature(g)
    assert fields['graph'].startswith(f'{g.num_rows}x{g.num_cols}:nnz={g.nnz}')
    assert key == cache.key_string(fields)
    # Signature: memoised, equal for an equal graph, differs otherwise.
    assert g._cache['structure']['signature'] == fields['graph']
    same = CSRGraph(g.rowptr.clone(), g.col.clone(), None, g.num_cols)
    assert cache.graph_signature(same) == fields['graph']
    col = g.col.clone()
    col[0] = (col[0] + 1) % g.num_cols
    assert cache.graph_signature(
        CSRGraph(g.rowptr, col, None, g.num_cols)) != fields['graph']
    assert cache.graph_signature(skewed_graph(1)) != fields['graph']


def test_run_spmm_dispatches_and_times_real_calls(monkeypatch, env):
    """The real timer on a fake ops module: the chosen kernel runs."""
    calls = []

    def spmm(graph, x, reduce='sum', variant='warp', hub_threshold=-1, lanes=0,
             light_order='length'):
        calls.append(variant)
        time.sleep(0.002)
        return graph.to_torch_sparse() @ x

    def spmm_cusparse(graph, x, reduce):
        # 15x the candidate's sleep: on a loaded 2-core machine the sparse
        # product below added up to 10 ms to a call, and at 6 ms (3x) the
        # candidate lost about one run in ten.
        calls.append('cusparse')
        time.sleep(0.030)
        return graph.to_torch_sparse() @ x
    def spmm_scatter(graph, x, reduce):
        calls.append('scatter')
        time.sleep(0.030)
        return graph.to_torch_sparse() @ x
    # The scheduler's own references to the ops (imported at module level).
    monkeypatch.setattr(scheduler, 'spmm', spmm)
    monkeypatch.setattr(scheduler, 'spmm_cusparse', spmm_cusparse)
    monkeypatch.setattr(scheduler, 'spmm_scatter', spmm_scatter)
    g = skewed_graph()
    x = torch.rand(g.num_cols, 8)
    out = autotune.run_spmm(g, x)
    torch.testing.assert_close(out, g.to_torch_sparse() @ x)
    d = autotune.choose(g, 8, torch.float32)
    assert d.variant == 'cpu' and calls[-1] == 'cpu'
    assert scheduler.WARMUP + 1 <= calls.count('cusparse') <= \
        scheduler.WARMUP + scheduler.MAX_REPS


def test_time_ms_median_within_budget():
    n = []

    def fn():
        n.append(1)
        time.sleep(0.001)
    ms = scheduler.time_ms(fn, torch.device('cpu'), budget_ms=6)
    assert 1 <= ms < 20 and scheduler.WARMUP + 1 <= len(n) <= 6
    n.clear()
    scheduler.time_ms(fn, torch.device('cpu'), budget_ms=1000)
    assert len(n) == scheduler.WARMUP + scheduler.MAX_REPS


def test_unwritable_log_or_cache_warns_and_decides(timer, monkeypatch,
                                                   tmp_path):
    (tmp_path / 'dir').mkdir()
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_TELEMETRY', str(tmp_path / 'dir'))
    with pytest.warns(RuntimeWarning, match='not written'):
        d = autotune.choose(skewed_graph(), 16, torch.float32)
    assert d.variant == 'cpu'
    with pytest.raises(TypeError):
        d.params['hub_threshold'] = 1  # the memo hands out read-only views


def test_cache_off_keeps_memo_only(timer, monkeypatch, env):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', 'off')
    g = skewed_graph()
    assert autotune.choose(g, 16, torch.float32).source == 'probe'
    assert autotune.choose(g, 16, torch.float32).source == 'memo'
    assert not env.exists()
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_REPLAY_ONLY', '1')
    with pytest.raises(autotune.ReplayMiss, match='cache off'):
        autotune.choose(skewed_graph(1), 16, torch.float32)


def test_lane_layouts_in_shortlist():
    """The lane layouts of a row kernel are probed when they differ (F = 32
    float32: 2 vector lanes by default, 8 with one vector per lane, 4 between
    them), with the hub thresholds unchanged; at F = 8 there is no layout
    between 1 and 2 lanes; at F = 4 they coincide and one is probed. bf16
    lanes, and float32 lanes of the hub-split kernels, hold 2 vectors (the
    kernel's Tuning::vecs): bf16 F = 128 takes 8 lanes by default and 16
    with one vector per lane, nothing between; 'hub' at float32 F = 32 takes
    4 by default and 8, nothing between."""
    stats = {'p90': 12.0, 'p99': 100.0, 'mean_degree': 5.0,
             'max_degree': 5000.0, 'skew': 1000.0}
    labels = [c.label for c in candidates.shortlist(stats, 32, torch.float32, 'cuda')]
    assert {'warp', 'warp@4', 'warp@8'} <= set(labels)
    hubs = [c for c in candidates.shortlist(stats, 32, torch.float32, 'cuda')
            if c.variant == 'hub']
    assert {c.params.get('lanes') for c in hubs} == {None, 8}
    assert candidates._default_lanes(32, torch.float32, hub_split=True) == 4
    f8 = {c.params.get('lanes') for c in candidates.shortlist(stats, 8, torch.float32, 'cuda')
          if c.variant == 'warp'}
    assert f8 == {None, 2}
    bf = {c.params.get('lanes') for c in candidates.shortlist(stats, 128, torch.bfloat16, 'cuda')
          if c.variant == 'warp'}
    assert bf == {None, 16}
    assert candidates._default_lanes(128, torch.bfloat16) == 8
    assert candidates._default_lanes(12, torch.bfloat16) == 4  # scalar path: 4 a lane
    assert {c.params['hub_threshold'] for c in hubs} == set(
        candidates.hub_thresholds(stats))
    small = [c for c in candidates.shortlist(stats, 4, torch.float32, 'cuda')
             if 'lanes' in c.params]
    assert small == []


@pytest.mark.parametrize('F,dtype,lanes', [
    (32, torch.float32, 8), (64, torch.float32, 16), (64, torch.bfloat16, 8),
    (128, torch.bfloat16, 16), (16, torch.float32, None), (128, torch.float32, None),
    (256, torch.bfloat16, None), (24, torch.float32, None)])
def test_packed_one_vector_candidates(F, dtype, lanes):
    """Rows of 8 or 16 vectors are also probed packed one vector a lane
    ('subwarp' and, on skewed graphs, 'hub-subwarp' at the 'hub'
    thresholds, with those lanes); rows of fewer vectors, of 32, or on the
    scalar path are not."""
    stats = {'p90': 12.0, 'p99': 100.0, 'mean_degree': 5.0,
             'max_degree': 5000.0, 'skew': 1000.0}
    labels = {c.label for c in candidates.shortlist(stats, F, dtype, 'cuda')}
    wide = {f'subwarp@{lanes}'} | {f'hub-subwarp@{t}@{lanes}'
                                   for t in candidates.hub_thresholds(stats)}
    if lanes is None:
        assert not any(label.startswith(('subwarp@', 'hub-subwarp@100@', 'hub-subwarp@160@'))
                       for label in labels)
    else:
        assert wide <= labels
    flat = dict(stats, skew=2.0)
    labels = {c.label for c in candidates.shortlist(flat, F, dtype, 'cuda')}
    assert not any(label.startswith('hub') for label in labels)


def test_packed_hub_candidates():
    """'hub-subwarp' (short rows four to a warp, long ones to blocks) is
    probed for narrow F on skewed graphs, at its own lower thresholds."""
    stats = {'p90': 12.0, 'p99': 100.0, 'mean_degree': 5.0,
             'max_degree': 5000.0, 'skew': 1000.0}
    assert candidates.packed_hub_thresholds(stats) == [12, 20]
    packed = [c for c in candidates.shortlist(stats, 32, torch.float32, 'cuda')
              if c.variant == 'hub-subwarp' and 'lanes' not in c.params]
    assert [c.params for c in packed] == [{'hub_threshold': 12},
                                          {'hub_threshold': 20}]
    wide = candidates.shortlist(stats, 256, torch.float32, 'cuda')
    assert 'hub-subwarp' not in {c.variant for c in wide}
    flat = dict(stats, skew=2.0)
    assert 'hub-subwarp' not in {
        c.variant for c in candidates.shortlist(flat, 32, torch.float32,
                                                'cuda')}
    assert candidates.forced('hub-subwarp:64', stats, 'cuda') == \
        candidates.Candidate('hub-subwarp', {'hub_threshold': 64})
    assert candidates.forced('hub-subwarp', stats, 'cuda').params == {
        'hub_threshold': 12}


class SplitTimer(FakeTimer):
    """Probe-subgraph times and whole-graph times differ (as they do on
    hub-skewed graphs, where the row sample misranks kernels)."""

    def __init__(self, ms, full_ms, full_graph):
        super().__init__(ms)
        self.full_ms, self.full_graph = full_ms, full_graph

    def __call__(self, c, graph, x, reduce, budget_ms,
                 cutoff_ms=None, warmup=None):
        self.calls.append((c, graph))
        table = self.full_ms if graph is self.full_graph else self.ms
        return fake_ms(table, c)


@pytest.mark.parametrize('probe_cpu,full_cpu,expect,source', [
    (0.97, 0.70, 'cpu', 'confirm'),        # close fail, whole graph: faster
    (0.90, 1.10, 'cusparse', 'guardrail'),  # close pass, whole graph: slower
    (0.90, 0.90, 'cpu', 'confirm'),
    (1.45, 0.70, 'cpu', 'confirm'),        # the Reddit-like case: far on the sample
])
def test_close_probe_is_confirmed_on_the_whole_graph(
        probe_cpu, full_cpu, expect, source, monkeypatch, tmp_path):
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    log = tmp_path / 'probes.jsonl'
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_TELEMETRY', str(log))
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    t = SplitTimer({'cusparse': 1.0, 'cpu': probe_cpu},
                   {'cusparse': 1.0, 'cpu': full_cpu}, g)
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(g, 16, torch.float32)
    assert (d.variant, d.source) == (expect, source)
    # (PyG's scatter path, 5x cuSPARSE on the probe, is not timed again)
    assert [graph is g for _, graph in t.calls] == [False] * 3 + [True] * 2
    assert d.timings['cpu@full'] == full_cpu
    assert 'scatter@full' not in d.timings
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r['stage'] for r in lines] == ['probe'] * 3 + ['confirm'] * 2
    assert lines[-1]['probe_nnz'] == g.nnz
    assert {r['candidate'] for r in lines if r['chosen']} == {expect}


@pytest.mark.parametrize('scatter', [2.0, 3.9, 4.1])
def test_confirm_retimes_the_references_that_could_still_win(scatter,
                                                             monkeypatch):
    # A reference within CUT_FACTOR of the probe's fastest one is timed on
    # the whole graph too (and may become the guardrail's reference there);
    # one further behind is not.
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    t = SplitTimer({'cusparse': 1.0, 'scatter': scatter, 'cpu': 0.97},
                   {'cusparse': 1.0, 'scatter': 0.5, 'cpu': 0.9}, g)
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(g, 16, torch.float32)
    retimed = scatter <= scheduler.CUT_FACTOR * 1.0
    assert ('scatter@full' in d.timings) == retimed
    # on the whole graph scatter beats the kernel: it wins when re-timed
    assert d.variant == ('scatter' if retimed else 'cpu')


@pytest.mark.parametrize('probe_cpu', [0.40, 2.0])
def test_clear_probe_or_small_graph_is_not_confirmed(probe_cpu, monkeypatch):
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    t = SplitTimer({'cusparse': 1.0, 'cpu': probe_cpu},
                   {'cusparse': 1.0, 'cpu': 99.0}, g)
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(g, 16, torch.float32)
    assert d.variant == ('cpu' if probe_cpu < 1 else 'cusparse')
    assert all(graph is not g for _, graph in t.calls)
    # a graph no larger than the probe is its own probe: nothing to confirm
    small = skewed_graph(rows=50, hubs=0)
    ms = {'cusparse': 1.0, 'cpu': 0.97}
    t = SplitTimer(ms, ms, small)
    monkeypatch.setattr(scheduler, 'measure', t)
    autotune.choose(small, 16, torch.float32)
    assert len(t.calls) == 3  # cuSPARSE, scatter, the kernel


def test_close_kernels_are_ranked_on_the_whole_graph(cuda_rules, monkeypatch):
    """Kernels within RIVAL_BAND of the probe's best are timed again on the
    whole graph (at most MAX_RIVALS, best first), and the whole graph's
    ranking decides -- the sample can misrank 'hub' and 'hub-subwarp'."""
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    probe = {'cusparse': 1.0, 'warp': 0.9, 'subwarp': 2.0, 'hub': 0.40,
             'hub-subwarp': 0.44}
    full = dict(probe, hub=0.50, **{'hub-subwarp': 0.30})
    t = SplitTimer(probe, full, g)
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(g, 32, torch.float32)
    assert (d.variant, d.source) == ('hub-subwarp', 'confirm')
    confirmed = [c for c, graph in t.calls if graph is g]
    # (scatter, 5x cuSPARSE on the probe, is not timed again)
    assert confirmed[0].variant == 'cusparse'
    assert 1 < len(confirmed) - 1 <= scheduler.MAX_RIVALS
    assert confirmed[1].variant == 'hub'  # the probe's best first
    assert {c.variant for c in confirmed[1:]} <= {'hub', 'hub-subwarp'}
    # no rival close enough and a clear win over cuSPARSE: no confirmation
    autotune.forget(g)
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    far = dict(probe, **{'hub-subwarp': 0.9})
    cuda_only_one = SplitTimer(far, far, g)
    monkeypatch.setattr(scheduler, 'measure', cuda_only_one)
    monkeypatch.setattr(candidates, 'hub_thresholds', lambda stats: [64])
    d = autotune.choose(g, 32, torch.float32)
    assert d.variant == 'hub' and d.source == 'probe'
    assert all(graph is not g for _, graph in cuda_only_one.calls)


def test_index_order_twin_rides_along_in_the_rivals(monkeypatch):
    """The whole-graph rivals: kernels within RIVAL_BAND of the probe's best,
    fastest first, at most MAX_RIVALS of them; an index-order twin comes
    with its kernel and takes no slot of its own (call113: a twin kept out
    the kernel that had won the whole graph in call112)."""
    monkeypatch.setattr(scheduler, 'RIVAL_BAND', 1.3)
    monkeypatch.setattr(scheduler, 'MAX_RIVALS', 3)
    C = candidates.Candidate
    a = C('hub', {'hub_threshold': 155, 'lanes': 8})
    a_twin = candidates.index_order_twin(a)
    b = C('hub', {'hub_threshold': 640, 'lanes': 8})
    b_twin = candidates.index_order_twin(b)
    d = C('hub-subwarp', {'hub_threshold': 80})
    e = C('hub', {'hub_threshold': 155})
    far = C('warp')
    ms = {a.label: 0.30, a_twin.label: 0.32, b.label: 0.33, d.label: 0.34,
          b_twin.label: 0.35, e.label: 0.36, far.label: 0.50}
    ran = [far, e, b_twin, d, b, a_twin, a]
    rivals = scheduler._rivals(ran, ms, 0.30)
    assert rivals == [a, a_twin, b, d, b_twin]  # e: a fourth kernel; far: out of band
    assert candidates.without_order(a_twin) == candidates.without_order(a) == a.label
    # a twin whose kernel was not probed still counts as that kernel
    assert scheduler._rivals([a_twin, b, d, e], ms, 0.32) == [a_twin, b, d]


def test_index_order_twin_label_and_choice(cuda_rules, monkeypatch):
    """A hub-split winner's index-order twin (light rows in index order) is
    probed once and wins when faster; other winners get no twin."""
    c = candidates.Candidate('hub', {'hub_threshold': 80, 'lanes': 8})
    twin = candidates.index_order_twin(c)
    assert twin.params == {'hub_threshold': 80, 'lanes': 8, 'index_order': 1}
    assert (c.label, twin.label) == ('hub@80@8', 'hub@80@8@index')
    assert candidates.index_order_twin(twin) is None
    assert candidates.index_order_twin(candidates.Candidate('warp')) is None
    assert candidates.index_order_twin(None) is None
    g = skewed_graph()
    t = FakeTimer({'cusparse': 1.0, 'warp': 0.9, 'subwarp': 2.0, 'hub': 0.4,
                   'hub-subwarp': 0.6})
    best = [c for c in candidates.shortlist(g.stats(), 32, torch.float32, 'cuda')
            if c.variant == 'hub' and 'lanes' not in c.params][0]
    t.ms[candidates.index_order_twin(best).label] = 0.3
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(g, 32, torch.float32)
    assert (d.variant, d.params) == ('hub', dict(best.params, index_order=1))
    assert sum(bool(c.params.get('index_order')) for c, _ in t.calls) == 1
    # warp best: no twin probed
    autotune.forget(g)
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    t = FakeTimer({'cusparse': 1.0, 'warp': 0.2, 'subwarp': 2.0, 'hub': 0.4,
                   'hub-subwarp': 0.6})
    monkeypatch.setattr(scheduler, 'measure', t)
    assert autotune.choose(g, 32, torch.float32).variant == 'warp'
    assert not any(c.params.get('index_order') for c, _ in t.calls)


# References: PyG's scatter path, and float32 with casts for 16-bit inputs ###

def test_scatter_reference_matches_the_kernels():
    """ops.spmm_scatter (PyG's default path) computes the same product,
    sum and mean, weighted, with gradients."""
    from pyg_fusesample.ops.spmm import spmm, spmm_scatter
    g = skewed_graph()
    w = torch.rand(g.nnz, dtype=torch.float64)
    gw = CSRGraph(g.rowptr, g.col, w, g.num_cols)
    x = torch.randn(g.num_cols, 4, dtype=torch.float64, requires_grad=True)
    for reduce in ('sum', 'mean'):
        a = spmm_scatter(gw, x, reduce)
        b = spmm(gw, x, reduce, variant='cpu')
        torch.testing.assert_close(a, b)
        ga, = torch.autograd.grad(a.sum(), x)
        gb, = torch.autograd.grad(b.sum(), x)
        torch.testing.assert_close(ga, gb)


@pytest.mark.parametrize('scatter_ms,expect', [(0.2, 'scatter'), (5.0, 'cpu')])
def test_scatter_is_a_reference(scatter_ms, expect, monkeypatch):
    """No kernel is chosen unless it beats the fastest reference, PyG's
    scatter path included; when it is fastest, it is the decision."""
    t = FakeTimer({'cusparse': 1.0, 'scatter': scatter_ms, 'cpu': 0.5})
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(skewed_graph(), 16, torch.float32)
    assert d.variant == expect
    assert d.source == ('guardrail' if expect == 'scatter' else 'probe')


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16])
def test_16_bit_decision_never_slower_than_float32_with_casts(dtype,
                                                              monkeypatch):
    """A 16-bit decision first makes the float32 one (a probe's verdict,
    memoised as a reference only), and has that kernel behind casts among
    its references: chosen when every 16-bit kernel is slower; the product
    it dispatches is the float32 one, cast back."""
    class ByDtype(FakeTimer):
        def __call__(self, c, graph, x, reduce, budget_ms,
                     cutoff_ms=None, warmup=None):
            self.calls.append((c, x.dtype))
            if c.variant.startswith(candidates.CAST):
                return 0.3
            return fake_ms(self.ms, c) * (1 if x.dtype == torch.float32 else 2)
    t = ByDtype({'cusparse': 1.0, 'cpu': 0.5})
    monkeypatch.setattr(scheduler, 'measure', t)
    g = skewed_graph()
    d = autotune.choose(g, 16, dtype)
    assert d.variant == candidates.CAST + 'cpu' and d.source == 'guardrail'
    assert d.timings[candidates.CAST + 'cpu'] == 0.3
    # the float32 reference is not the float32 decision: that is made anew
    assert autotune.choose(g, 16, torch.float32).source != 'memo'
    assert autotune.choose(g, 16, torch.float32).source == 'memo'
    x = torch.randn(g.num_cols, 16).to(dtype)
    out = autotune.run_spmm(g, x)
    assert out.dtype == dtype
    torch.testing.assert_close(out, (g.to_torch_sparse() @ x.float()).to(dtype))
    # the decision file keeps it
    autotune.forget(g)
    assert autotune.choose(g, 16, dtype).variant == candidates.CAST + 'cpu'


def test_known_variants():
    assert candidates.known_variant('fp32:hub')
    assert candidates.known_variant('scatter')
    assert not candidates.known_variant('fp32:fp32:hub')
    assert not candidates.known_variant('fp32:nope')
    assert not candidates.known_variant(None)


@pytest.mark.parametrize('device', ['cpu', pytest.param('cuda', marks=pytest.mark.cuda)])
@pytest.mark.parametrize('forced', ['cusparse', 'scatter', None])
@pytest.mark.parametrize('reduce', ['sum', 'mean'])
def test_run_spmm_backward_is_the_transposes_own_choice(device, forced, reduce,
                                                        monkeypatch):
    """run_spmm's gradient in x is A^T @ grad through run_spmm on the
    (valued) transpose, whatever kernel the forward used: a cuSPARSE
    decision's backward is not torch.sparse's (which rebuilds the CSR on
    every call)."""
    if forced:
        monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_FORCE', forced)
    g = skewed_graph(3, rows=300, hub_degree=60, cols=300)
    value = torch.rand(g.nnz, generator=torch.Generator().manual_seed(0))
    g = CSRGraph(g.rowptr.to(device), g.col.to(device), value.to(device),
                 g.num_cols)
    x = torch.randn(300, 8, device=device, dtype=torch.float64,
                    requires_grad=True)
    dense = torch.zeros(g.num_rows, g.num_cols, dtype=torch.float64,
                        device=device)
    rows = torch.repeat_interleave(torch.arange(g.num_rows, device=device),
                                   g.degree())
    dense.index_put_((rows, g.col.long()), value.to(device, torch.float64),
                     accumulate=True)
    if reduce == 'mean':
        dense = dense / g.degree().clamp_min(1).unsqueeze(1).to(dense.dtype)
    out = autotune.run_spmm(g, x, reduce)
    assert type(out.grad_fn).__name__ == '_ScheduledSpMMBackward'
    grad = torch.randn_like(out)
    out.backward(grad)
    torch.testing.assert_close(out, dense @ x.detach())
    torch.testing.assert_close(x.grad, dense.t() @ grad)
    # learnable edge values keep the kernel's own autograd (it has their
    # gradient)
    g2 = g.with_value(g.value.double().requires_grad_())
    out2 = autotune.run_spmm(g2, x, reduce)
    assert type(out2.grad_fn).__name__ != '_ScheduledSpMMBackward'


def test_time_ms_stops_a_candidate_that_cannot_win():
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.01)

    ms = scheduler.time_ms(slow, torch.device('cpu'), 1000.0, cutoff_ms=1.0)
    # the first call (set-up) and the second, over the cut-off: no repeats
    assert ms >= 10 and len(calls) == 2
    calls.clear()
    scheduler.time_ms(slow, torch.device('cpu'), 1000.0)
    assert len(calls) > scheduler.WARMUP
    # no one-time set-up to excuse the first call: it is the answer
    calls.clear()
    ms = scheduler.time_ms(slow, torch.device('cpu'), 1000.0, cutoff_ms=1.0,
                           first_call_counts=True)
    assert ms >= 10 and len(calls) == 1


def test_whole_graph_timings_make_one_warm_up_call(monkeypatch):
    """The probe has run every candidate (lazy init, module load), so a
    whole-graph re-timing makes WARMUP_FULL (one) untimed call, not WARMUP:
    each costs a whole call (products-like F=256, H200: 30 ms, confirm
    stages of 0.29-0.34 s at three calls a candidate). The real timer on
    fake kernels, a budget that leaves one timed call."""
    n = []
    scheduler.time_ms(lambda: n.append(1), torch.device('cpu'), 1000.0,
                      warmup=1)
    assert len(n) == 1 + scheduler.MAX_REPS
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    monkeypatch.setattr(scheduler, 'CONFIRM_BAND', (0.0, float('inf')))
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_BUDGET_MS', '0.001')
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    calls = collections.Counter()

    def dispatch(variant, params, graph, x, reduce):
        calls[variant, graph is g] += 1
    monkeypatch.setattr(scheduler, 'dispatch', dispatch)
    assert 'cpu@full' in autotune.choose(g, 16, torch.float32).timings
    probe = {v: k for (v, full), k in calls.items() if not full}
    whole = {v: k for (v, full), k in calls.items() if full}
    assert probe == dict.fromkeys(['cusparse', 'scatter', 'cpu'],
                                  scheduler.WARMUP + 1)
    # one untimed call and one timed call per reference on the whole graph,
    # a kernel's first call timed (its set-up made beforehand: _prepare)
    assert whole.pop('cpu') == 1 and set(whole.values()) == {2}


def test_time_ms_without_warm_up_times_the_first_call():
    n = []
    ms = scheduler.time_ms(lambda: n.append(1), torch.device('cpu'), 1000.0,
                           warmup=0)
    assert ms >= 0 and len(n) == scheduler.MAX_REPS  # the first one counted

    def slow():  # a call that fills the budget: it is the only one
        n.append(1)
        time.sleep(0.01)
    n.clear()
    scheduler.time_ms(slow, torch.device('cpu'), 5.0, warmup=0)
    assert len(n) == 1


def test_rivals_are_prepared_before_their_first_timed_call(monkeypatch):
    """A whole-graph re-timing of a hub kernel times its first call, so the
    row split it needs must exist before that call (cached in the graph)."""
    prepared = []
    real = scheduler.spmm_setup
    monkeypatch.setattr(scheduler, 'spmm_setup', lambda g, v, t, o: (
        prepared.append((v, t, o)), real(g, v, t, o))[1])
    g = skewed_graph(rows=200, hubs=2, hub_degree=50)
    c = candidates.Candidate('hub', {'hub_threshold': 8, 'index_order': 1})
    scheduler._prepare(c, g)
    assert prepared == [('hub', 8, 'index')]
    scheduler._prepare(candidates.Candidate('hub-subwarp',
                                            {'hub_threshold': 8}), g)
    assert ('hub_rows', 8) in g._cache and ('light_rows', 8) in g._cache


def test_which_candidates_pay_a_first_call_setup():
    C = candidates.Candidate
    assert candidates.pays_setup(C('cusparse'))
    assert candidates.pays_setup(C('hub', {'hub_threshold': 64}))
    assert candidates.pays_setup(C('hub-subwarp', {'hub_threshold': 64}))
    assert candidates.pays_setup(C('fp32:warp'))  # the cast's buffers
    for variant in ('warp', 'subwarp', 'scatter', 'cpu'):
        assert not candidates.pays_setup(C(variant))


def test_probe_cutoffs_follow_the_best_time_so_far(timer, cuda_rules):
    autotune.choose(skewed_graph(4), 16, torch.float32)
    probe = timer.cutoffs[:len(timer.cutoffs)]
    assert probe[0] == float('inf')  # the first reference: nothing to beat
    best = 1.0  # cuSPARSE's fake time, the first one measured
    assert probe[1] == scheduler.CUT_FACTOR * best + scheduler.CUT_SLACK_MS


def test_row_per_warp_kernels_are_not_timed_past_their_heaviest_row(
        timer, cuda_rules, monkeypatch):
    """A row-per-warp kernel cannot beat its heaviest row (one warp walks
    it): when that bound alone is over the cut-off the kernel is not timed
    at all (on the hub-skewed graph its one probe call took 35-138 ms at
    F=32); a graph whose heaviest row is light times it as before."""
    g = skewed_graph(rows=3000, hubs=3, hub_degree=2000)
    monkeypatch.setattr(candidates, 'WARP_ELEMENTS_PER_MS_32BIT',
                        3200)  # 20 ms
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # (not a "shortlist refused" case)
        d = autotune.choose(g, 32, torch.float32)
    timed = {c.variant for c, _ in timer.calls}
    assert not timed & set(candidates.ROW_PER_WARP)
    assert d.variant == 'hub'
    assert candidates.heaviest_row_ms(candidates.Candidate('hub'),
                                      g.stats(), 32, torch.float32) == 0.0
    light = skewed_graph(rows=3000, hubs=3, hub_degree=20)
    timer.calls.clear()
    autotune.choose(light, 32, torch.float32)
    assert {c.variant for c, _ in timer.calls} >= {'warp'}


class DtypeTimer(FakeTimer):
    """Fake times by the input's dtype: ``ms[dtype]`` is a pair of tables,
    the probe subgraph's and ``full_graph``'s, read as fake_ms reads them (a
    cast reference is timed with the 16-bit input); records (candidate,
    dtype, whether on the whole graph)."""

    def __init__(self, ms, full_graph=None):
        super().__init__(ms)
        self.full_graph = full_graph

    def __call__(self, c, graph, x, reduce, budget_ms,
                 cutoff_ms=None, warmup=None):
        full = graph is self.full_graph
        self.calls.append((c, x.dtype, full))
        return fake_ms(self.ms[x.dtype][full], c)


def test_heaviest_row_bound_rate_follows_the_element_size(cuda_rules,
                                                          monkeypatch):
    """A warp walks 16-bit rows ~3x faster (H200, hub-skewed graph, heaviest
    row 299k non-zeros, F=32: 'warp' took 35.1 ms in float32, 11.7 ms in
    bfloat16), so the bound's rate depends on the element size: a row of
    40k non-zeros at F=256 bounds 'warp' at >= 14.6 ms in float32, over the
    cut-off (9 ms after cuSPARSE's 1 ms), and it is not timed; in bfloat16,
    >= 5.1 ms, it is."""
    warp = candidates.Candidate('warp')
    hub_skewed = {'max_degree': 299_000}
    assert candidates.heaviest_row_ms(warp, hub_skewed, 32,
                                      torch.float32) <= 35.1
    assert candidates.heaviest_row_ms(warp, hub_skewed, 32,
                                      torch.bfloat16) <= 11.7
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    g = skewed_graph(rows=3000, hubs=1, hub_degree=40000)
    ms = {'cusparse': 1.0, 'warp': 0.9, 'hub': 0.4, 'hub-subwarp': 0.6,
          'fp32:hub': 0.5}
    t = DtypeTimer({torch.float32: (ms, None), torch.bfloat16: (ms, None)})
    monkeypatch.setattr(scheduler, 'measure', t)
    autotune.choose(g, 256, torch.bfloat16)  # (the float32 decision first)
    assert [dtype for c, dtype, _ in t.calls if c.variant == 'warp'] == [
        torch.bfloat16]


@pytest.mark.parametrize('native_ms, expect', [
    (0.29, 'cpu'),                     # 0.97x the cast path: native
    (0.31, 'cpu'),                     # 1.03x: within CAST_MARGIN, native
    (0.32, candidates.CAST + 'cpu'),   # 1.07x: the cast path
])
def test_16_bit_kernel_is_kept_unless_the_cast_path_is_clearly_faster(
        native_ms, expect, monkeypatch):
    """Against the float32 kernel with casts a 16-bit kernel is used up to
    CAST_MARGIN (1.05) of its time (it does the same plus no casts, half
    the bytes); against cuSPARSE and scatter it still needs alpha."""
    class ByDtype(FakeTimer):
        def __call__(self, c, graph, x, reduce, budget_ms,
                     cutoff_ms=None, warmup=None):
            if c.variant.startswith(candidates.CAST):
                return 0.3
            if x.dtype != torch.float32 and c.variant == 'cpu':
                return native_ms
            return fake_ms(self.ms, c)
    monkeypatch.setattr(scheduler, 'measure',
                        ByDtype({'cusparse': 1.0, 'cpu': 0.3}))
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    d = autotune.choose(skewed_graph(), 16, torch.bfloat16)
    assert d.variant == expect
    # cuSPARSE keeps its margin: a kernel at 0.97x of it is not used
    monkeypatch.setattr(scheduler, 'measure',
                        FakeTimer({'cusparse': 1.0, 'cpu': 0.97}))
    d = autotune.choose(skewed_graph(seed=1), 16, torch.float32)
    assert d.variant == 'cusparse'


@pytest.mark.parametrize(
    'fp32_probe, cusparse_full, native_full, cast_timed, expect', [
        (0.97, 1.0, 0.60, False, 'cpu'),  # under float32 'cpu' alone (0.80)
        (0.97, 1.0, 0.82, True, 'cpu'),   # over it, under the cast path
        (0.97, 1.0, 0.90, True, 'fp32:cpu'),  # over the cast path (0.85)
        (0.50, 1.0, 0.60, True, 'cpu'),  # float32 decided on the probe
        (0.97, 0.70, 0.68, False, 'cusparse'),  # 'cpu' fails alpha there
    ])
def test_16_bit_confirm_times_the_cast_path_only_if_it_could_win(
        fp32_probe, cusparse_full, native_full, cast_timed, expect,
        monkeypatch, tmp_path):
    """On the whole graph a 16-bit decision times the float32 kernel with
    casts last, and only if what the others chose there is slower than the
    float32 decision's own whole-graph time of that kernel (the casts only
    add to it; products-like bf16 F=256, H200: 'hub' 15.5 ms, float32
    'cusparse' 30.6 ms, its cast path ~0.1 s of a 0.865 s decision). With
    no such time (float32 decided on the probe) it is timed as before. (The
    float32 decision is made first, as by a model run in both dtypes.)"""
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    log = tmp_path / 'probes.jsonl'
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_TELEMETRY', str(log))
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    t = DtypeTimer({
        torch.float32: ({'cusparse': 1.0, 'cpu': fp32_probe},
                        {'cusparse': 1.0, 'cpu': 0.80}),
        torch.bfloat16: ({'cusparse': 1.0, 'fp32:cpu': 0.90, 'cpu': 0.85},
                         {'cusparse': cusparse_full, 'fp32:cpu': 0.85,
                          'cpu': native_full})}, g)
    monkeypatch.setattr(scheduler, 'measure', t)
    autotune.choose(g, 16, torch.float32)
    d = autotune.choose(g, 16, torch.bfloat16)
    assert d.variant == expect
    whole = [c.label for c, dtype, full in t.calls
             if full and dtype == torch.bfloat16]
    assert whole == ['cusparse', 'cpu'] + ['fp32:cpu'] * cast_timed
    assert d.timings['fp32:cpu@full'] == (0.85 if cast_timed else None)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    cast, = [r for r in lines
             if r['candidate'] == 'fp32:cpu' and r['stage'] == 'confirm']
    if cast_timed:
        assert cast['error'] is None
    else:
        assert cast['error'].startswith('not timed: the float32 kernel alone '
                                        'takes 0.80 ms on the whole graph')


def test_forget_one_decision_keeps_the_others(timer, monkeypatch):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    g = skewed_graph()
    autotune.choose(g, 16, torch.float32)
    autotune.choose(g, 32, torch.float32)
    autotune.forget(g, 16, torch.float32)
    assert autotune.choose(g, 32, torch.float32).source == 'memo'
    assert autotune.choose(g, 16, torch.float32).source != 'memo'


def test_forget_by_width_or_dtype_alone(timer, monkeypatch):
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    g = skewed_graph()
    for F, dtype in ((16, torch.float32), (32, torch.float32),
                     (16, torch.float64)):
        autotune.choose(g, F, dtype)
    autotune.forget(g, 16)  # (both dtypes of width 16)
    assert autotune.choose(g, 32, torch.float32).source == 'memo'
    assert autotune.choose(g, 16, torch.float64).source != 'memo'
    autotune.forget(g, dtype=torch.float32)  # (both widths in float32)
    assert autotune.choose(g, 16, torch.float64).source == 'memo'
    assert autotune.choose(g, 32, torch.float32).source != 'memo'


def test_16_bit_first_call_takes_the_float32_probe_as_its_reference(
        monkeypatch):
    """Without a float32 decision, a 16-bit one takes the float32 probe's
    verdict as its reference, without re-timing float32 kernels on the
    whole graph (~0.19 s of a 0.59 s first bf16 decision, products-like
    F=256, H200); the cast path is then re-timed there (no float32 time of
    its own to skip it by). The reference is memoised apart: a float32 call
    afterwards makes the full float32 decision, which later 16-bit
    decisions use."""
    monkeypatch.setitem(scheduler.PROBE_NNZ, 'cpu', 2000)
    monkeypatch.setenv('FUSESAMPLE_AUTOTUNE_CACHE', '')
    g = skewed_graph(rows=20000, hubs=20, hub_degree=900)
    t = DtypeTimer({
        torch.float32: ({'cusparse': 1.0, 'cpu': 0.90},  # (passes, close)
                        {'cusparse': 1.0, 'cpu': 0.80}),
        torch.bfloat16: ({'cusparse': 1.0, 'fp32:cpu': 0.90, 'cpu': 0.85},
                         {'cusparse': 1.0, 'fp32:cpu': 0.85, 'cpu': 0.60})},
        g)
    monkeypatch.setattr(scheduler, 'measure', t)
    d = autotune.choose(g, 16, torch.bfloat16)
    assert d.variant == 'cpu'
    assert not [c for c, dtype, full in t.calls
                if full and dtype == torch.float32]
    assert d.timings['fp32:cpu@full'] == 0.85  # (timed: nothing to skip by)
    t.calls.clear()
    f32 = autotune.choose(g, 16, torch.float32)
    assert f32.source == 'confirm' and f32.timings['cpu@full'] == 0.80
    assert [c.label for c, dtype, full in t.calls if full] == ['cusparse',
                                                               'cpu']
    autotune.forget(g, 16, torch.bfloat16)
    t.calls.clear()
    autotune.choose(g, 16, torch.bfloat16)  # now skips the cast path
    assert [c.label for c, dtype, full in t.calls if full] == ['cusparse',
                                                               'cpu']
