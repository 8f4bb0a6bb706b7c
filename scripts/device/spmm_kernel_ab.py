"""A/B of an experiment build's SpMM kernel switch, an environment variable
the build reads per call, on cells of the committed benchmark: the chosen
kernel (variant, threshold, lanes, light-row order) under each setting, in
interleaved rounds of synchronised medians of the whole call, with the
hub kernel's own device time (torch.profiler), after checking that every
setting gives the same sums (unweighted and weighted).

    AB_ENV=FUSESAMPLE_SPMM_HUB_RUNS AB_MODES=runs=1,strided=0 \\
        python scripts/device/spmm_kernel_ab.py            # call110
    AB_ENV=FUSESAMPLE_SPMM_WIDE_PASS AB_MODES=old=,4:6=4:6 AB_CELLS=one-vector-16 \\
        SPMM_GRAPHS=hub_skewed ROUNDS=5 python scripts/device/spmm_kernel_ab.py

AB_CELLS: ``hub-split`` (default: chosen kernels that split hubs),
``one-vector`` (cells whose lanes give each lane one vector) or
``one-vector-16`` (those of them in 16 bits).
"""
import os
import statistics

import torch

from pyg_fusesample.bench import timing
from spmm_retime import committed_cells, cuda_graphs, kernel_times, median_ms

ROUNDS = int(os.environ.get('ROUNDS', 3))
GRAPHS = os.environ.get('SPMM_GRAPHS', 'hub_skewed,products_like,reddit_like').split(',')
ENV = os.environ['AB_ENV']
MODES = dict(m.split('=', 1) for m in os.environ['AB_MODES'].split(','))
ops = torch.ops.fusesample


def one_vector(r) -> bool:
    """The chosen kernel gives each lane one 16-byte vector (the kernel's
    rule; a packed variant's row has max(8, lanes) lanes, row_group)."""
    lanes = int(dict(o.split('=') for o in r['variant'].split(',')[1:]).get('lanes', 0))
    nvec = int(r['features']) * getattr(torch, r['dtype']).itemsize // 16
    group = max(8, lanes) if 'subwarp' in r['variant'].split(',')[0] else 32
    return nvec >= 8 and min(lanes, group) >= nvec


KEEP = {'hub-split': lambda r: r['variant'].startswith('hub'),
        'one-vector': one_vector,
        'one-vector-16': lambda r: one_vector(r) and r['dtype'] in ('bfloat16', 'float16')}
cells = committed_cells(GRAPHS, KEEP[os.environ.get('AB_CELLS', 'hub-split')])


def hub_kernel_ms(fn):
    return sum(ms for ms, _, name in kernel_times(fn) if 'spmm_hub_kernel' in name)


def setting(mode):
    os.environ[ENV] = MODES[mode]


timing.warm_up_device(torch.device('cuda'))
for graph, g in cuda_graphs(GRAPHS):
    for dtype, f, variant, th, lanes, index_order, committed in cells.get(graph, []):
        x = torch.randn(g.num_cols, f, device='cuda', dtype=dtype)
        hubs = variant.startswith('hub')
        chunks = g.hub_chunks(th) if hubs else None
        light = g.light_rows(th) if hubs and not index_order else None
        w = torch.rand(g.nnz, device='cuda', dtype=dtype)

        def call(value=None):
            return ops.spmm(g.rowptr, g.col, value, x, 'sum', variant, th, chunks, lanes, light)

        outs = {}
        for mode in MODES:
            setting(mode)
            outs[mode] = (call().float(), call(w).float())
        for mode in MODES:
            for a, b in zip(outs[mode], next(iter(outs.values()))):
                torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)
        times = {m: [] for m in MODES}
        for _ in range(ROUNDS):
            for mode in MODES:
                setting(mode)
                times[mode].append(median_ms(call))
        hub = {}
        for mode in MODES:
            setting(mode)
            hub[mode] = hub_kernel_ms(call) if hubs else 0.0
        med = {m: statistics.median(t) for m, t in times.items()}
        base = next(iter(MODES))
        order = 'index' if index_order else 'length'
        print(f'{graph} {str(dtype)[6:]} F={f} {variant}@{th} lanes {lanes} {order}: ' + ', '.join(
            f'{m} {med[m]:.3f} ms ({med[base] / med[m]:.3f}x, hub kernel {hub[m]:.3f})'
            for m in MODES) + f'; committed {committed:.3f}', flush=True)
        del x, w
    os.environ.pop(ENV)
