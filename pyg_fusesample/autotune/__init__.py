"""Input-aware kernel scheduling for SpMM (AutoSAGE's idea, fixed).

``choose(graph, F, dtype, op='spmm', reduce='sum')`` returns a
:class:`Decision`; ``run_spmm(graph, x, reduce)`` chooses and runs, its
backward ``run_spmm_grad`` with the transposed graph's own choice. Features
of the full graph -> shortlist -> timed probes on a row sample (hub
thresholds from the full graph, used unchanged) -> guardrail against
``torch.sparse.mm`` -> decision file + per-graph memo. Toggles: see
:mod:`.config`; file schema: see :mod:`.cache`.
"""
from .candidates import Candidate, hub_thresholds, shortlist
from .scheduler import (Decision, ReplayMiss, choose, forget, probe_subgraph,
                        run_spmm, run_spmm_grad)

__all__ = ['choose', 'run_spmm', 'run_spmm_grad', 'forget', 'Decision', 'ReplayMiss',
           'Candidate', 'shortlist', 'hub_thresholds', 'probe_subgraph']
