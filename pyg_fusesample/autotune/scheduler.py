"""Choose the SpMM kernel per (graph, F, dtype, op, reduce).

Sources in cost order: the per-graph memo (a dict lookup in
``graph._cache``: no file read, no hashing, no host sync), the decision file
(read once per memo miss), then a probe: the shortlist of
:mod:`.candidates` and the baseline ``torch.sparse.mm`` are timed on a row
sample of the graph, and a kernel is chosen only if it beats the baseline by
the guardrail margin ``alpha``; a verdict close to that margin, or kernels
close to each other, are re-timed on the whole graph (those kernels and the
baseline), which then decides.
"""
import contextlib
import math
import statistics
import time
import warnings
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable, Dict, List, Optional

import torch
from torch import Tensor

from ..ops.spmm import (row_scale, spmm, spmm_cusparse, spmm_scatter,
                        spmm_setup, transposed)
from ..sparse import CSRGraph
from . import cache, candidates, config
from .candidates import (BASELINE, CAST, HUB_VARIANTS, LOW_PRECISION, SCATTER,
                         Candidate)

OPS = ('spmm',)
REDUCES = ('sum', 'mean')
PROBE_NNZ = {'cuda': 1 << 22, 'cpu': 1 << 16}  # probe subgraph size
WARMUP, MAX_REPS = 2, 7
# The whole-graph re-timings (_confirm) make one untimed call, not WARMUP:
# the probe has run every candidate already (lazy init, module load,
# library handles), what is left is per-graph set-up (the hub kernels' row
# split, the output's allocation). A warm-up call there costs a whole call:
# 30 ms on products-like at F=256 (H200), whose confirm stages took 0.29 s
# (float32) and 0.34 s (bfloat16) at three calls a candidate.
WARMUP_FULL = 1
# ... and a kernel of the shortlist none: its set-up (the hub variants' row
# split) is made before it is timed (_prepare), and a first call over the
# whole graph then costs what every call costs; the references, timed first,
# have allocated the output. Products-like F=256 (H200/H100), whose whole-
# graph calls take 15-50 ms: up to six kernels were re-timed at two calls
# each, the 16-bit first calls took 0.53-0.60 s against the 0.5 s asked.
WARMUP_RIVAL = 0
# A 16-bit kernel is chosen over the float32 kernel with casts unless that
# is more than 5% faster: where the two timed within a few percent the cast
# path's layer took longer than its timings said, and longer than the
# float32 layer itself, while a native 16-bit kernel's layer did not
# (products-like, F=16, fp16, forward + backward: with alpha as the margin
# the cast path won and the layer took 1.02-1.04x its float32 time, H100
# and H200; at parity it won again and took 1.05x, H200, where a native
# kernel had taken 0.97-0.998x).
CAST_MARGIN = 1.05
# A probe verdict this close to the guardrail (best kernel / (alpha x
# cuSPARSE) inside the band) is re-timed on the whole graph: on hub-skewed
# graphs the row sample's cache behaviour misranked the two by 15-30%, and
# on the Reddit-like graph (F=64, float32) a probe at 1.52 hid a kernel that
# took 0.67x cuSPARSE's time on the whole graph (call41 vs call33).
CONFIRM_BAND = (0.8, 1.6)
# Kernels within this factor of the probe's best are re-timed on the whole
# graph too (at most MAX_RIVALS): the sample misranked 'hub' and
# 'hub-subwarp' on the Reddit-like graph by 14%, and (call112, H200) 'hub'
# at 32 lanes and at the automatic layout on its bfloat16 F=256 by 28%: 0.71
# against 0.90 ms on the sample, 9.15 against 8.37 on the whole graph.
RIVAL_BAND, MAX_RIVALS = 1.3, 3
# A probe whose second call (the first pays one-time set-up: 40 ms once
# for a hub kernel on the hub-skewed graph, H200) is over CUT_FACTOR x the
# best time so far plus CUT_SLACK_MS cannot win or be a rival: it is not
# timed again. On that graph the row-per-warp kernels took 33-150 ms a call
# against 0.3-0.8 ms for the hub kernels, and their warm-up and repeats
# were most of a 2 s decision. A candidate without such set-up
# (candidates.pays_setup) is judged by its first call already: on an H100
# (hub-skewed graph, F=64, float32) the two calls of each row-per-warp
# kernel that lost by 60-300x still summed to ~0.8 of a 1.0 s decision.
CUT_FACTOR, CUT_SLACK_MS = 4.0, 5.0
_MEMO = 'autotune'
# The memo key's tail for a float32 reference decision (_float32_decision).
_REFERENCE = 'reference'


