"""One GCN layer, forward + backward, per (graph, F, dtype): AutoSpMMConv
against every rival its guardrail promises not to lose to.

``python -m pyg_fusesample.bench conv --graphs products hub`` writes one row
per (graph, F, dtype, variant):

* ``autospmm``: :class:`~pyg_fusesample.nn.AutoSpMMConv` ``(F, F)`` called
  with ``edge_index``; ``cold_ms`` is its first call (normalisation, the
  kernel decision with a fresh autotune cache file, forward and backward),
  ``warm_ms`` the median of ``--steps`` calls after it.
* ``gcnconv``: PyG's ``GCNConv(F, F, cached=True)`` on the same
  ``edge_index`` (its default scatter path).
* ``gcnconv-csr``: the same layer on a ``torch.sparse_csr`` ``adj_t``
  (``torch.sparse.mm``: cuSPARSE on a GPU); a dtype it does not take gets a
  row marked ``unsupported: ...``.

With ``--quality`` each ``autospmm`` row also holds, per SpMM (forward and
backward), the time of a fresh decision and the chosen kernel's time over
the best of every candidate on the whole graph (bench/decision_quality.py).

A 16-bit cell runs under ``torch.autocast`` with that dtype (``x`` stays
float32, as in a mixed-precision script); its rivals also include the
``autospmm`` float32 row of the same F (the layer without autocast).
Every step is ``out.float().sum().backward()`` with ``x`` requiring grad,
so the backward's transposed SpMM is timed too. All variants share one set
of weights. Synchronised, eager.
"""
import contextlib
import os
from typing import Callable, Dict, List, Optional

import torch

from ..environment import device_name, versions
from .csv_schema import read_rows
from .graph_runs import fresh_autotune_cache, rows_per_graph
from .timing import median, timed_calls

COLUMNS = ['device', 'torch', 'cuda', 'graph', 'num_nodes', 'nnz', 'features',
           'dtype', 'variant', 'cold_ms', 'warm_ms', 'steps', 'note',
           'decision_fwd_s', 'decision_bwd_s', 'vs_best_fwd', 'vs_best_bwd',
           'best_kernels']
VARIANTS = ('autospmm', 'gcnconv', 'gcnconv-csr')
DTYPES = {'float32': torch.float32, 'bfloat16': torch.bfloat16,
          'float16': torch.float16}


def _autocast(device: torch.device, dtype: torch.dtype):
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def _layer(variant: str, f: int, state: Optional[Dict], device):
    from torch_geometric.nn import GCNConv

    from ..nn import AutoSpMMConv
    torch.manual_seed(0)
    layer = (AutoSpMMConv(f, f) if variant == 'autospmm'
             else GCNConv(f, f, cached=True)).to(device)
    if state is not None:
        layer.load_state_dict(state)
    return layer


def _step_fn(layer, x, graph, device, dtype) -> Callable[[], None]:
    params = list(layer.parameters())

    def step():
        x.grad = None
        for p in params:
            p.grad = None
        with _autocast(device, dtype):
            out = layer(x, graph)
        out.float().sum().backward()
    return step


def _decisions(layer, edge_index, num_nodes: int, f: int,
               dtype: torch.dtype) -> str:
    r"""The kernels AutoSpMMConv's SpMM ran, forward (the graph) and
    backward (its transpose), in the dtype they saw (lin's output: the
    cell's dtype under autocast): the memoised decisions, looked up again."""
    from ..autotune import Candidate, choose
    from ..autotune.scheduler import valued_as
    from ..ops.spmm import transposed
    graph = valued_as(layer.csr(edge_index, num_nodes, None, dtype), dtype)
    labels = [Candidate(d.variant, dict(d.params)).label
              for d in (choose(graph, f, dtype),
                        choose(transposed(graph), f, dtype))]
    return f'forward {labels[0]}; backward {labels[1]}'


def _quality(layer, edge_index, num_nodes: int, f: int,
             dtype: torch.dtype) -> Dict[str, str]:
    r"""Columns of :func:`.decision_quality.quality` for the layer's two
    SpMMs (forward: the graph; backward: its transpose)."""
    from ..ops.spmm import transposed
    from .decision_quality import quality
    graph = layer.csr(edge_index, num_nodes, None, dtype)
    fwd, bwd = quality(graph, f, dtype), quality(transposed(graph), f, dtype)
    return {'decision_fwd_s': f"{fwd['decision_s']:.3f}",
            'decision_bwd_s': f"{bwd['decision_s']:.3f}",
            'vs_best_fwd': f"{fwd['ratio']:.3f}",
            'vs_best_bwd': f"{bwd['ratio']:.3f}",
            'best_kernels': f"forward {fwd['best']}; backward {bwd['best']}"}


