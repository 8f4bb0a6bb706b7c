"""Markdown tables (and PNG plots when matplotlib is present) from a CSV."""
import statistics
from collections import defaultdict
from typing import Dict, List, Optional

from .csv_schema import read_rows


def _setting(r: Dict) -> tuple:
    return (r['device'], r['graph'], r['fanout'], r['batch_size'], r['amp'])


def _round(r: Dict) -> str:
    # (files written before the harness had rounds lack the column)
    return str(r.get('round') or 0)


def _key(r: Dict) -> tuple:
    return _setting(r) + (_round(r), )


def _label(r: Dict) -> str:
    # The variant, and the layers when they are not PyG's (files written
    # before the 'layers' column have PyG's).
    layers = r.get('layers') or 'pyg'
    return r['variant'] if layers == 'pyg' else \
        f"{r['variant']} + {layers} layers"


def _several_rounds(rows: List[Dict]) -> bool:
    return len({_round(r) for r in rows}) > 1


def _f(x: str, fmt: str) -> str:
    try:
        return format(float(x), fmt)
    except (TypeError, ValueError):
        return '-'


def _ratio(r: Dict, column: str, floor_column: str) -> Optional[float]:
    try:
        return float(r[column]) / float(r[floor_column])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _over(r: Dict, column: str, floor_column: str) -> str:
    ratio = _ratio(r, column, floor_column)
    return '-' if ratio is None else f'{ratio:.2f}'


def _spread(values: List[float], fmt: str = '.2f') -> str:
    # median (min-max) over rounds
    if not values:
        return '-'
    return (f'{format(statistics.median(values), fmt)} '
            f'({format(min(values), fmt)}-{format(max(values), fmt)})')


# The CapturedStep row of `bench sage`: the floor of the fused-sage and
# compile-floor rows of its round (the whole step replayed from one graph).
CAPTURED_VARIANT = 'fused-sage-graph'


def rounds_summary(rows: List[Dict]) -> str:
    """One line per (setting, variant, workers) of a run with several
    rounds: the median (min-max) over rounds of the step time and of each
    row's ratio to the floor of its own round (the model-only step,
    synchronised and pipelined; for ``bench sage`` rows, the CapturedStep
    row). Empty for a run of one round."""
    if not _several_rounds(rows):
        return ''
    groups = defaultdict(list)
    for r in rows:
        groups[_setting(r) + (_label(r), r['num_workers'])].append(r)
    fresh = any(r.get('fresh_model_ms') for r in rows)
    captured = {_key(r): r['step_ms'] for r in rows
                if _label(r) == CAPTURED_VARIANT}
    lines = ['| graph | fan-out | batch | amp | variant | workers | rounds | '
             'step ms | pipelined step ms | step / model-only | '
             'pipelined / model-only |' +
             (' step / model-fresh | pipelined / model-fresh |' if fresh
              else '') + (' step / CapturedStep |' if captured else ''),
             '|' + '---|' * (11 + 2 * fresh + bool(captured))]
    for (_, graph, fanout, bs, amp, variant, nw), rs in groups.items():
        def ratios(column, floor):
            return [x for x in (_ratio(r, column, floor) for r in rs)
                    if x is not None]
        periods = [float(r['pipelined_step_ms']) for r in rs
                   if r.get('pipelined_step_ms')]
        median_ms = (f'{statistics.median(periods):.3f}' if periods
                     else '-')
        # (each row with the CapturedStep time of its round beside it)
        over_captured = [x for x in (
            _ratio({**r, 'captured_ms': captured.get(_key(r))}, 'step_ms',
                   'captured_ms') for r in rs) if x is not None]
        lines.append(
            f'| {graph} | {fanout} | {bs} | {amp} | {variant} | {nw} | '
            f'{len(rs)} | {_spread([float(r["step_ms"]) for r in rs], ".3f")} | '
            f'{median_ms} | '
            f"{_spread(ratios('step_ms', 'model_ms'))} | "
            f"{_spread(ratios('pipelined_step_ms', 'pipelined_model_ms'))} |"
            + (f" {_spread(ratios('step_ms', 'fresh_model_ms'))} | "
               f"{_spread(ratios('pipelined_step_ms', 'pipelined_fresh_model_ms'))} |"
               if fresh else '')
            + (f' {_spread(over_captured)} |' if captured else ''))
    return '\n'.join(lines) + '\n'


