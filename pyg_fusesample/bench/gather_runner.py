"""``bench gather``: feature rows gathered from pinned host memory (zero-copy,
through the GPU cache) against the host link's bandwidth, in one run.

For each row width (``--features`` x ``--dtype``) a batch of ``--rows``
distinct node ids is drawn from a SYNTHETIC products-like graph with
probability proportional to out-degree (a sampled batch's node set reads
hubs far more often than leaves), and the batch's rows are gathered by:

* ``memcpy-h2d``: no gather, a ``copy_`` of a pinned host buffer of the
  batch's size to the GPU -- the link's bandwidth, the bound of every host
  variant;
* ``host-gather``: ``fusesample::gather_rows`` from pinned host memory
  (each row read in place over the link);
* ``cached-gather-<f>``: ``gather_rows_cached`` through a
  :class:`~pyg_fusesample.sampler.GPUFeatureCache` holding a fraction ``f``
  of the rows, the hottest by out-degree (its hit rate is in the row);
* ``device-gather``: ``gather_rows`` with the features in GPU memory (the
  ceiling when everything fits);
* ``cpu-index-select``: what a script without this does --
  ``x[n_id].pin_memory().to('cuda')`` (a host gather, then a copy).

Rows: the median time of ``--repeats`` synchronised calls (bench/timing.py),
the bytes delivered per second (rows x row bytes / time) and that as a
fraction of ``memcpy-h2d``'s. On a CPU only ``cpu-index-select``'s host
half runs; the others get a row saying why they were skipped.
"""
import os
from typing import Dict, List

import torch

from ..datasets import products_like
from ..environment import device_name, versions
from ..ops import gather_rows
from ..sampler import GPUFeatureCache
from .csv_schema import append_rows, read_rows
from .timing import median_ms

GATHER_COLUMNS = [
    'device', 'torch', 'cuda', 'graph', 'num_nodes', 'variant', 'rows',
    'features', 'dtype', 'row_bytes', 'cache_fraction', 'hit_rate', 'ms',
    'gb_per_s', 'link_gb_per_s', 'fraction_of_link', 'steps', 'note',
]


def hot_batch(degree: torch.Tensor, rows: int, seed: int) -> torch.Tensor:
    r""":obj:`rows` distinct node ids, drawn without replacement with
    probability proportional to ``degree + 1``."""
    g = torch.Generator().manual_seed(seed)
    rows = min(rows, degree.numel())
    return torch.multinomial(degree.double() + 1.0, rows, replacement=False,
                             generator=g)


