#!/usr/bin/env bash
# On the GPU machine: the walk benchmark's baselines (`bench walk`:
# torch-cluster-uniform / -node2vec, pyg-node2vec-torch-cluster) call
# torch.ops.torch_cluster.random_walk on the GPU, and torch_cluster has no
# wheel for the machine's torch and cannot be downloaded there. This builds it
# WITH its CUDA kernels (Hopper) from a source tree carried to the machine and
# installs it into /tmp/site, where build.sh puts the carried wheels (export
# PYTHONPATH=/tmp/site afterwards, as for them).
#
#   bash benchmarks/device/build_torch_cluster.sh SRC
#
# SRC: a pytorch_cluster checkout (no submodules needed), e.g.
#   git clone https://github.com/rusty1s/pytorch_cluster lab/pytorch_cluster
# (written against 3d1d9e39, 1.6.3), carried with the call (lab/ is ignored:
# name it in `carry`). The carried tree stays clean: the build runs on a copy.
#
# What it sets: FORCE_CUDA=1 and FORCE_ONLY_CUDA=1 (only the _*_cuda
# libraries: each also holds the CPU kernels, and torch_cluster loads it
# first; building the _*_cpu twins too would double the time),
# TORCH_CUDA_ARCH_LIST=9.0, MAX_JOBS=16, and the system g++ as build.sh does
# (the image's default g++ links libstdc++ statically: see build.sh).
# torch_cluster's setup.py turns ninja off, so MAX_JOBS alone would not
# parallelise anything; the copy's setup.cfg gets `[build_ext] parallel =
# MAX_JOBS`, which builds its nine extensions concurrently. Then
# `pip install --no-build-isolation --no-deps --no-index --target $SITE`.
#
# Environment: SITE (default /tmp/site), PYTHON (python3), MAX_JOBS (16),
# TORCH_CUDA_ARCH_LIST (9.0), REBUILD=1 (build even if a torch_cluster with
# CUDA already imports), CPU_ONLY=1 (FORCE_ONLY_CPU=1: a CPU build, to check
# this script on a machine without nvcc). The log goes to
# $OUT/torch_cluster_build.log. Any failure exits non-zero with the log's
# tail; a build without CUDA kernels when CUDA was asked for is a failure.
set -eo pipefail
. "$(dirname "$0")/toolchain.sh"
SRC=${1:?usage: build_torch_cluster.sh PYTORCH_CLUSTER_SOURCE_DIR}
if [ ! -f "$SRC/setup.py" ] || [ ! -d "$SRC/csrc" ]; then
  echo "error: $SRC is not a pytorch_cluster source tree (no setup.py, csrc/)" >&2
  exit 1
fi
SRC=$(cd "$SRC" && pwd)
SITE=${SITE:-/tmp/site}
LOG=${OUT:-/tmp}/torch_cluster_build.log
PY=${PYTHON:-python3}
CPU_ONLY=${CPU_ONLY:-0}
export MAX_JOBS=${MAX_JOBS:-16} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
if [ "$CPU_ONLY" = 1 ]; then
  export FORCE_CUDA=0 FORCE_ONLY_CPU=1 FORCE_ONLY_CUDA=0
else
  export FORCE_CUDA=1 FORCE_ONLY_CUDA=1 FORCE_ONLY_CPU=0
fi
mkdir -p "$SITE"
# torch itself may come from the wheels build.sh put in $SITE: the build
# (no isolation) and the checks import it from there.
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

# Prints the installed version; fails unless it imports, has CUDA kernels
# when CUDA was asked for, and walks a 3-node graph on that device.
check() {
  (cd /tmp && "$PY" - <<'PY'
import os
import torch
import torch_cluster
cuda = int(torch.ops.torch_cluster.cuda_version())
print(f'torch_cluster {torch_cluster.__version__} ({torch_cluster.__file__}), '
      f'CUDA {cuda}; torch {torch.__version__}, CUDA {torch.version.cuda}')
dev = 'cpu'
if os.environ.get('FORCE_ONLY_CPU') != '1':
    if cuda == -1:
        raise SystemExit('error: torch_cluster has no CUDA kernels')
    dev = 'cuda'
rowptr = torch.tensor([0, 2, 3, 4], device=dev)
col = torch.tensor([1, 2, 0, 0], device=dev)
start = torch.arange(3, device=dev)
for p, q in ((1.0, 1.0), (1.0, 0.5)):
    node, edge = torch.ops.torch_cluster.random_walk(rowptr, col, start, 4, p, q)
    assert node.shape == (3, 5) and bool((node[:, 0] == start).all()), node
    assert bool((node >= 0).all() and (node < 3).all()), node
print(f'torch.ops.torch_cluster.random_walk on {dev}: OK')
PY
  )
}

if [ "${REBUILD:-0}" != 1 ] && check >/dev/null 2>&1; then
  echo "torch_cluster already installed (REBUILD=1 rebuilds it)"
  check
  exit 0
fi

if [ "$CPU_ONLY" != 1 ]; then
  require_nvcc || exit 1
fi
use_system_compilers

build=$(mktemp -d)
cp -a "$SRC/." "$build/"
rm -rf "$build/build" "$build"/torch_cluster/_*.so
printf '\n[build_ext]\nparallel = %s\n' "$MAX_JOBS" >> "$build/setup.cfg"
start=$(date +%s)
echo "building torch_cluster ($( [ "$CPU_ONLY" = 1 ] && echo CPU only || echo "CUDA, arch $TORCH_CUDA_ARCH_LIST"), $MAX_JOBS jobs) into $SITE; log: $LOG"
(cd "$build" && "$PY" -m pip install --no-build-isolation --no-deps --no-index \
   --no-cache-dir --upgrade --target "$SITE" .) > "$LOG" 2>&1 || {
  tail -60 "$LOG"
  echo "error: torch_cluster build failed (log: $LOG)" >&2
  exit 1
}
echo "torch_cluster built in $(( $(date +%s) - start )) s"
check || { echo "error: the torch_cluster just built does not work (log: $LOG)" >&2; exit 1; }
rm -rf "$build"