def markdown(rows: List[Dict], baseline: str = 'pyg') -> str:
    """One line per (setting, variant). Ratios compare rows of one CSV (one
    process run): ``vs pyg`` against NeighborLoader with the most workers
    measured in that setting, ``/ model`` against the model-only step (the
    synchronised and the pipelined one)."""
    groups = defaultdict(list)
    for r in rows:
        groups[_key(r)].append(r)
    rounds = _several_rounds(rows)
    lines = ['| device | graph | fan-out | batch | amp | variant | workers | '
             'step ms | pipelined step ms | loader ms | step / model-only | '
             'pipelined / model-only | speed-up vs pyg | sampled edges/s | '
             'peak MB | transient MB |',
             '|' + '---|' * 16]
    for key, rs in groups.items():
        base = sorted((r for r in rs if _label(r) == baseline),
                      key=lambda r: int(r['num_workers']))
        base_ms = float(base[-1]['step_ms']) if base else None
        base_w = base[-1]['num_workers'] if base else None
        for r in rs:
            ms = float(r['step_ms'])
            ratio = f'{base_ms / ms:.2f}x (w={base_w})' if base_ms else '-'
            lines.append(
                f"| {r['device']} | {r['graph']} | {r['fanout']} | "
                f"{r['batch_size']} | {r['amp']} | {_label(r)}"
                f"{' (round ' + _round(r) + ')' if rounds else ''} | "
                f"{r['num_workers']} | {ms:.3f} | "
                f"{_f(r.get('pipelined_step_ms'), '.3f')} | "
                f"{_f(r['loader_ms'], '.3f')} | "
                f"{_over(r, 'step_ms', 'model_ms')} | "
                f"{_over(r, 'pipelined_step_ms', 'pipelined_model_ms')} | "
                f"{ratio} | {_f(r['sampled_edges_per_s'], '.3g')} "
                f"| {_f(r['peak_mem_mb'], '.0f')} | "
                f"{_f(r['transient_mem_mb'], '.0f')} |")
    return '\n'.join(lines) + '\n'


def plot(rows: List[Dict], path: str) -> bool:
    """Bar chart of batches/s per setting and variant (the median over
    rounds); False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    settings = sorted({(r['graph'], r['fanout'], r['batch_size'], r['amp'])
                       for r in rows})
    variants = sorted({(_label(r), r['num_workers']) for r in rows})
    fig, ax = plt.subplots(figsize=(max(6, 2.5 * len(settings)), 4))
    width = 0.8 / max(1, len(variants))
    for i, (variant, nw) in enumerate(variants):
        ys = []
        for s in settings:
            match = [1e3 / float(r['step_ms']) for r in rows
                     if (r['graph'], r['fanout'], r['batch_size'],
                         r['amp']) == s
                     and (_label(r), r['num_workers']) == (variant, nw)]
            ys.append(statistics.median(match) if match else 0.0)
        ax.bar([j + i * width for j in range(len(settings))], ys, width,
               label=f'{variant} ({nw} workers)')
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(settings))])
    ax.set_xticklabels([f'{g}\n[{f}] b={b} amp={a}'
                        for g, f, b, a in settings], fontsize=7)
    ax.set_ylabel('steps / s (higher is better)')
    ax.set_title(rows[0]['device'] if rows else '')
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_report(csv_path: str, md_path: str, png_path: str = None) -> str:
    rows = read_rows(csv_path)
    text = (f'<!-- generated by `python -m pyg_fusesample.bench report` from '
            f'{csv_path.split("/")[-1]}; do not edit -->\n\n' + markdown(rows))
    summary = rounds_summary(rows)
    if summary:
        text += ('\nMedian (min-max) over the interleaved rounds, each row '
                 'against the floor of its own round:\n\n' + summary)
    with open(md_path, 'w') as f:
        f.write(text)
    if png_path:
        plot(rows, png_path)
    return text
