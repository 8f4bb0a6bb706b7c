#!/usr/bin/env bash
# Installs what pyg_fusesample needs and builds its extension in place.
# Idempotent: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP="$PY -m pip install -q --disable-pip-version-check"

# torch first, pinned: an unpinned 'torch' would pull a multi-GB CUDA build.
# A machine that already has torch (e.g. a CUDA build on a GPU box) keeps it.
if ! $PY -c 'import torch' 2>/dev/null; then
  $PIP torch==2.13.0
fi
$PIP torch_geometric tqdm numpy scipy pytest hypothesis ninja wheel setuptools matplotlib scikit-learn

# NeighborLoader's CPU backend (the baseline in the demo, tests and
# benchmarks): prebuilt wheels in ../shared when present.
if ! $PY -c 'import torch_sparse' 2>/dev/null; then
  WHEELS=../shared/wheels/cpu-machine
  if [ -d "$WHEELS" ]; then
    $PIP --find-links "$WHEELS" torch_scatter torch_sparse
  else
    echo "note: torch_sparse is not installed; NeighborLoader comparisons" \
         "will be skipped (pip install torch_sparse torch_scatter to add them)"
  fi
fi

# The extension (C++ always; CUDA kernels when a GPU or FORCE_CUDA=1).
$PIP --no-build-isolation --no-deps -e .
$PY -c 'import pyg_fusesample, torch; print("pyg_fusesample", pyg_fusesample.__version__, "built; CUDA kernels:", pyg_fusesample._extension.cuda_kernels_built())'
