"""The one CSV schema of the benchmark harness, shared by every sub-command."""
import csv
import os
from typing import Dict, Iterable, List

COLUMNS = [
    'device', 'torch', 'cuda', 'graph', 'num_nodes', 'num_edges', 'fanout',
    'batch_size', 'amp', 'variant', 'num_workers', 'step_ms',
    'pipelined_step_ms', 'loader_ms', 'model_ms', 'pipelined_model_ms',
    'fresh_model_ms', 'pipelined_fresh_model_ms',
    'batches_per_s', 'sampled_edges_per_s', 'peak_mem_mb', 'transient_mem_mb',
    'steps', 'round', 'layers',
]
# 'layers': the model's convs, PyG's ('pyg', or empty in files written
# before the column) or ours ('fused': to_fused of the same model, called
# with the batch's per-hop counts); `bench step --layers`.
# 'round': the rows of a setting are measured in `--rounds` interleaved
# rounds (every variant once per round, in turn), numbered from 0; a row's
# model_ms is the floor of its own round.
# model_ms: the model-only floor (8 pre-sampled batches, cycled);
# fresh_model_ms: the model-fresh floor (as many distinct pre-sampled batches
# as the row takes, each used once), where that variant ran.

# ``bench walk`` (bench/walk_runner.py): every column above (the same meaning
# where it applies: step_ms = one pass of walks or one Node2Vec training
# step, batch_size = walks per pass or Node2Vec seeds per step,
# sampled_edges_per_s = walk steps per second), then these. A CSV holds one
# schema or the other (append_rows(..., columns=WALK_COLUMNS)); readers of
# COLUMNS files are unaffected.
WALK_COLUMNS = COLUMNS + [
    'task', 'walk_steps', 'p', 'q', 'walk_steps_per_s', 'sector_bytes',
    'sectors_per_s', 'sectors_per_step', 'bound_steps_per_s',
    'graph_read_steps_per_s', 'epoch_steps', 'epoch_s', 'note',
]

# ``bench layers`` (bench/layer_runner.py): the model step (forward + loss +
# backward + AdamW) on pre-sampled batches, per (graph, model, dtype,
# variant, round). A schema of its own: the loader columns above mean
# nothing there. step_ms / first_step_ms: median of the timed steps / the
# row's first step ever (compilation included); execution: eager or
# compiled; batch_nodes, batch_edges, layer_edges: means over the cycled
# batches (layer_edges: the edges every layer sees after trimming, summed
# over the layers); floor_*: the batch's bytes and GEMM FLOPs at the
# bandwidth and GEMM throughput measured in the same run (floor_ms = both
# times added); vs_pyg / vs_best_pyg: the pyg row's / the fastest PyG
# row's (best_pyg) step time over this row's, same setting and round;
# host_cpu: the host's CPU model and usable cores (empty in rows written
# before the column): PyG's eager steps on the small graphs are host-bound.
LAYER_COLUMNS = [
    'device', 'torch', 'cuda', 'host_cpu', 'graph', 'num_nodes', 'num_edges',
    'model', 'layers', 'hidden', 'fanout', 'batch_size', 'batches', 'dtype',
    'variant', 'execution', 'round', 'steps', 'warmup', 'step_ms',
    'first_step_ms', 'batch_nodes', 'batch_edges', 'layer_edges', 'floor_mb',
    'floor_gflop', 'bandwidth_gbps', 'gemm_tflops', 'floor_ms',
    'ratio_to_floor', 'vs_pyg', 'vs_best_pyg', 'best_pyg', 'peak_mem_mb',
    'transient_mem_mb', 'note',
]


def append_rows(path: str, rows: Iterable[Dict],
                columns: List[str] = COLUMNS):
    """Appends rows (missing columns left empty), writing the header once;
    a file with another header (another schema) is refused."""
    rows = list(rows)
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    if not new:
        with open(path, newline='') as f:
            header = next(csv.reader(f), [])
        if header != columns:
            raise ValueError(f"{path} has other columns than this harness "
                             f"writes ({header}); write to a new file")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'a', newline='') as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction='raise')
        if new:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, '') for k in columns})


def read_rows(path: str) -> List[Dict[str, str]]:
    with open(path, newline='') as f:
        return list(csv.DictReader(f))
