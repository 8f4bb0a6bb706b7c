"""What the public SpMM path costs beyond the raw op, once decided: the
benchmark's warm time (run_spmm, synchronised per call) has run 40-80 us
above the raw op's on the hub-skewed cells (call103/104, call111).

For a few cells: the scheduler's decision, then the raw op with the
decision's arguments, ops.spmm and run_spmm, each timed three ways --
synchronised per call (the benchmark's warm_ms), pipelined (CUDA events
between back-to-back calls: the device's time per call while the host keeps
ahead) and the host's own time per call (no synchronisation; the GPU is
kept busy so the host never waits on a full launch queue).

    python scripts/device/spmm_call_overhead.py
"""
import statistics
import time

import torch

from pyg_fusesample.autotune import choose, run_spmm
from pyg_fusesample.bench import timing
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops.spmm import spmm
from pyg_fusesample.sparse import CSRGraph

CELLS = [('hub', torch.bfloat16, 128), ('hub', torch.float32, 16), ('er', torch.bfloat16, 128)]
dev = torch.device('cuda')
ops = torch.ops.fusesample


def host_us(fn, n=200):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


timing.warm_up_device(dev)
graphs = {}
for name, dtype, f in CELLS:
    if name not in graphs:
        data = get_dataset(name)
        graphs[name] = CSRGraph.from_edge_index(data.edge_index.to(dev), data.num_nodes)
        del data
    g = graphs[name]
    x = torch.randn(g.num_cols, f, device=dev, dtype=dtype)
    d = choose(g, f, dtype, x=x)
    th = d.params.get('hub_threshold', -1)
    lanes = d.params.get('lanes', 0)
    order = 'index' if d.params.get('index_order') else 'length'
    hubs = d.variant.startswith('hub')
    chunks = g.hub_chunks(th) if hubs else None
    light = g.light_rows(th) if hubs and order == 'length' else None
    paths = {
        'raw op': lambda: ops.spmm(g.rowptr, g.col, None, x, 'sum', d.variant, th, chunks,
                                   lanes, light),
        'ops.spmm': lambda: spmm(g, x, variant=d.variant, hub_threshold=th, lanes=lanes,
                                 light_order=order),
        'run_spmm': lambda: run_spmm(g, x),
    }
    print(f'== {name} {str(dtype)[6:]} F={f}: {d.variant} {d.params}', flush=True)
    for label, fn in paths.items():
        sync = timing.median_ms(fn, 30, 3, dev)
        piped = statistics.median(timing.pipelined_periods(fn, 30, 3, dev))
        print(f'   {label:9s} synchronised {sync:.4f} ms, pipelined {piped:.4f} ms, '
              f'host {host_us(fn):.1f} us a call', flush=True)
    del x