@dataclass(frozen=True)
class Decision:
    """``source``: 'memo', 'cache', 'probe' (a kernel won), 'confirm' (a
    kernel won on the whole graph after a close probe), 'guardrail' (no
    kernel beat alpha x baseline: cuSPARSE) or 'forced'. ``timings``: probe
    medians in ms by candidate label (None: the candidate failed or was not
    timed); labels ending in ``@full`` were timed on the whole graph."""
    variant: str
    params: Dict[str, int] = field(default_factory=dict)
    source: str = 'probe'
    timings: Dict[str, Optional[float]] = field(default_factory=dict)

    def __post_init__(self):  # read-only views: the memo hands out one object
        for name in ('params', 'timings'):
            object.__setattr__(self, name,
                               MappingProxyType(dict(getattr(self, name))))


class ReplayMiss(LookupError):
    """Replay-only mode met a key the decision file does not hold."""


def choose(graph: CSRGraph, F: int, dtype: torch.dtype, op: str = 'spmm',
           reduce: str = 'sum', x: Optional[Tensor] = None) -> Decision:
    """The kernel for ``op`` on ``graph`` with ``F`` features of ``dtype``.
    ``x`` (optional) is used as the probe input instead of random features.
    A repeated call returns the memoised decision (``source='memo'``)."""
    memo = _memo(graph)
    hit = memo.get((op, reduce, F, dtype))
    if hit is not None:
        return hit
    decision = _decide(graph, int(F), dtype, op, reduce, x)
    memo[(op, reduce, F, dtype)] = replace(decision, source='memo')
    return decision


def _memo(graph: CSRGraph) -> Dict:
    memo = graph._cache.get(_MEMO)
    if memo is None:  # shared with with_value() copies: structure decides
        memo = graph._cache[_MEMO] = cache.structure_cache(graph).setdefault(
            _MEMO, {})
    return memo


def forget(graph: CSRGraph, F: Optional[int] = None,
           dtype: Optional[torch.dtype] = None, op: str = 'spmm',
           reduce: str = 'sum') -> None:
    """Drops the graph's memoised decisions (the file keeps its entries):
    all of them, or with ``F`` and/or ``dtype`` those of that width and/or
    dtype (of ``op``, ``reduce``), so that the next :func:`choose` of them
    decides again."""
    if F is None and dtype is None:
        graph._cache.pop(_MEMO, None)
        cache.structure_cache(graph).pop(_MEMO, None)
        return
    # (the memo lives in the structure cache, shared with value copies)
    memo = cache.structure_cache(graph).get(_MEMO, {})
    for key in [k for k in memo if k[:2] == (op, reduce)
                and F in (None, k[2]) and dtype in (None, k[3])]:
        del memo[key]


def dispatch(variant: str, params: Dict[str, int], graph: CSRGraph, x: Tensor,
             reduce: str) -> Tensor:
    if variant == BASELINE:
        return spmm_cusparse(graph, x, reduce)
    if variant == SCATTER:
        return spmm_scatter(graph, x, reduce)
    if variant.startswith(CAST):  # the float32 decision's kernel, cast back
        return dispatch(variant[len(CAST):], params,
                        valued_as(graph, torch.float32), x.float(),
                        reduce).to(x.dtype)
    return spmm(graph, x, reduce, variant=variant,
                hub_threshold=params.get('hub_threshold', -1),
                lanes=params.get('lanes', 0), light_order=_light_order(params))


def _light_order(params) -> str:
    return 'index' if params.get('index_order') else 'length'


def _prepare(c: Candidate, graph: CSRGraph) -> None:
    # A kernel's one-time set-up on ``graph`` (the hub variants' row split,
    # cached in the graph), so that its first call there is a timed one.
    spmm_setup(graph, c.variant, c.params.get('hub_threshold', -1),
               _light_order(c.params))


