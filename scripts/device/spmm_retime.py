"""What the device scripts that re-time SpMM kernels share
(spmm_light_order.py, spmm_kernel_ab.py, spmm_profile.py): the cells of the
committed benchmark (benchmarks/results/h200/spmm_h200.csv) with their
chosen kernels, the generated graphs as CSR on the GPU, and the timers."""
import csv
from typing import Callable, Dict, Iterator, List, Tuple

import torch
from torch.profiler import ProfilerActivity, profile

from pyg_fusesample.bench import timing
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.sparse import CSRGraph

CSV = 'benchmarks/results/h200/spmm_h200.csv'


def parse(variant: str) -> Tuple[str, int, int, bool]:
    """``'hub,hub_threshold=155,index_order=1,lanes=16'`` ->
    ``('hub', 155, 16, True)`` (the last: light rows in index order)."""
    name, *opts = variant.split(',')
    opts = dict(o.split('=') for o in opts)
    return (name, int(opts.get('hub_threshold', -1)), int(opts.get('lanes', 0)),
            opts.get('index_order') == '1')


def committed_cells(graphs: List[str], keep: Callable[[dict], bool]) -> Dict[str, List[tuple]]:
    """graph -> [(dtype, F, variant, threshold, lanes, index order,
    committed warm ms)] of the SpMM rows that ``keep`` keeps."""
    cells = {}
    for r in csv.DictReader(open(CSV)):
        if r['op'] == 'spmm' and r['graph'] in graphs and keep(r):
            cells.setdefault(r['graph'], []).append(
                (getattr(torch, r['dtype']), int(r['features']), *parse(r['variant']),
                 float(r['warm_ms'])))
    return cells


def hub_split_cells(graphs: List[str]) -> Dict[str, List[tuple]]:
    """The cells whose chosen kernel splits hubs."""
    return committed_cells(graphs, lambda r: r['variant'].startswith('hub'))


def median_ms(fn, reps=20) -> float:
    return timing.median_ms(fn, reps, 3, torch.device('cuda'))


def kernel_times(fn, reps=10) -> List[Tuple[float, int, str]]:
    """(device ms per call, launches per call, name) of the CUDA kernels
    ``fn`` runs (torch.profiler), slowest first."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = e.self_device_time_total
        if t > 0 and e.device_type == torch.autograd.DeviceType.CUDA:
            rows.append((t / reps / 1e3, e.count // reps, e.key[:90]))
    return sorted(rows, reverse=True)


def cuda_graphs(names: List[str]) -> Iterator[Tuple[str, CSRGraph]]:
    """(name, CSRGraph on the GPU) of each generated graph in turn."""
    for name in names:
        data = get_dataset(name)
        g = CSRGraph.from_edge_index(data.edge_index.cuda(), data.num_nodes)
        del data
        yield name, g
