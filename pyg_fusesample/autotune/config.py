"""The scheduler's environment toggles, read at call time.

Read on every *memo miss* (never on a memo hit, which must stay a dict
lookup), so tests can monkeypatch them and a process can change them between
graphs. A (graph, F, dtype, op, reduce) already decided in this process keeps
its decision; :func:`pyg_fusesample.autotune.forget` drops it.

``FUSESAMPLE_AUTOTUNE_BUDGET_MS``
    total probe time per decision, ms (default 200)
``FUSESAMPLE_AUTOTUNE_ALPHA``
    guardrail margin: a kernel is used only if ``ms <= alpha * ref_ms`` for
    cuSPARSE and PyG's scatter path (default 0.95); against the float32
    kernel with casts (16-bit inputs) it may take up to 1.05x that kernel's
    time (``scheduler.CAST_MARGIN``)
``FUSESAMPLE_AUTOTUNE_CACHE``
    decision file (default ``~/.cache/pyg_fusesample/autotune.json``;
    ``off``/``0``/empty: memo only, no file)
``FUSESAMPLE_AUTOTUNE_REPLAY_ONLY=1``
    never probe: a key missing from the file is an error (reproducible runs)
``FUSESAMPLE_AUTOTUNE_FORCE``
    ``cusparse``, ``cpu``, ``warp``, ``subwarp``, ``hub`` or
    ``hub:<threshold>``: no probe, no file entry
``FUSESAMPLE_AUTOTUNE_TELEMETRY``
    JSONL file, one line per probe (default off)
"""
import os
from dataclasses import dataclass
from typing import Optional

PREFIX = 'FUSESAMPLE_AUTOTUNE_'
DEFAULT_CACHE = os.path.join('~', '.cache', 'pyg_fusesample', 'autotune.json')
_OFF = ('', '0', 'off', 'none', 'false')


@dataclass(frozen=True)
class Settings:
    budget_ms: float
    alpha: float
    cache_path: Optional[str]
    replay_only: bool
    force: Optional[str]
    telemetry_path: Optional[str]


def _positive(name: str, default: float) -> float:
    raw = os.environ.get(PREFIX + name)
    try:
        value = float(raw) if raw is not None else default
    except ValueError:
        value = float('nan')
    if not value > 0:  # also rejects nan
        raise ValueError(f'{PREFIX}{name}={raw!r}: expected a positive number')
    return value


def _path(name: str, default: Optional[str]) -> Optional[str]:
    raw = os.environ.get(PREFIX + name, default)
    if raw is None or raw.strip().lower() in _OFF:
        return None
    return os.path.expanduser(raw)


def read() -> Settings:
    force = os.environ.get(PREFIX + 'FORCE', '').strip()
    return Settings(
        budget_ms=_positive('BUDGET_MS', 200.0),
        alpha=_positive('ALPHA', 0.95),
        cache_path=_path('CACHE', DEFAULT_CACHE),
        replay_only=os.environ.get(PREFIX + 'REPLAY_ONLY', '').strip().lower()
        not in _OFF,
        force=force or None,
        telemetry_path=_path('TELEMETRY', None),
    )