def valued_as(graph: CSRGraph, dtype: torch.dtype) -> CSRGraph:
    """:obj:`graph` with its edge values in :obj:`dtype`, which the kernels
    require of them (the features' dtype): the graph itself when they
    already are (or it has none), else a copy with cast values, made once per
    graph and dtype. Learnable values are left as they are (a cast copy
    would cut their gradient)."""
    v = graph.value
    if v is None or v.dtype == dtype or v.requires_grad:
        return graph
    key = ('valued_as', dtype)
    g = graph._cache.get(key)
    if g is None:
        g = graph._cache[key] = graph.with_value(v.to(dtype))
    return g


def run_spmm(graph: CSRGraph, x: Tensor, reduce: str = 'sum') -> Tensor:
    """``A @ x`` (``mean``: divided by row degree) with the chosen kernel;
    differentiable in ``x`` with :func:`run_spmm_grad` as its backward (and
    in learnable edge values through the kernel's own autograd). Edge
    values of another dtype than ``x`` are cast once (:func:`valued_as`)."""
    graph = valued_as(graph, x.dtype)
    d = choose(graph, x.size(-1), x.dtype, 'spmm', reduce, x=x)
    learnable = graph.value is not None and graph.value.requires_grad
    if x.requires_grad and not learnable and torch.is_grad_enabled():
        return _ScheduledSpMM.apply(x, graph, reduce, d)
    return dispatch(d.variant, d.params, graph, x, reduce)


def run_spmm_grad(graph: CSRGraph, grad: Tensor, reduce: str = 'sum') -> Tensor:
    """``A^T @ grad`` (the gradient of :func:`run_spmm` in ``x``), with the
    kernel chosen for the transposed graph (its own decision, memoised like
    the forward's)."""
    if reduce == 'mean':
        grad = grad * row_scale(graph, grad.dtype).unsqueeze(-1)
    graph = valued_as(graph, grad.dtype)  # (before transposing: cached there)
    return run_spmm(transposed(graph), grad.contiguous(), 'sum')


class _ScheduledSpMM(torch.autograd.Function):
    # Why not each kernel's own backward: a cuSPARSE decision's would be
    # torch.sparse's, which converts and sorts the CSR on every call (11 ms
    # of a 24.6 ms bf16 F=128 step on the hub-skewed graph, H200), and the
    # kernels' backward ran the transpose with 'warp' whatever its shape.
    @staticmethod
    def forward(ctx, x, graph, reduce, decision):
        ctx.graph, ctx.reduce = graph, reduce
        return dispatch(decision.variant, decision.params, graph, x, reduce)

    @staticmethod
    def backward(ctx, grad):
        return run_spmm_grad(ctx.graph, grad, ctx.reduce), None, None, None


def _decide(graph, F, dtype, op, reduce, x, confirm: bool = True) -> Decision:
    """The decision from the file or a probe; ``confirm=False``: the
    probe's verdict without the whole-graph re-timing, not stored in the
    file (a reference for a 16-bit decision, :func:`_float32_decision`)."""
    if op not in OPS or reduce not in REDUCES:
        raise ValueError(f'autotune: op {op!r} / reduce {reduce!r} not in '
                         f'{OPS} / {REDUCES}')
    s = config.read()
    if s.force:
        c = candidates.forced(s.force, graph.stats(), graph.device.type)
        return Decision(c.variant, dict(c.params), 'forced')
    key, fields = cache.make_key(graph, F, dtype, op, reduce)
    entry = cache.load(s.cache_path)[0].get(key) if s.cache_path else None
    if entry is not None:
        return Decision(entry['variant'], dict(entry['params']), 'cache',
                        dict(entry.get('timings', {})))
    if s.replay_only:
        raise ReplayMiss(
            f'autotune replay-only (FUSESAMPLE_AUTOTUNE_REPLAY_ONLY=1): no '
            f'decision for key {key!r} in {s.cache_path or "(cache off)"}. '
            f'Create it by running the same call once on this machine '
            f'without FUSESAMPLE_AUTOTUNE_REPLAY_ONLY (it probes and writes '
            f'the entry), e.g. pyg_fusesample.autotune.choose(graph, {F}, '
            f'{dtype}, {op!r}, {reduce!r}), and ship that file; or set '
            f'FUSESAMPLE_AUTOTUNE_FORCE.')
    decision, records = _probe(graph, F, dtype, reduce, x, s, confirm)
    try:  # a log or cache that cannot be written must not stop the SpMM
        if s.telemetry_path:
            cache.log_probes(s.telemetry_path,
                             [dict(r, key=key) for r in records])
        if s.cache_path and confirm:
            cache.store(s.cache_path, key, dict(
                key=fields, variant=decision.variant,
                params=dict(decision.params), source=decision.source,
                timings=dict(decision.timings), alpha=s.alpha,
                created=time.time()))
    except OSError as e:
        warnings.warn(f'autotune: telemetry/decision not written: {e}',
                      RuntimeWarning)
    return decision