def layer_rows(graph_name: str, data, device: torch.device,
               features: List[int], dtypes: List[str], steps: int,
               variants=VARIANTS, quality: bool = False) -> List[Dict]:
    r"""The rows of one graph; with ``quality`` the ``autospmm`` rows also
    get each SpMM's fresh decision time and its time over the best of every
    candidate (:mod:`.decision_quality`; the exhaustive timing takes a few
    seconds a cell)."""
    from torch_geometric.utils import to_torch_csr_tensor
    ei = data.edge_index.to(device)
    adj_t = to_torch_csr_tensor(ei.flip(0), size=(data.num_nodes,) * 2)
    base = {'device': device_name(device), **versions(), 'graph': graph_name,
            'num_nodes': data.num_nodes, 'nnz': ei.size(1)}
    rows = []
    for f in features:
        g = torch.Generator(device='cpu').manual_seed(f)
        x = torch.randn(data.num_nodes, f, generator=g).to(device)
        x.requires_grad_(True)
        state = None
        for dname in dtypes:
            dtype = DTYPES[dname]
            for variant in variants:
                layer = _layer(variant, f, state, device)
                if state is None:
                    state = layer.state_dict()
                graph = adj_t if variant == 'gcnconv-csr' else ei
                step = _step_fn(layer, x, graph, device, dtype)
                row = dict(base, features=f, dtype=dname, variant=variant,
                           steps=steps)
                try:
                    cold = timed_calls(step, 1, 0, device)[0]
                    warm = median(timed_calls(step, steps, 2, device))
                    row.update(cold_ms=f'{cold:.4f}', warm_ms=f'{warm:.4f}')
                    if variant == 'autospmm':
                        row['note'] = _decisions(layer, ei, data.num_nodes,
                                                 f, dtype)
                        if quality:
                            row.update(_quality(layer, ei, data.num_nodes, f,
                                                dtype))
                except (RuntimeError, NotImplementedError) as e:
                    first = str(e).strip().splitlines()[0][:160]
                    row['note'] = f'unsupported: {type(e).__name__}: {first}'
                rows.append(row)
                print(f"{graph_name} F={f} {dname} {variant}: " + (
                    f"{row['warm_ms']} ms (first call {row['cold_ms']} ms)"
                    if 'warm_ms' in row else row['note']), flush=True)
                del layer, step
    return rows


def _pair(row: Dict[str, str], a: str, b: str) -> str:
    return f'{row[a]} / {row[b]}' if row.get(a) and row.get(b) else '-'


def verdicts(rows: List[Dict[str, str]]) -> List[Dict]:
    r"""Per (graph, F, dtype): AutoSpMMConv's warm time, its fastest rival
    (the other variants of the cell and, for a 16-bit cell, AutoSpMMConv's
    float32 row of the same graph and F) and whether it is no slower."""
    def ms(r):
        return float(r['warm_ms']) if r.get('warm_ms') else None

    cells: Dict[tuple, Dict[str, Dict]] = {}
    for r in rows:
        cells.setdefault((r['graph'], r['features'], r['dtype']),
                         {})[r['variant']] = r
    out = []
    for (graph, f, dname), by_variant in cells.items():
        ours = by_variant.get('autospmm')
        if ours is None or ms(ours) is None:
            continue
        rivals = {v: ms(r) for v, r in by_variant.items()
                  if v != 'autospmm' and ms(r) is not None}
        fp32 = cells.get((graph, f, 'float32'), {}).get('autospmm')
        if dname != 'float32' and fp32 is not None and ms(fp32) is not None:
            rivals['autospmm-fp32'] = ms(fp32)
        best = min(rivals, key=rivals.get) if rivals else None
        out.append({'graph': graph, 'features': f, 'dtype': dname,
                    'autospmm_ms': ms(ours), 'cold_ms': ours['cold_ms'],
                    'kernels': ours.get('note', ''),
                    'decision': _pair(ours, 'decision_fwd_s', 'decision_bwd_s'),
                    'vs_best': _pair(ours, 'vs_best_fwd', 'vs_best_bwd'),
                    'rivals': rivals, 'best_rival': best,
                    'ratio': ms(ours) / rivals[best] if best else None})
    return out


def markdown(path: str) -> str:
    rows = read_rows(path)
    lines = [f'<!-- generated from {os.path.basename(path)}; do not edit -->',
             '', '| graph | F | dtype | AutoSpMMConv ms | GCNConv ms | '
             'GCNConv CSR (cuSPARSE) ms | AutoSpMMConv fp32 ms | '
             'vs fastest rival | first call ms | decision s (fwd / bwd) | '
             'vs best of all (fwd / bwd) | kernels |', '|' + '---|' * 12]
    for v in verdicts(rows):
        r = v['rivals']

        def cell(k):
            return f'{r[k]:.4f}' if k in r else '-'
        ratio = (f"{v['ratio']:.3f} ({v['best_rival']})"
                 + ('' if v['ratio'] <= 1.0 else ' **slower**')
                 if v['ratio'] is not None else '-')
        lines.append(f"| {v['graph']} | {v['features']} | {v['dtype']} | "
                     f"{v['autospmm_ms']:.4f} | {cell('gcnconv')} | "
                     f"{cell('gcnconv-csr')} | {cell('autospmm-fp32')} | "
                     f"{ratio} | {v['cold_ms']} | {v['decision']} | "
                     f"{v['vs_best']} | {v['kernels'] or '-'} |")
    return '\n'.join(lines) + '\n'


def main(args) -> int:
    device = torch.device(args.device)
    fresh_autotune_cache()
    rows_per_graph(args, device, 'conv', lambda label, data: layer_rows(
        label, data, device, args.features, args.dtypes, args.steps,
        quality=getattr(args, 'quality', False)), COLUMNS, markdown)
    return 0
