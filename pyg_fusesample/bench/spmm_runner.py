"""SpMM benchmark: the scheduler's choice against cuSPARSE and the gather
floor, and a full-batch 2-layer GCN step against PyG's GCNConv.

``python -m pyg_fusesample.bench spmm --graphs products reddit hub er``
writes one row per (graph, F, dtype) and one per GCN setting:

* ``op=spmm``: ``cold_ms`` is the first :func:`~pyg_fusesample.autotune.choose`
  (feature extraction + probes + guardrail, with a fresh cache file: the
  one-time cost), ``warm_ms`` the median of ``--steps`` calls of
  :func:`~pyg_fusesample.autotune.run_spmm` afterwards (memo hit: replay),
  ``cusparse_ms`` the median of ``torch.sparse.mm`` on the same CSR,
  ``floor_ms`` = nnz * F * bytes / measured bandwidth (every non-zero reads
  one feature row from HBM; bandwidth measured here by a device copy), and
  ``candidates`` the probe times of every candidate.
* ``op=gcn``: forward + backward of a 2-layer GCN (hidden 256) over the whole
  graph, AutoSpMMConv vs GCNConv (``cached=True``) on a torch CSR ``adj_t``
  (cuSPARSE), same weights.
"""
import csv
import os
from typing import Dict, List, Optional

import torch
import torch.nn.functional as F

from ..environment import device_name, versions
from .graph_runs import fresh_autotune_cache, rows_per_graph
from .timing import median, timed_calls

COLUMNS = ['device', 'torch', 'cuda', 'graph', 'num_nodes', 'nnz', 'features',
           'dtype', 'op', 'variant', 'source', 'cold_ms', 'warm_ms',
           'cusparse_ms', 'ratio_vs_cusparse', 'floor_ms', 'ratio_vs_floor',
           'candidates']
DTYPES = {'float32': torch.float32, 'bfloat16': torch.bfloat16,
          'float16': torch.float16}


def copy_bandwidth(device: torch.device) -> float:
    """Bytes/s of a large device-to-device copy (read + write counted)."""
    n = (1 << 30) // 4 if device.type == 'cuda' else (1 << 26) // 4
    a = torch.empty(n, device=device)
    b = torch.empty_like(a)
    ms = median(timed_calls(lambda: b.copy_(a), 10, 3, device))
    return 2 * a.numel() * 4 / (ms / 1e3)


def _fmt(x: Optional[float]) -> str:
    return '' if x is None or x != x else f'{x:.4f}'


def spmm_rows(graph_name: str, data, device: torch.device, features: List[int],
              dtypes: List[str], steps: int, bandwidth: float) -> List[Dict]:
    from ..autotune import choose, run_spmm
    from ..ops.spmm import spmm_cusparse
    from ..sparse import CSRGraph
    rows = []
    for dname in dtypes:
        dtype = DTYPES[dname]
        for f in features:
            # A fresh graph object: no memo, so the first choose() probes.
            graph = CSRGraph.from_edge_index(data.edge_index.to(device),
                                             data.num_nodes)
            x = torch.randn(data.num_nodes, f, device=device, dtype=dtype)
            cold = timed_calls(lambda: choose(graph, f, dtype), 1, 0, device)[0]
            decision = choose(graph, f, dtype)
            warm = median(timed_calls(lambda: run_spmm(graph, x), steps, 3, device))
            cus = median(timed_calls(lambda: spmm_cusparse(graph, x), steps, 3,
                                     device))
            floor = graph.nnz * f * x.element_size() / bandwidth * 1e3
            # (a rival that could not run has no time: None)
            cands = ';'.join(f'{k}={_fmt(v)}' for k, v in
                             sorted(getattr(decision, 'timings', {}).items()))
            rows.append({
                'device': device_name(device), **versions(),
                'graph': graph_name, 'num_nodes': data.num_nodes,
                'nnz': graph.nnz, 'features': f, 'dtype': dname, 'op': 'spmm',
                'variant': decision.variant + ''.join(
                    f',{k}={v}' for k, v in sorted(decision.params.items())),
                'source': decision.source, 'cold_ms': _fmt(cold),
                'warm_ms': _fmt(warm), 'cusparse_ms': _fmt(cus),
                'ratio_vs_cusparse': _fmt(warm / cus),
                'floor_ms': _fmt(floor), 'ratio_vs_floor': _fmt(warm / floor),
                'candidates': cands})
            r = rows[-1]
            print(f"{graph_name} F={f} {dname}: {r['variant']} ({r['source']}) "
                  f"{r['warm_ms']} ms vs cuSPARSE {r['cusparse_ms']} ms "
                  f"(x{r['ratio_vs_cusparse']}), floor {r['floor_ms']} ms, "
                  f"cold {r['cold_ms']} ms", flush=True)
            del x, graph
    return rows


