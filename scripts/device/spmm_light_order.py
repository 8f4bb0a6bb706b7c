"""Does taking the light rows by length (CSRGraph.light_rows) speed up the
hub-split SpMM variants? On the hub-skewed graph the rows that share a warp
in index order need 2.2x the passes of rows sorted by length (a warp waits
for its longest row).

For every cell of the committed benchmark (benchmarks/results/h200/
spmm_h200.csv) whose chosen kernel splits hubs, times the same kernel with
the light rows in length order and in index order (one build; interleaved
rounds, medians of synchronised calls), beside cuSPARSE.

    python scripts/device/spmm_light_order.py
    SPMM_GRAPHS=hub_skewed ROUNDS=5 python scripts/device/spmm_light_order.py
"""
import os
import statistics

import torch

from pyg_fusesample.bench import timing
from pyg_fusesample.ops.spmm import spmm_cusparse
from spmm_retime import cuda_graphs, hub_split_cells, median_ms

ROUNDS = int(os.environ.get('ROUNDS', 3))
GRAPHS = os.environ.get('SPMM_GRAPHS', 'hub_skewed,products_like,reddit_like,erdos_renyi').split(',')
ops = torch.ops.fusesample
cells = hub_split_cells(GRAPHS)


timing.warm_up_device(torch.device('cuda'))
for graph, g in cuda_graphs(GRAPHS):
    for dtype, f, variant, th, lanes, _, committed in cells.get(graph, []):
        x = torch.randn(g.num_cols, f, device='cuda', dtype=dtype)
        chunks, light = g.hub_chunks(th), g.light_rows(th)

        def call(order):
            return lambda: ops.spmm(g.rowptr, g.col, None, x, 'sum', variant, th,
                                    chunks, lanes, order)
        torch.testing.assert_close(call(light)().float(), call(None)().float(),
                                   rtol=1e-2, atol=1e-2)
        times = {'length': [], 'index': []}
        for _ in range(ROUNDS):
            times['length'].append(median_ms(call(light)))
            times['index'].append(median_ms(call(None)))
        a, b = (statistics.median(times[k]) for k in ('length', 'index'))
        cus = median_ms(lambda: spmm_cusparse(g, x))
        print(f'{graph} {str(dtype)[6:]} F={f} {variant}@{th} lanes {lanes}: '
              f'length order {a:.3f} ms, index order {b:.3f} ms ({b / a:.3f}x); '
              f'cuSPARSE {cus:.3f} ({cus / a:.2f}x / {cus / b:.2f}x); '
              f'committed run {committed:.3f}', flush=True)
        del x