def references(graph: CSRGraph, F: int, dtype: torch.dtype,
               reduce: str = 'sum') -> List[Candidate]:
    """The guardrail's references for (graph, F, dtype): cuSPARSE, PyG's
    scatter path and, for a 16-bit dtype, the float32 decision's kernel
    with casts (the float32 decision if there is one, else the float32
    probe's verdict: :func:`_float32_decision`)."""
    return candidates.references(
        _kernel(_float32_decision(graph, F, dtype, reduce)))


def _float32_decision(graph: CSRGraph, F: int, dtype: torch.dtype,
                      reduce: str) -> Optional[Decision]:
    """For a 16-bit ``dtype``, the float32 decision for the same graph,
    ``F`` and ``reduce`` (its kernel with casts is a reference); None for
    other dtypes. Where no float32 decision exists yet (memo, file), the
    float32 probe's verdict without its whole-graph re-timing, memoised as
    a reference only: a float32 call still makes its own full decision.
    That re-timing was ~0.19 s of a 0.59 s first bfloat16 decision on an
    H200 (products-like, F=256), and the reference needs only a good
    float32 kernel: a 16-bit kernel must also beat cuSPARSE and PyG's
    scatter path, and the cast path is re-timed on the whole graph."""
    if dtype not in LOW_PRECISION:
        return None
    g32 = valued_as(graph, torch.float32)
    memo = _memo(g32)
    decided = memo.get(('spmm', reduce, F, torch.float32))
    if decided is not None:
        return decided
    key = ('spmm', reduce, F, torch.float32, _REFERENCE)
    if key not in memo:
        memo[key] = _decide(g32, F, torch.float32, 'spmm', reduce, None,
                            confirm=False)
    return memo[key]


def _kernel(d: Optional[Decision]) -> Optional[Candidate]:
    return None if d is None else Candidate(d.variant, dict(d.params))


def _own_full_ms(d: Optional[Decision]) -> Optional[float]:
    """The whole-graph time of decision ``d``'s own kernel from when it was
    made (None: no decision, or its kernel was not timed there)."""
    return None if d is None else d.timings.get(_kernel(d).label + '@full')