def gcn_rows(graph_name: str, data, device: torch.device, steps: int,
             hidden: int = 256) -> List[Dict]:
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import to_torch_csr_tensor

    from ..nn import AutoSpMMConv
    x = data.x.to(device)
    y = data.y.to(device)
    ei = data.edge_index.to(device)
    adj_t = to_torch_csr_tensor(ei.flip(0), size=(data.num_nodes,) * 2)
    classes = int(y.max()) + 1
    sizes = [x.size(1), hidden, classes]
    torch.manual_seed(0)
    ours = torch.nn.ModuleList([AutoSpMMConv(sizes[i], sizes[i + 1])
                                for i in range(2)]).to(device)
    pyg = torch.nn.ModuleList([GCNConv(sizes[i], sizes[i + 1], cached=True)
                               for i in range(2)]).to(device)
    pyg.load_state_dict(ours.state_dict())

    def step(layers, graph):
        h = F.relu(layers[0](x, graph))
        loss = F.cross_entropy(layers[1](h, graph), y)
        loss.backward()

    rows = []
    times = {}
    for name, layers, graph in (('autospmm', ours, ei), ('pyg-gcnconv', pyg, adj_t)):
        cold = timed_calls(lambda: step(layers, graph), 1, 0, device)[0]
        times[name] = median(timed_calls(lambda: step(layers, graph), steps, 3,
                                         device))
        rows.append({'device': device_name(device), **versions(),
                     'graph': graph_name, 'num_nodes': data.num_nodes,
                     'nnz': data.num_edges, 'features': x.size(1),
                     'dtype': 'float32', 'op': 'gcn', 'variant': name,
                     'source': '', 'cold_ms': _fmt(cold),
                     'warm_ms': _fmt(times[name])})
    for r in rows:
        r['ratio_vs_cusparse'] = _fmt(times[r['variant']] / times['pyg-gcnconv'])
        print(f"{graph_name} GCN step {r['variant']}: {r['warm_ms']} ms "
              f"(x{r['ratio_vs_cusparse']} of GCNConv), first call "
              f"{r['cold_ms']} ms", flush=True)
    return rows


def markdown(path: str) -> str:
    with open(path, newline='') as f:
        rows = list(csv.DictReader(f))
    head = ('| graph | op | F | dtype | chosen | warm ms | cuSPARSE ms | '
            'chosen / cuSPARSE | floor ms | chosen / floor | cold ms |')
    lines = [f'<!-- generated from {os.path.basename(path)}; do not edit -->',
             '', head, '|' + '---|' * 11]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['op']} | {r['features']} | "
                     f"{r['dtype']} | {r['variant']} | {r['warm_ms']} | "
                     f"{r['cusparse_ms'] or '-'} | {r['ratio_vs_cusparse']} | "
                     f"{r['floor_ms'] or '-'} | {r['ratio_vs_floor'] or '-'} | "
                     f"{r['cold_ms']} |")
    return '\n'.join(lines) + '\n'


def plot(path: str, png: str) -> bool:
    """Per graph: chosen and floor time relative to cuSPARSE against F, one
    line per dtype (False without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    with open(path, newline='') as f:
        rows = [r for r in csv.DictReader(f) if r['op'] == 'spmm']
    graphs = list(dict.fromkeys(r['graph'] for r in rows))
    fig, axes = plt.subplots(1, len(graphs), figsize=(4 * len(graphs), 3.6),
                             squeeze=False)
    for ax, g in zip(axes[0], graphs):
        for i, dt in enumerate(dict.fromkeys(r['dtype'] for r in rows)):
            rs = [r for r in rows if r['graph'] == g and r['dtype'] == dt]
            fs = [int(r['features']) for r in rs]
            ax.plot(fs, [float(r['ratio_vs_cusparse']) for r in rs], '-o',
                    color=f'C{i}', label=f'chosen ({dt})')
            ax.plot(fs, [float(r['floor_ms']) / float(r['cusparse_ms'])
                         for r in rs], ':', color=f'C{i}',
                    label=f'gather floor ({dt})')
        ax.axhline(1.0, color='gray', lw=0.8)
        ax.set_xscale('log', base=2)
        ax.set_title(g)
        ax.set_xlabel('F')
        ax.set_ylabel('time / cuSPARSE')
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"SpMM on {rows[0]['device']} (lower is better)" if rows else '')
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return True


def main(args) -> int:
    device = torch.device(args.device)
    fresh_autotune_cache()
    bandwidth = copy_bandwidth(device)
    print(f'measured copy bandwidth: {bandwidth / 1e12:.2f} TB/s', flush=True)
    def rows(label, data):
        out = spmm_rows(label, data, device, args.features, args.dtypes,
                        args.steps, bandwidth)
        if not args.no_gcn:
            out += gcn_rows(label, data, device, args.steps)
        return out
    rows_per_graph(args, device, 'spmm', rows, COLUMNS, markdown)
    plot(args.out, os.path.splitext(args.out)[0] + '.png')
    return 0
