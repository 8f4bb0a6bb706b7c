"""The shortlist: which SpMM kernels are worth probing for a graph, F, device.

Probing is only cheap if the list is short, so rules on the input features
(degree quantiles and skew of the *full* graph, F, device) cut it first.
The hub thresholds are derived here, from the full graph's statistics, and
nowhere else: the probe subgraph and the final call use the same number.
(AutoSAGE re-derived them on its shrunken probe sample, whose p99 is not the
graph's, and then applied them to the full graph.)
"""
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch

from ..ops.spmm import HUB_VARIANTS, SPMM_VARIANTS

BASELINE = 'cusparse'  # torch.sparse.mm: the guardrail's first reference
SCATTER = 'scatter'    # PyG's default path: gather x[col], scale, add into rows
CAST = 'fp32:'         # 'fp32:<variant>': a 16-bit input through the float32
                       # decision's kernel, cast back (a reference for 16 bits)
KERNELS = {'cpu': ('cpu',), 'cuda': SPMM_VARIANTS}
VARIANTS = frozenset((BASELINE, SCATTER) + KERNELS['cpu'] + KERNELS['cuda'])
LOW_PRECISION = (torch.float16, torch.bfloat16)

WARP = 32
SUBWARP_MAX_F = 64   # several rows per warp pay off only for narrow features
HUB_MIN_SKEW = 8.0   # max/mean degree below this: no row is worth a block