def _probe(graph, F, dtype, reduce, x, s, confirm: bool = True):
    """Times baseline + shortlist on the probe subgraph; the guardrail.
    Without the caller's ``x`` the probe input is ``rand(num_cols, F)``:
    the subgraph keeps the full column space, so does its input."""
    dev = graph.device
    graph = valued_as(graph, dtype)  # (the kernels' requirement)
    fp32 = _float32_decision(graph, F, dtype, reduce)
    refs = candidates.references(_kernel(fp32))
    stats = graph.stats()  # (the probe keeps the heaviest row whole)
    shortlist = candidates.shortlist(stats, F, dtype, dev.type)
    sub = probe_subgraph(graph, PROBE_NNZ.get(dev.type, PROBE_NNZ['cpu']))
    if x is None or x.dtype != dtype:
        x = torch.rand(graph.num_cols, F, dtype=dtype, device=dev)
    # (+1 for the index-order twin of a hub-split winner, see below)
    twins = any(c.variant in HUB_VARIANTS for c in shortlist)
    budget = s.budget_ms / (len(shortlist) + len(refs) + twins)
    timings, errors = {}, {}
    ctx = torch.cuda.device(dev) if dev.type == 'cuda' else \
        contextlib.nullcontext()
    probed = refs + shortlist
    bounded = set()  # candidates whose heaviest row alone loses
    with ctx, torch.no_grad():
        best_ms = math.inf
        for c in probed:  # references first: they set the first cut-off
            cutoff = CUT_FACTOR * best_ms + CUT_SLACK_MS
            bound = candidates.heaviest_row_ms(c, stats, F, dtype)
            if bound > cutoff:
                timings[c.label] = None
                errors[c.label] = (f'not timed: its heaviest row alone takes '
                                   f'>= {bound:.1f} ms (cut-off {cutoff:.1f} '
                                   f'ms)')
                bounded.add(c.label)
                continue
            timings[c.label] = _timed(c, sub, x, reduce, budget, errors,
                                      c.label, cutoff=cutoff)
            if timings[c.label] is not None:
                best_ms = min(best_ms, timings[c.label])
        best = _fastest(shortlist, timings)
        # The hub-split kernels take their light rows by length; on some
        # inputs index order ran as fast or faster (call106: 16-bit rows of
        # the hub-skewed graph), so the best one's index-order twin is timed
        # too (one probe, not a second set of candidates).
        twin = candidates.index_order_twin(best)
        if twin is not None:
            shortlist = shortlist + [twin]
            probed = probed + [twin]
            timings[twin.label] = _timed(twin, sub, x, reduce, budget, errors,
                                         twin.label)
        if shortlist and all(timings[c.label] is None for c in shortlist) \
                and not all(c.label in bounded for c in shortlist):
            # Not a guardrail verdict: the kernels refused the input, and a
            # reference would be chosen silently.
            first = next(errors[c.label] for c in shortlist
                         if c.label in errors and c.label not in bounded)
            warnings.warn(f'autotune: no kernel of the shortlist ran on the '
                          f'probe (F={F}, {dtype}), the decision falls back '
                          f'to a reference: {first}', RuntimeWarning)
        ref = _fastest(refs, timings)  # the guardrail's reference
        base = timings[ref.label] if ref is not None else None
        limit = _limit(refs, timings, s)
        ran = [c for c in shortlist if timings[c.label] is not None]
        best = _fastest(ran, timings)
        if best is None and base is None:
            raise RuntimeError(f'autotune: no SpMM kernel ran on the probe: '
                               f'{errors}')
        lines = [(c, _line(c, timings[c.label], 'probe', limit,
                           errors.get(c.label), s, sub)) for c in probed]
        winner = best if best is not None and timings[best.label] <= limit \
            else None
        source = 'probe' if winner else 'guardrail'
        rivals = ([] if best is None else
                  _rivals(ran, timings, timings[best.label]))
        close = (best is not None  # (no reference time: limit is inf)
                 and CONFIRM_BAND[0] <= timings[best.label] / limit
                 <= CONFIRM_BAND[1])
        if confirm and sub is not graph and base is not None and (
                close or len(rivals) > 1):
            winner, source, ref = _confirm(graph, x, reduce, rivals, refs, ref,
                                           s, budget, timings, errors, lines,
                                           _own_full_ms(fp32))
    chosen = winner or ref
    records = [dict(r, chosen=c.label == chosen.label) for c, r in lines]
    return Decision(chosen.variant, dict(chosen.params), source,
                    timings), records


def _margin(ref: Candidate, s) -> float:
    """How much faster than reference ``ref`` a kernel must be to be used:
    ``alpha`` against cuSPARSE and PyG's scatter path (never slower than
    them, with room for the probe's noise); against the float32 kernel with
    casts, which does what a 16-bit kernel does plus two casts and twice the
    bytes, :data:`CAST_MARGIN` (> 1: the 16-bit kernel is kept unless the
    cast path is clearly faster)."""
    return CAST_MARGIN if ref.variant.startswith(candidates.CAST) else s.alpha


def _limit(refs: List[Candidate], times, s) -> float:
    """The guardrail: the time a kernel must not exceed (the tightest of
    ``margin x time`` over the references that ran; inf if none did)."""
    ran = [_margin(r, s) * times[r.label] for r in refs
           if times.get(r.label) is not None]
    return min(ran) if ran else math.inf


def _rivals(ran: List[Candidate], timings, best_ms: float) -> List[Candidate]:
    """The probe's kernels within RIVAL_BAND of its best, fastest first, for
    the whole-graph re-timing: at most MAX_RIVALS kernels, an index-order
    twin riding along with its kernel rather than taking a slot of its own
    (call113, hub-skewed bf16 F=64: a twin took the third slot and kept out
    the kernel that had won call112 on the whole graph)."""
    rivals, kernels = [], set()
    close = [c for c in ran if timings[c.label] <= RIVAL_BAND * best_ms]
    for c in sorted(close, key=lambda c: timings[c.label]):
        kernel = candidates.without_order(c)
        if kernel not in kernels:
            if len(kernels) == MAX_RIVALS:
                continue
            kernels.add(kernel)
        rivals.append(c)
    return rivals


