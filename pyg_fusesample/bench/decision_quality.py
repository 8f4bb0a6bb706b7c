"""How long an autotune decision takes and how good it is: its time against
every candidate the scheduler knows for that (graph, F, dtype), each timed
on the whole graph.

Issue 23 asks for a decision within 0.5 s per (graph, F, dtype) "without
losing the quality of the choice". ``quality(graph, F, dtype)`` answers
both for one SpMM: it re-decides with the memo entry of that key dropped
and the decision file off, so the probe runs as on a first call -- for a
16-bit key a first call in that dtype, which makes the float32 decision it
takes a reference from too (that one is dropped as well) -- then
times the chosen kernel and every candidate -- the references (cuSPARSE,
PyG's scatter, the fp32 decision with casts for a 16-bit input), the
shortlist and the index-order twins of the hub-split kernels -- on the
whole graph. A ratio of 1.00 means the decision found the best of them.
"""
import math
import os
import time
from contextlib import contextmanager
from typing import Dict, List

import torch

from ..autotune import candidates, scheduler
from ..autotune.candidates import LOW_PRECISION, Candidate

# Timing of the exhaustive pass: its warm-up calls plus as many as fit this
# per-candidate budget (at least one).
BUDGET_MS = 60.0


@contextmanager
def _no_decision_file():
    key = 'FUSESAMPLE_AUTOTUNE_CACHE'
    saved = os.environ.get(key)
    os.environ[key] = 'off'
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = saved


def _fresh_decision(graph, F: int, dtype: torch.dtype):
    """The decision for (graph, F, dtype) as a first call makes it, timed
    (seconds, the device synchronised before and after); for a 16-bit dtype
    with the float32 decision it consults made again within it."""
    scheduler.forget(graph, F, dtype)
    if dtype in LOW_PRECISION:
        scheduler.forget(graph, F, torch.float32)
    sync = torch.cuda.synchronize if graph.device.type == 'cuda' else (
        lambda: None)
    with _no_decision_file():
        sync()
        start = time.perf_counter()
        decision = scheduler.choose(graph, F, dtype)
        sync()
    return decision, time.perf_counter() - start


def all_candidates(graph, F: int, dtype: torch.dtype) -> List[Candidate]:
    """Every candidate the scheduler may pick for (graph, F, dtype)."""
    out = scheduler.references(graph, F, dtype)
    for c in candidates.shortlist(graph.stats(), F, dtype, graph.device.type):
        out.append(c)
        twin = candidates.index_order_twin(c)
        if twin is not None:
            out.append(twin)
    return out


def quality(graph, F: int, dtype: torch.dtype) -> Dict:
    """``decision_s``, ``chosen`` (label), ``chosen_ms``, ``best`` (label),
    ``best_ms`` and ``ratio`` (chosen / best) for one SpMM."""
    graph = scheduler.valued_as(graph, dtype)
    decision, seconds = _fresh_decision(graph, F, dtype)
    chosen = Candidate(decision.variant, dict(decision.params))
    x = torch.rand(graph.num_cols, F, dtype=dtype, device=graph.device)
    times = {}
    with torch.no_grad():
        for c in all_candidates(graph, F, dtype) + [chosen]:
            if c.label in times:
                continue
            try:
                times[c.label] = scheduler.measure(c, graph, x, 'sum',
                                                   BUDGET_MS)
            except (RuntimeError, NotImplementedError):
                times[c.label] = math.inf  # refused this input
    best = min(times, key=times.get)
    return {'decision_s': seconds, 'chosen': chosen.label,
            'chosen_ms': times[chosen.label], 'best': best,
            'best_ms': times[best],
            'ratio': times[chosen.label] / times[best]}
