#!/usr/bin/env bash
# On the GPU machine: PyG's weighted, temporal and disjoint sampling need
# pyg-lib, which has no wheel for the machine's torch and cannot be
# downloaded there. This builds it (CPU-only: PyG's NeighborLoader samples on
# the CPU) from a source tree carried to the machine, once per machine, and
# installs it; the benchmark's PyG rows then use it.
#
#   bash benchmarks/device/build_pyg_lib.sh SRC
#
# SRC: a pyg-lib checkout with the submodules a CPU build compiles, e.g.
#   git clone --recursive https://github.com/pyg-team/pyg-lib   (measured: 764e3a49, 0.9.0)
# (third_party/parallel-hashmap and third_party/METIS with its GKlib; cutlass,
# cuCollections and cccl are only for CUDA builds). About 2 minutes on 8 jobs.
# The log goes to $OUT/pyg_lib_build.log.
set -eo pipefail
SRC=${1:?usage: build_pyg_lib.sh PYG_LIB_SOURCE_DIR}
LOG=${OUT:-/tmp}/pyg_lib_build.log
PY=${PYTHON:-python3}
flags() {
  (cd /tmp && "$PY" -c 'import torch_geometric.typing as t; print("pyg-lib:", t.WITH_PYG_LIB, "weighted:", t.WITH_WEIGHTED_NEIGHBOR_SAMPLE, "edge time:", t.WITH_EDGE_TIME_NEIGHBOR_SAMPLE)')
}
if (cd /tmp && "$PY" -c 'import pyg_lib' 2>/dev/null); then
  echo "pyg-lib already installed"; flags; exit 0
fi
# A CUDA build of torch makes find_package(Torch) enable CUDA, so nvcc must be
# found even though pyg-lib is built without CUDA.
if ! command -v nvcc >/dev/null; then
  for d in "${CUDA_HOME:-}" /usr/local/cuda; do
    [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && export PATH="$d/bin:$PATH" && break
  done
fi
command -v nvcc >/dev/null && export CUDACXX=$(command -v nvcc)
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
command -v ninja >/dev/null && export FORCE_NINJA=1
build=$(mktemp -d)
cp -a "$SRC/." "$build/"  # the carried tree stays clean
start=$(date +%s)
(cd "$build" && FORCE_CUDA=0 MAX_JOBS=${MAX_JOBS:-8} \
  "$PY" -m pip wheel --no-build-isolation --no-deps --no-index -w "$build/dist" .) \
  > "$LOG" 2>&1 || { tail -40 "$LOG"; exit 1; }
"$PY" -m pip install -q --no-deps --no-index "$build"/dist/pyg_lib-*.whl >> "$LOG" 2>&1
echo "pyg-lib built in $(( $(date +%s) - start )) s"
flags