def _fastest(cands: List[Candidate], ms) -> Optional[Candidate]:
    # The candidate with the smallest time in `ms` (by label; None: failed).
    ran = [c for c in cands if ms.get(c.label) is not None]
    return min(ran, key=lambda c: ms[c.label], default=None)


def _line(c: Candidate, ms: Optional[float], stage: str, limit: float,
          error: Optional[str], s, timed_on: CSRGraph) -> Dict:
    """One telemetry line (without 'chosen', set once the decision is
    made): the candidate, its time on ``timed_on`` and its guardrail verdict
    against ``limit`` (alpha x cuSPARSE on the same graph)."""
    if candidates.is_reference(c):
        verdict = 'baseline'
    else:
        verdict = 'error' if ms is None else 'pass' if ms <= limit else 'fail'
    return dict(candidate=c.variant, params=c.params, ms=ms, stage=stage,
                guardrail=verdict, error=error, alpha=s.alpha,
                probe_rows=timed_on.num_rows, probe_nnz=timed_on.nnz)


def _timed(c: Candidate, graph, x, reduce, budget, errors, label,
           cutoff: float = math.inf, warmup: int = WARMUP):
    try:
        return measure(c, graph, x.detach(), reduce, budget, cutoff,
                       warmup=warmup)
    except Exception as e:  # a kernel that cannot run loses
        errors[label] = f'{type(e).__name__}: {e}'
        return None


def _confirm(graph, x, reduce, rivals: List[Candidate],
             refs: List[Candidate], probe_ref: Candidate, s, budget: float,
             timings, errors, lines, fp32_full_ms: Optional[float] = None):
    """Times the references and the probe's close kernels (best first) on
    the whole graph and lets those times decide: ``(winner or None, source,
    the fastest reference)``. Adds ``label@full`` timings and telemetry
    lines (stage 'confirm'). A reference that lost the probe to another by
    over CUT_FACTOR is not timed again: the sample misranked candidates by
    15-30%, never 4x, and on the whole products-like graph (H100) PyG's
    scatter path took 90-300 ms a call, three calls of it most of a
    0.8-1.3 s decision. A 16-bit decision's float32 kernel with casts is
    timed last, and only if it could be chosen (:func:`_cast_not_needed`,
    from ``fp32_full_ms``, that kernel's own whole-graph time)."""
    ran = [timings[r.label] for r in refs if timings[r.label] is not None]
    refs = [r for r in refs if timings[r.label] is not None
            and timings[r.label] <= CUT_FACTOR * min(ran)]
    cast = [r for r in refs if r.variant.startswith(CAST)]  # (one at most)
    timed = [r for r in refs if r not in cast]
    full = {}

    def retime(c, warmup=WARMUP_FULL):
        label = c.label + '@full'
        full[c.label] = timings[label] = _timed(
            c, graph, x, reduce, budget, errors, label, warmup=warmup)
    for c in timed:
        retime(c)
    for c in rivals:
        _prepare(c, graph)
        retime(c, WARMUP_RIVAL)
    for c in cast:
        why = _cast_not_needed(rivals, timed, full, fp32_full_ms, s)
        if why is None:
            retime(c)
        else:
            full[c.label] = timings[c.label + '@full'] = None
            errors[c.label + '@full'] = why
    ref = _fastest(refs, full)
    best = rivals[0]
    if ref is None:  # no reference ran on the whole graph: the probe stands
        won = timings[best.label] <= _margin(probe_ref, s) * \
            timings[probe_ref.label]
        return (best, 'probe', probe_ref) if won else \
            (None, 'guardrail', probe_ref)
    limit = _limit(refs, full, s)
    lines += [(c, _line(c, full[c.label], 'confirm', limit,
                        errors.get(c.label + '@full'), s, graph))
              for c in refs + rivals]
    top = _winner(rivals, refs, full, s)
    return (top, 'confirm', ref) if top is not None else \
        (None, 'guardrail', ref)


def _winner(rivals: List[Candidate], refs: List[Candidate], full,
            s) -> Optional[Candidate]:
    # The fastest rival if it is within the guardrail of the references
    # timed in `full`, else None.
    top = _fastest(rivals, full)
    return top if top is not None and \
        full[top.label] <= _limit(refs, full, s) else None


