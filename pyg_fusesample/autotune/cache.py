"""Persistent decisions: the key, the JSON file, the JSONL probe log.

Why a file: a probe costs tens of milliseconds per (graph, F, dtype, op), and
its answer changes only when the hardware, the software stack or the graph
does, so the key names exactly those. Why so defensive: an entry picks which
kernel runs, so a stale, foreign or half-written file must never pick it:
writes replace the file atomically (temp file + ``os.replace``), loads check
the schema and drop what they do not recognise (with a warning), and a file
that is not ours is never overwritten.

Schema (version 1)::

    {"schema": "pyg_fusesample.autotune", "version": 1,
     "entries": {KEY: {"key": {field: value}, "variant": "hub",
                       "params": {"hub_threshold": 128}, "source": "probe",
                       "timings": {"cusparse": 1.9, "warp": 1.7, ...},
                       "alpha": 0.95, "created": 1718000000.0}}}

``KEY`` is ``"|".join(f"{name}={value}")`` over :data:`KEY_FIELDS` and must
match the entry's ``key`` object (a hand-edited mismatch is not trusted).
"""
import ctypes
import functools
import hashlib
import json
import os
import warnings
from typing import Dict, Iterable, Tuple

import torch

from .._version import __version__
from ..environment import device_name, versions
from ..files import replaced_atomically
from ..ops.spmm import HUB_VARIANTS
from .candidates import known_variant

SCHEMA = 'pyg_fusesample.autotune'
VERSION = 1
KEY_FIELDS = ('op', 'reduce', 'F', 'dtype', 'device', 'driver', 'cuda',
              'torch', 'lib', 'graph')
SIGNATURE_SAMPLES = 64


def structure_cache(graph) -> Dict:
    """The part of ``graph._cache`` that ``CSRGraph.with_value`` shares:
    signature and decisions depend on the structure, not the edge values."""
    return graph._cache.setdefault('structure', {})


