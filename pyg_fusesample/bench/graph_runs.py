"""What the per-graph harnesses (``spmm``, ``conv``, ``subgraph``, ``walk``) share: the
SYNTHETIC graphs they loop over, and the markdown written next to a CSV."""
import os
from typing import Callable, Dict, List, Union

import torch
from torch_geometric.data import Data, HeteroData


def dataset_kwargs(name: str) -> Dict:
    """Extra ``get_dataset`` arguments of a benchmark graph: mag_like with
    features for every node type (``features='all'``), as PyG's
    to_hetero_mag.py takes metapath2vec ones for the featureless types."""
    key = name.lower().replace('-', '_')
    return {'features': 'all'} if key in ('mag', 'mag_like') else {}


def for_each_graph(names: List[str],
                   scale: Union[float, Callable[[str], float]], seed: int,
                   device: torch.device, what: str,
                   measure: Callable[[str, Data], None],
                   hetero: bool = False) -> None:
    """Calls ``measure(label, data)`` on each named graph
    (``datasets.get_dataset`` at ``scale``, or ``scale(name)``), announced as
    SYNTHETIC; a heterogeneous one stops the run (``what`` the harness
    measures, for the message) unless ``hetero`` (then built with
    :func:`dataset_kwargs`). A callback rather than a generator, so that
    no reference to a graph outlives its call: it is freed, and the CUDA
    cache emptied, before the next one is built."""
    from ..datasets import get_dataset
    for name in names:
        data = get_dataset(name, seed=seed,
                           scale=scale(name) if callable(scale) else scale,
                           **(dataset_kwargs(name) if hetero else {}))
        if isinstance(data, HeteroData) and not hetero:
            raise SystemExit(f'{what} takes a homogeneous graph; {name!r} is '
                             f'heterogeneous (HeteroData)')
        label = getattr(data, 'name', name)
        print(f'SYNTHETIC graph {label}: {data.num_nodes:,} nodes, '
              f'{data.num_edges:,} edges', flush=True)
        measure(label, data)
        del data
        if device.type == 'cuda':
            torch.cuda.empty_cache()


def rows_per_graph(args, device: torch.device, what: str,
                   rows: Callable[[str, Data], List[Dict]], columns: List[str],
                   markdown: Callable[[str], str]) -> None:
    """The per-graph harnesses' run: for each graph of ``args.graphs`` (at
    ``args.scale``, ``args.seed``) the rows of ``rows(label, data)`` appended
    to ``args.out`` as soon as they are measured, then the markdown table
    next to it."""
    from .csv_schema import append_rows
    for_each_graph(args.graphs, args.scale, args.seed, device, what,
                   lambda label, data: append_rows(
                       args.out, rows(label, data), columns=columns))
    write_markdown(args.out, markdown)


def fresh_autotune_cache() -> None:
    """Points the autotune decision file at a new temporary one, unless the
    user set one: the run's first calls then include the decisions (the
    cold times the conv and spmm harnesses report)."""
    import tempfile
    os.environ.setdefault('FUSESAMPLE_AUTOTUNE_CACHE', os.path.join(
        tempfile.mkdtemp(prefix='autotune-'), 'autotune.json'))


def write_markdown(csv_path: str, markdown: Callable[[str], str]) -> str:
    """Writes ``markdown(csv_path)`` next to the CSV (``.md``), prints and
    returns it."""
    text = markdown(csv_path)
    with open(os.path.splitext(csv_path)[0] + '.md', 'w') as f:
        f.write(text)
    print(text)
    return text