@dataclass(frozen=True)
class Candidate:
    variant: str
    params: Dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Unique name in timings and telemetry, e.g. ``hub@128``, ``hub@128@8``
        (8 lanes), ``hub@128@index`` (light rows in index order)."""
        return self.variant + ''.join(
            '@index' if k == 'index_order' else f'@{v}'
            for k, v in self.params.items())


def known_variant(variant) -> bool:
    r"""A variant a decision may name: a kernel, a reference, or a kernel
    behind the float32 cast."""
    if isinstance(variant, str) and variant.startswith(CAST):
        variant = variant[len(CAST):]
    return variant in VARIANTS


def references(fp32: Optional[Candidate] = None) -> List[Candidate]:
    r"""What every kernel must beat (by the guardrail's margin), and what is
    chosen when none does: ``torch.sparse.mm`` (cuSPARSE), PyG's own
    scatter path and, for a 16-bit input, :obj:`fp32` -- the float32
    decision for the same graph and width -- with casts around it, so a
    16-bit decision is never slower than any of them."""
    refs = [Candidate(BASELINE), Candidate(SCATTER)]
    if fp32 is not None:  # (a float32 decision never names a cast itself)
        refs.append(Candidate(CAST + fp32.variant, dict(fp32.params)))
    return refs


def is_reference(c: Candidate) -> bool:
    return c.variant in (BASELINE, SCATTER) or c.variant.startswith(CAST)


def pays_setup(c: Candidate) -> bool:
    r"""Whether the candidate's first call on a graph pays a one-time set-up
    (the hub kernels' row split, 40 ms once on the hub-skewed graph on an
    H200; cuSPARSE's descriptors and buffer; a cast around either), so that
    its first call says nothing about its speed. The others (the row-per-warp
    kernels, PyG's scatter path, the CPU kernel) are judged by it."""
    return c.variant == BASELINE or c.variant in HUB_VARIANTS or \
        c.variant.startswith(CAST)


# One warp walks a row's non-zeros in turn in the row-per-warp kernels
# ('warp', and 'subwarp', which gives a row fewer lanes still), so none of
# them can finish before its heaviest row does. Measured on an H200 (the
# hub-skewed GCN graph, whose heaviest row has 299k non-zeros): 'warp' took
# 35.1 ms a call at F=32 in float32, i.e. 273k feature elements a
# millisecond for one warp (224k-268k at F=64 and 256), and 11.7 ms in
# bfloat16, 818k: 16-bit rows go ~3x faster a warp. Each rate is set well
# above its measurement (2.6x for float32 -- float64 goes no faster -- and
# 2.4x for 16 bits), so the bound never passes over a kernel that could be
# fast.
WARP_ELEMENTS_PER_MS_16BIT = 2_000_000
WARP_ELEMENTS_PER_MS_32BIT = 700_000
ROW_PER_WARP = ('warp', 'subwarp')


def heaviest_row_ms(c: Candidate, stats: Dict[str, float], F: int,
                    dtype: torch.dtype) -> float:
    r"""A lower bound on ``c``'s time for ``F`` features of ``dtype`` on a
    graph whose heaviest row has ``stats['max_degree']`` non-zeros: 0 but
    for the row-per-warp kernels. On the hub-skewed graph (F=32, float32,
    H200) the single probe calls of those took 35-138 ms each, 0.385 s of a
    0.51 s decision in which cuSPARSE took 0.47 ms."""
    if c.variant not in ROW_PER_WARP:
        return 0.0
    rate = WARP_ELEMENTS_PER_MS_16BIT if dtype.itemsize == 2 else \
        WARP_ELEMENTS_PER_MS_32BIT
    return float(stats['max_degree']) * F / rate


def hub_thresholds(stats: Dict[str, float]) -> List[int]:
    """Degrees above which a row gets a thread block: the full graph's p99
    degree and 32 x its mean degree, each at least a warp, kept only when
    some row exceeds it (else the hub path is just the warp path)."""
    ts = {max(WARP, math.ceil(stats['p99'])),
          max(WARP, WARP * math.ceil(stats['mean_degree']))}
    return sorted(t for t in ts if t < stats['max_degree'])


def packed_hub_thresholds(stats: Dict[str, float]) -> List[int]:
    """For 'hub-subwarp', whose light rows share a warp four to one: lower
    thresholds than :func:`hub_thresholds` (a long row on eight lanes holds
    up its three neighbours), the p90 degree and 4 x the mean degree, each at
    least a subwarp's worth, kept only when some row exceeds it."""
    ts = {max(8, math.ceil(stats['p90'])),
          max(8, 4 * math.ceil(stats['mean_degree']))}
    return sorted(t for t in ts if t < stats['max_degree'])


def shortlist(stats: Dict[str, float], F: int, dtype: torch.dtype,
              device_type: str) -> List[Candidate]:
    """Kernels to probe against the baseline (which is always probed).
    ``dtype`` is part of the cache key, not of these rules: the kernels tile
    features by elements and pick vector loads themselves."""
    if device_type != 'cuda':
        return [Candidate(v) for v in KERNELS.get(device_type, ())]
    # Lane layouts per row kernel: the default (4 vectors per lane; 2 for
    # 16-bit types and for float32 in the hub-split kernels; the rest of the
    # lanes on non-zeros), one vector per lane (wider coalesced rows, fewer
    # non-zeros in flight) and, when there is room, the one between (on the
    # H200 it won bf16 F=128, 11.7 vs 12.9 ms on the products-like graph,
    # call39, when bf16 lanes held 4 vectors). Which wins depends on F, the
    # dtype and the degree profile, so it is probed rather than guessed.
    #
    # A layout of one vector a lane on fewer than 32 lanes also runs packed
    # (the variant's rows get just those lanes, 32 / lanes a warp): a warp a
    # row left slots idle on short rows (call117, bf16: hub-skewed F=128
    # 1.12x, Erdos-Renyi F=64 1.21x faster packed) but not on Reddit-like's
    # long rows (0.90-0.93x), so both are probed.
    packed = _packed_one_vector(F, dtype)
    out = [Candidate('warp', l) for l in _lane_layouts(F, dtype, hub_split=False)]
    if F <= SUBWARP_MAX_F:
        out.append(Candidate('subwarp'))
    out += [Candidate('subwarp', l) for l in packed]
    if stats['skew'] >= HUB_MIN_SKEW:
        out += [Candidate('hub', {'hub_threshold': t, **l})
                for t in hub_thresholds(stats)
                for l in _lane_layouts(F, dtype, hub_split=True)]
        if F <= SUBWARP_MAX_F:  # short rows packed, long ones to blocks
            out += [Candidate('hub-subwarp', {'hub_threshold': t})
                    for t in packed_hub_thresholds(stats)]
        out += [Candidate('hub-subwarp', {'hub_threshold': t, **l})
                for t in hub_thresholds(stats) for l in packed]
    return out


def index_order_twin(c: Optional[Candidate]) -> Optional[Candidate]:
    """The same hub-split kernel with its light rows in index order (param
    ``index_order=1``), None for other candidates."""
    if c is None or c.variant not in HUB_VARIANTS or c.params.get('index_order'):
        return None
    return Candidate(c.variant, {**c.params, 'index_order': 1})


def without_order(c: Candidate) -> str:
    """The label of ``c``'s kernel whatever its light-row order (a twin and
    its kernel share it)."""
    return Candidate(c.variant, {k: v for k, v in c.params.items()
                                 if k != 'index_order'}).label


def _vectors(F: int, dtype: torch.dtype) -> int:
    # 16-byte vectors per row when F allows them (the kernel's rule).
    per = 16 // torch.empty((), dtype=dtype).element_size()
    return F // per if F % per == 0 else F


def _lane_layouts(F: int, dtype: torch.dtype, hub_split: bool) -> List[Dict]:
    lanes = [{}]
    default = _default_lanes(F, dtype, hub_split)
    one_per_lane = _one_vector_per_lane(F, dtype)
    if 2 * default < one_per_lane:
        lanes.append({'lanes': 2 * default})
    if one_per_lane != default:
        lanes.append({'lanes': one_per_lane})
    return lanes


def _packed_one_vector(F: int, dtype: torch.dtype) -> List[Dict]:
    # The one-vector layout as packed rows: rows of 8 or 16 vectors (the
    # kernel runs rows of >= 8 vectors one vector a lane; 32 lanes is a warp).
    lanes = _one_vector_per_lane(F, dtype)
    if 8 <= lanes < WARP and lanes == _vectors(F, dtype):
        return [{'lanes': lanes}]
    return []


def _vectors_per_lane(F: int, dtype: torch.dtype, hub_split: bool) -> int:
    # The kernel's Tuning::vecs: on the 16-byte vector path, 2 for a 16-bit
    # type, and for float32 in the hub-split kernels; else 4.
    size = torch.empty((), dtype=dtype).element_size()
    if F % (16 // size) != 0:  # scalar path (the kernel's rule, as _vectors)
        return 4
    return 2 if size == 2 or (size == 4 and hub_split) else 4


def _default_lanes(F: int, dtype: torch.dtype, hub_split: bool = False) -> int:
    v, n, k = 1, _vectors(F, dtype), _vectors_per_lane(F, dtype, hub_split)
    while v < WARP and v * k < n:
        v <<= 1
    return v


def _one_vector_per_lane(F: int, dtype: torch.dtype) -> int:
    v, n = 1, _vectors(F, dtype)
    while v < WARP and v < n:
        v <<= 1
    return v


def forced(name: str, stats: Dict[str, float], device_type: str) -> Candidate:
    """The candidate ``FUSESAMPLE_AUTOTUNE_FORCE`` names (``hub:<t>`` sets
    the threshold; plain ``hub`` takes the full graph's first one; likewise
    ``hub-subwarp``)."""
    variant, _, arg = name.partition(':')
    allowed = (BASELINE, SCATTER) + KERNELS.get(device_type, ())
    if variant not in allowed or (arg and variant not in HUB_VARIANTS):
        raise ValueError(
            f'FUSESAMPLE_AUTOTUNE_FORCE={name!r} names no kernel on '
            f'{device_type}: choose from {allowed} (or hub:<threshold>, '
            f'hub-subwarp:<threshold>)')
    if variant not in HUB_VARIANTS:
        return Candidate(variant)
    derived = (hub_thresholds if variant == 'hub' else packed_hub_thresholds)
    try:
        t = int(arg) if arg else (derived(stats) or [max(
            WARP, math.ceil(stats['p99']))])[0]
    except ValueError:
        raise ValueError(f'FUSESAMPLE_AUTOTUNE_FORCE={name!r}: the hub '
                         f'threshold must be an integer') from None
    return Candidate(variant, {'hub_threshold': t})