def graph_signature(graph) -> str:
    """Identifies a graph across processes without hashing all of it: rows,
    cols, nnz, index dtype, the p50/p90/p99/max degree of ``stats()``, and a
    blake2b of ``rowptr`` at 65 and ``col`` at 64 fixed, evenly spaced
    positions. Two host syncs, once per graph structure (memoised)."""
    memo = structure_cache(graph)
    if 'signature' not in memo:
        s, n, nnz = graph.stats(), graph.num_rows, graph.nnz
        k = SIGNATURE_SAMPLES
        at_row = torch.tensor([i * n // k for i in range(k + 1)])
        at_col = torch.tensor([i * nnz // k for i in range(k)] if nnz else [],
                              dtype=torch.long)
        sample = torch.cat([graph.rowptr[at_row.to(graph.device)].long(),
                            graph.col[at_col.to(graph.device)].long()])
        digest = hashlib.blake2b(sample.cpu().numpy().tobytes(),
                                 digest_size=8).hexdigest()
        memo['signature'] = (
            f"{n}x{graph.num_cols}:nnz={nnz}:{str(graph.col.dtype)[6:]}:"
            f"deg={s['p50']:g}/{s['p90']:g}/{s['p99']:g}/{s['max_degree']:g}"
            f":{digest}")
    return memo['signature']


def _driver_version() -> str:
    """The CUDA driver (torch does not report it): ``cuDriverGetVersion``."""
    try:
        lib = ctypes.CDLL('nvcuda.dll' if os.name == 'nt' else 'libcuda.so.1')
        v = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            return f'{v.value // 1000}.{v.value % 1000 // 10}'
    except (OSError, AttributeError):
        pass
    return ''


@functools.lru_cache(maxsize=None)
def environment(device: torch.device) -> Tuple[Tuple[str, str], ...]:
    """Device name and software versions (once per device and process)."""
    name = device_name(device)
    if device.type == 'cuda':
        major, minor = torch.cuda.get_device_capability(device)
        name = f'{name} (sm_{major}{minor})'
    v = versions()
    return (('device', name),
            ('driver', _driver_version() if device.type == 'cuda' else ''),
            ('cuda', v['cuda']), ('torch', v['torch']), ('lib', __version__))


def key_string(fields: Dict) -> str:
    return '|'.join(f'{name}={fields[name]}' for name in KEY_FIELDS)


def make_key(graph, F: int, dtype: torch.dtype, op: str,
             reduce: str) -> Tuple[str, Dict]:
    fields = dict(op=op, reduce=reduce, F=int(F), dtype=str(dtype)[6:],
                  graph=graph_signature(graph))
    fields.update(environment(graph.device))
    return key_string(fields), fields


# What an entry's params may hold (what scheduler.dispatch passes to the
# kernel), and which values each takes.
PARAMS = {'hub_threshold': lambda v: v >= 0,
          'lanes': lambda v: v in (0, 1, 2, 4, 8, 16, 32),
          'index_order': lambda v: v in (0, 1)}


def _time(v) -> bool:
    # A probe's time in ms (NaN compares false), or None: it did not run.
    return v is None or (isinstance(v, (int, float))
                         and not isinstance(v, bool) and v >= 0)


def _fault(key: str, e) -> str:
    """Why entry :obj:`e` under :obj:`key` must not be replayed ('' when it
    may): a truncated or hand-edited entry never picks a kernel."""
    if not isinstance(e, dict):
        return f'a {type(e).__name__}, not an object'
    if not known_variant(e.get('variant')):
        return f'unknown variant {e.get("variant")!r}'
    params = e.get('params')
    if not isinstance(params, dict):
        return "no 'params' object"
    for name, v in params.items():
        if name not in PARAMS:
            return f'unknown param {name!r}'
        if type(v) is not int or not PARAMS[name](v):
            return f'param {name}={v!r} is not a value the kernels take'
    hub = e['variant'].split(':')[-1] in HUB_VARIANTS
    if hub != ('hub_threshold' in params):
        return (f"variant {e['variant']!r} with params {params}: "
                f"'hub_threshold' goes with (and only with) a hub variant")
    timings = e.get('timings', {})
    if not isinstance(timings, dict) or not all(
            isinstance(k, str) and _time(v)
            for k, v in timings.items()):
        return "'timings' is not an object of non-negative times"
    if not isinstance(e.get('key'), dict) or set(e['key']) != set(KEY_FIELDS):
        return f"'key' does not name the fields {KEY_FIELDS}"
    if key_string(e['key']) != key:
        return "'key' does not match the entry's name"
    return ''


def load(path: str, quiet: bool = False) -> Tuple[Dict[str, Dict], bool]:
    """``(entries, ours)``: the valid entries, and whether the file may be
    (re)written -- a missing, corrupt or older-version file may, a file of
    another schema (someone else's) may not."""
    def warn(msg):
        if not quiet:
            warnings.warn(f'autotune cache {path}: {msg}', RuntimeWarning,
                          stacklevel=4)
    try:
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}, True
    except (ValueError, RecursionError) as e:
        # JSONDecodeError (a truncated file), UnicodeDecodeError, nesting
        # deeper than the parser goes
        warn(f'not valid JSON ({type(e).__name__}: {e}); ignored, will be '
             f'rewritten')
        return {}, True
    except OSError as e:
        warn(f'unreadable ({e}); ignored')
        return {}, False
    if not isinstance(data, dict) or data.get('schema') != SCHEMA:
        warn(f'not a {SCHEMA} file; ignored and left untouched (point '
             f'FUSESAMPLE_AUTOTUNE_CACHE elsewhere to persist decisions)')
        return {}, False
    if data.get('version') != VERSION or not isinstance(
            data.get('entries'), dict):
        warn(f'schema version {data.get("version")!r} (this build reads '
             f'{VERSION}) or no entries; ignored, will be rewritten')
        return {}, True
    faults = {k: _fault(k, e) for k, e in data['entries'].items()}
    bad = [k for k, why in faults.items() if why]
    if bad:
        warn(f'{len(bad)} malformed entries ignored (not replayed; they are '
             f'dropped when the file is next written), e.g. {bad[0]!r}: '
             f'{faults[bad[0]]}')
    return {k: e for k, e in data['entries'].items() if not faults[k]}, True


def store(path: str, key: str, entry: Dict) -> bool:
    """Adds one entry; re-reads the file first so entries other processes
    wrote meanwhile survive (a race between two writers can still drop one
    of them: a cache miss later, never a wrong entry). False: not ours."""
    entries, ours = load(path, quiet=True)
    if not ours:
        return False
    entries[key] = entry
    write_atomic(path, {'schema': SCHEMA, 'version': VERSION,
                        'entries': entries})
    return True


def write_atomic(path: str, data: Dict) -> None:
    """Readers see the old file or the new one, never a partial one."""
    with replaced_atomically(path) as tmp:
        with open(tmp, 'w', encoding='utf-8') as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())


def log_probes(path: str, records: Iterable[Dict]) -> None:
    """Appends one JSON line per probe, in a single write."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'a', encoding='utf-8') as f:
        f.write(''.join(json.dumps(r, sort_keys=True) + '\n'
                        for r in records))