def _cast_not_needed(rivals: List[Candidate], refs: List[Candidate], full,
                     fp32_full_ms: Optional[float], s) -> Optional[str]:
    """Why a 16-bit decision need not time the float32 kernel with casts on
    the whole graph (None: it must): what the rivals and ``refs`` timed
    there choose without it takes no longer than that kernel alone took
    there in the float32 decision (``fp32_full_ms``), which the casts only
    add to, so the cast path would not be chosen. Products-like, bfloat16
    F=256 (H200): 'hub@539@32' took 15.5 ms there, the float32 'cusparse'
    30.6 ms, and timing its cast path (33 ms a call, three calls) took
    ~0.1 s of a 0.865 s decision."""
    ref = _fastest(refs, full)
    chosen = _winner(rivals, refs, full, s) or ref
    if fp32_full_ms is None or ref is None or \
            full[chosen.label] > fp32_full_ms:
        return None
    return (f'not timed: the float32 kernel alone takes {fp32_full_ms:.2f} '
            f'ms on the whole graph, {chosen.label} in 16 bits '
            f'{full[chosen.label]:.2f} ms')


def measure(c: Candidate, graph: CSRGraph, x: Tensor, reduce: str,
            budget_ms: float, cutoff_ms: float = math.inf,
            warmup: int = WARMUP) -> float:
    """Median ms of candidate ``c`` on ``graph`` (the tests replace this);
    ``warmup`` as in :func:`time_ms`."""
    return time_ms(lambda: dispatch(c.variant, c.params, graph, x, reduce),
                   x.device, budget_ms, cutoff_ms,
                   first_call_counts=not candidates.pays_setup(c),
                   warmup=warmup)


def time_ms(fn: Callable[[], object], device: torch.device,
            budget_ms: float, cutoff_ms: float = math.inf,
            first_call_counts: bool = False, warmup: int = WARMUP) -> float:
    """Median of as many timed calls (1..MAX_REPS) as fit ``budget_ms``
    after ``warmup`` untimed ones (lazy init, caches; ``0``: the first call
    is timed, a single call if that fills the budget). A warm-up call slower
    than ``cutoff_ms`` is the answer (the caller only needs to know it
    lost): from the second one on, or already the first with
    ``first_call_counts`` (no one-time set-up to excuse it).
    CUDA: events on the current stream, one sync per call."""
    def once() -> float:
        if device.type != 'cuda':
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1e3
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    warm = [once()]
    if first_call_counts and warm[0] > cutoff_ms:
        return warm[0]
    for _ in range(warmup - 1):
        warm.append(once())
        if warm[-1] > cutoff_ms:
            return warm[-1]
    est = min(warm)
    counted = warm if warmup == 0 else []
    reps = min(MAX_REPS - len(counted),
               int((budget_ms - max(warmup, 1) * est) / max(est, 1e-3)))
    reps = max(0 if counted else 1, reps)
    return statistics.median(counted + [once() for _ in range(reps)])


def probe_subgraph(graph: CSRGraph, target_nnz: int) -> CSRGraph:
    """The rows the probes run on (the graph itself when small enough):
    about ``target_nnz`` non-zeros, full column space (the gather pattern the
    kernels see). Rows are a systematic sample of the degree-sorted order
    (every k-th row by degree, the heaviest always included), so every
    degree band -- hence the hub rows of any full-graph threshold -- is
    represented in proportion (+-1 row); the thresholds themselves come
    from the full graph and are passed unchanged."""
    n_rows = graph.num_rows
    if graph.nnz <= target_nnz or n_rows < 2:
        return graph
    n = max(2, n_rows * target_nnz // graph.nnz)
    order = torch.argsort(graph.degree(), stable=True)
    pick = torch.arange(n, device=graph.device) * (n_rows - 1) // (n - 1)
    rows = order[pick].sort().values  # id order: the row locality kernels see
    deg = graph.degree()[rows]
    rowptr = torch.zeros(n + 1, dtype=torch.long, device=graph.device)
    rowptr[1:] = deg.cumsum(0)
    nnz = int(rowptr[-1])  # one host sync per probe
    edge = torch.repeat_interleave(graph.rowptr[rows] - rowptr[:-1], deg,
                                   output_size=nnz) + torch.arange(
                                       nnz, device=graph.device)
    value = graph.value[edge] if graph.value is not None else None
    return CSRGraph(rowptr, graph.col[edge], value, graph.num_cols)
