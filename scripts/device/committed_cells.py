"""Cells of the committed SpMM benchmark (benchmarks/results/h200/
spmm_h200.csv) with their chosen kernels, for the device scripts that
re-time those kernels (spmm_light_order.py, spmm_kernel_ab.py)."""
import csv
from typing import Callable, Dict, List, Tuple

import torch

from pyg_fusesample.bench import timing

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