def gather_rows_for(args, data, x_host: torch.Tensor, device: torch.device
                    ) -> List[Dict]:
    n, f = x_host.shape
    row_bytes = f * x_host.element_size()
    degree = torch.bincount(data.edge_index[0], minlength=n)
    index_host = hot_batch(degree, args.rows, args.seed)
    rows = index_host.numel()
    base = dict(device=device_name(device), **versions(),
                graph=data.name, num_nodes=n, rows=rows, features=f,
                dtype=str(x_host.dtype).replace('torch.', ''),
                row_bytes=row_bytes, steps=args.repeats)
    out: List[Dict] = []

    def row(variant: str, ms: float, **extra) -> Dict:
        r = dict(base, variant=variant, ms=f'{ms:.4f}',
                 gb_per_s=f'{rows * row_bytes / ms / 1e6:.3f}', **extra)
        out.append(r)
        return r

    def skipped(variant: str, why: str):
        out.append(dict(base, variant=variant, note=f'skipped: {why}'))

    if device.type != 'cuda':
        ms = median_ms(lambda: x_host.index_select(0, index_host),
                       args.repeats, 3, device)
        row('cpu-index-select', ms, note='host gather only (no GPU)')
        for v in ['memcpy-h2d', 'host-gather', 'device-gather'] + [
                f'cached-gather-{c:g}' for c in args.cache_fractions]:
            skipped(v, 'needs a CUDA device')
        return out

    x_pinned = x_host if x_host.is_pinned() else x_host.pin_memory()
    index = index_host.to(device)
    buffer = torch.empty(rows * f, dtype=x_host.dtype).pin_memory()
    target = torch.empty(rows * f, dtype=x_host.dtype, device=device)
    link_ms = median_ms(lambda: target.copy_(buffer, non_blocking=True),
                        args.repeats, 3, device)
    link = rows * row_bytes / link_ms / 1e6
    row('memcpy-h2d', link_ms, link_gb_per_s=f'{link:.3f}',
        fraction_of_link='1.000', note='pinned host -> device copy_ of the '
        "batch's bytes: the link's bandwidth")

    def timed(variant: str, fn, **extra):
        ms = median_ms(fn, args.repeats, 3, device)
        got = rows * row_bytes / ms / 1e6
        row(variant, ms, link_gb_per_s=f'{link:.3f}',
            fraction_of_link=f'{got / link:.3f}', **extra)

    timed('host-gather', lambda: gather_rows(x_pinned, index,
                                             check_index=False),
          note='zero-copy from pinned host memory' + (
              ', rows read in ascending id order' if row_bytes >= 512
              else ''))
    for fraction in args.cache_fractions:
        cache = GPUFeatureCache(x_pinned, int(fraction * n * row_bytes),
                                device, hotness=degree)
        cache.gather(index)
        cache.reset_stats()
        ms = median_ms(lambda: cache.gather(index), args.repeats, 3, device)
        got = rows * row_bytes / ms / 1e6
        row(f'cached-gather-{fraction:g}', ms, cache_fraction=f'{fraction:g}',
            hit_rate=f'{cache.hit_rate:.4f}', link_gb_per_s=f'{link:.3f}',
            fraction_of_link=f'{got / link:.3f}',
            note=f'{cache.capacity} rows cached by out-degree')
        del cache
    x_device = x_host.to(device)
    timed('device-gather', lambda: gather_rows(x_device, index,
                                               check_index=False),
          note='features in GPU memory')
    del x_device
    timed('cpu-index-select',
          lambda: x_host.index_select(0, index_host).pin_memory().to(
              device, non_blocking=True),
          note="x[n_id] on the host, pinned, then copied")
    return out


def markdown(path: str) -> str:
    lines = [f'<!-- generated from {os.path.basename(path)}; do not edit -->',
             '', '| device | features | dtype | variant | ms | GB/s | of the '
             'link (memcpy-h2d) | hit rate | note |', '|' + '---|' * 9]
    for r in read_rows(path):
        lines.append(f"| {r['device']} | {r['features']} | {r['dtype']} | "
                     f"{r['variant']} | {r['ms'] or '-'} | "
                     f"{r['gb_per_s'] or '-'} | "
                     f"{r['fraction_of_link'] or '-'} | "
                     f"{r['hit_rate'] or '-'} | {r['note']} |")
    return '\n'.join(lines) + '\n'


def main(args) -> int:
    device = torch.device(args.device)
    data = products_like(scale=args.scale, seed=args.seed)
    print(f'[SYNTHETIC {data.name}] {data.num_nodes:,} nodes, '
          f'{data.num_edges:,} edges; batches of {args.rows:,} rows drawn by '
          f'out-degree')
    rows: List[Dict] = []
    for f in args.features:
        for dtype in args.dtypes:
            x = torch.randn(data.num_nodes, f).to(getattr(torch, dtype))
            for r in gather_rows_for(args, data, x, device):
                rows.append(r)
                print(', '.join(f'{k}={r[k]}' for k in
                                ('variant', 'features', 'dtype', 'ms',
                                 'gb_per_s', 'fraction_of_link', 'hit_rate',
                                 'note') if r.get(k)))
    append_rows(args.out, rows, columns=GATHER_COLUMNS)
    print(f'wrote {len(rows)} rows to {args.out}')
    return 0
