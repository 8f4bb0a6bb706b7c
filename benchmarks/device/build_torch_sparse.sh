#!/usr/bin/env bash
# On the GPU machine: the `bench layers` rival `pyg-trim-sparse` runs PyG's
# layers on a torch_sparse SparseTensor adj_t, and the torch_sparse wheel
# carried in .whl/ has CPU kernels only (no wheel for the machine's torch;
# nothing can be downloaded there). This builds torch_sparse's CUDA kernels
# (Hopper) from a source tree carried to the machine, once per machine, into
# /tmp/site (run build.sh first, which installs the wheels there; export
# PYTHONPATH=/tmp/site afterwards, as for them).
#
#   bash benchmarks/device/build_torch_sparse.sh SRC
#
# SRC: a pytorch_sparse source tree WITH its one submodule,
# third_party/parallel-hashmap (headers only). Written against
# rusty1s/pytorch_sparse 91feaa5e (0.6.18, the wheel's version) and
# greg7mdp/parallel-hashmap 01ea8093 (the submodule's pinned commit).
# Assembled once, e.g.:
#   git clone https://github.com/rusty1s/pytorch_sparse .lab/src/pytorch_sparse
#   git -C .lab/src/pytorch_sparse submodule update --init
# or from two plain copies: pytorch_sparse's tree, then parallel-hashmap at
# 01ea8093 in its third_party/parallel-hashmap (which must then hold
# parallel_hashmap/phmap.h). .lab/ is git-ignored; name the tree in the
# device call's `carry`.
#
# What it builds. torch_sparse is twelve libraries, one per csrc/*.cpp, and
# loads each as _<lib>_cuda.so if there is one, else _<lib>_cpu.so. Only
# four matter on a GPU for SparseTensor and its matmul: spmm, convert
# (ind2ptr / ptr2ind), diag (GATConv's set_diag) and version
# (cuda_version()); the others have no CUDA code. Where the CPU wheel is
# installed in $SITE/torch_sparse, only those four are built, with CUDA,
# and their _<lib>_cuda.so put beside the wheel's files (which stay);
# otherwise (no torch_sparse in $SITE, or FULL=1) all twelve, and the
# package is installed into $SITE/torch_sparse from the source tree.
# torch_sparse's setup.py has no switch for this: each library is built by
# its own `setup.py build_ext --inplace` on its own copy of the tree with
# the other libraries' csrc/*.cpp removed, all at once (ninja inside each,
# MAX_JOBS jobs; one shared build folder would be clobbered by concurrent
# extensions), so the wall time is about that of the slowest file
# (csrc/cuda/spmm_cuda.cu); not yet measured on the GPU machine.
# FORCE_ONLY_CUDA=1 (a _cuda library holds the CPU kernels too),
# WITH_METIS=0, TORCH_CUDA_ARCH_LIST=9.0 and the system gcc/g++ as build.sh
# does (the image's default g++ links libstdc++ statically).
#
# Environment: SITE (default /tmp/site), PYTHON (python3), MAX_JOBS (4 per
# library), TORCH_CUDA_ARCH_LIST (9.0), REBUILD=1 (build even if a
# torch_sparse with CUDA kernels already imports), FULL=1 (all twelve
# libraries), CPU_ONLY=1 (_cpu libraries: to check this script on a machine
# without nvcc). The logs go to $OUT/torch_sparse_build.log. Any failure
# exits non-zero with the log's tail; a build without CUDA kernels when CUDA
# was asked for is a failure.
set -eo pipefail
. "$(dirname "$0")/toolchain.sh"
SRC=${1:?usage: build_torch_sparse.sh PYTORCH_SPARSE_SOURCE_DIR}
if [ ! -f "$SRC/setup.py" ] || [ ! -d "$SRC/csrc" ] || [ ! -d "$SRC/torch_sparse" ]; then
  echo "error: $SRC is not a pytorch_sparse source tree (no setup.py, csrc/, torch_sparse/)" >&2
  exit 1
fi
if [ ! -f "$SRC/third_party/parallel-hashmap/parallel_hashmap/phmap.h" ]; then
  echo "error: $SRC/third_party/parallel-hashmap has no parallel_hashmap/phmap.h: the submodule is missing (see this script's header)" >&2
  exit 1
fi
SRC=$(cd "$SRC" && pwd)
SITE=${SITE:-/tmp/site}
LOG=${OUT:-/tmp}/torch_sparse_build.log
PY=${PYTHON:-python3}
CPU_ONLY=${CPU_ONLY:-0}
export MAX_JOBS=${MAX_JOBS:-4} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export WITH_METIS=0 WITH_MTMETIS=0
if [ "$CPU_ONLY" = 1 ]; then
  export FORCE_CUDA=0 FORCE_ONLY_CPU=1 FORCE_ONLY_CUDA=0 SUFFIX=cpu
else
  export FORCE_CUDA=1 FORCE_ONLY_CUDA=1 FORCE_ONLY_CPU=0 SUFFIX=cuda
fi
mkdir -p "$SITE"
SITE=$(cd "$SITE" && pwd)
# torch itself may come from the wheels build.sh put in $SITE: the builds
# (no isolation) and the checks import it from there.
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

# Prints the version and where it imports from; fails unless it imports
# from $SITE, has CUDA kernels when CUDA was asked for, and a SparseTensor
# matmul (sum and mean, with the backward) on that device matches a dense
# product.
check() {
  (cd /tmp && "$PY" - <<'PY'
import os
import torch
import torch_sparse
from torch_sparse import SparseTensor
where = os.path.dirname(torch_sparse.__file__)
cuda = int(torch.ops.torch_sparse.cuda_version())
print(f'torch_sparse {torch_sparse.__version__} ({where}), CUDA {cuda}; '
      f'torch {torch.__version__}, CUDA {torch.version.cuda}')
if os.path.realpath(where) != os.path.realpath(
        os.path.join(os.environ['SITE'], 'torch_sparse')):
    raise SystemExit(f"error: torch_sparse imports from {where}, not from "
                     f"{os.environ['SITE']}")
dev = 'cpu'
if os.environ['SUFFIX'] == 'cuda':
    if cuda == -1:
        raise SystemExit('error: torch_sparse has no CUDA kernels')
    dev = 'cuda'
row = torch.tensor([0, 0, 1, 2, 2, 2], device=dev)
col = torch.tensor([1, 2, 0, 0, 1, 2], device=dev)
adj = SparseTensor(row=row, col=col, sparse_sizes=(3, 3))
dense = adj.to_dense()
x = torch.randn(3, 4, device=dev, requires_grad=True)
for reduce, ref in (('sum', dense), ('mean', dense / dense.sum(1, keepdim=True))):
    out = adj.matmul(x, reduce=reduce)
    assert torch.allclose(out, ref @ x, atol=1e-5), (reduce, out, ref @ x)
    g, = torch.autograd.grad(out.sum(), x)
    assert torch.allclose(g, ref.t() @ torch.ones_like(out), atol=1e-5), reduce
print(f'SparseTensor matmul (sum, mean, backward) on {dev}: OK')
PY
  )
}
export SITE SUFFIX

if [ "${REBUILD:-0}" != 1 ] && check >/dev/null 2>&1; then
  echo "torch_sparse with the kernels asked for already in $SITE (REBUILD=1 rebuilds it)"
  check
  exit 0
fi

if [ "$CPU_ONLY" != 1 ]; then
  require_nvcc || exit 1
fi
use_system_compilers

ALL=$(cd "$SRC/csrc" && ls *.cpp | sed 's/\.cpp$//' | grep -v hip | sort)
if [ "${FULL:-0}" != 1 ] && [ -f "$SITE/torch_sparse/__init__.py" ]; then
  LIBS="convert diag spmm version"
  how="the four libraries a GPU SparseTensor needs, beside the installed package"
else
  LIBS=$ALL
  how="all $(echo $ALL | wc -w) libraries, and the package from the source tree"
fi
build=$(mktemp -d)
start=$(date +%s)
echo "building torch_sparse ($SUFFIX: $how, $MAX_JOBS jobs each) into $SITE/torch_sparse; log: $LOG"
: > "$LOG"
pids=()
for lib in $LIBS; do
  [ -f "$SRC/csrc/$lib.cpp" ] || { echo "error: $SRC/csrc/$lib.cpp missing" >&2; exit 1; }
  mkdir "$build/$lib"
  cp -a "$SRC/." "$build/$lib/"
  rm -rf "$build/$lib/build" "$build/$lib"/torch_sparse/_*.so
  for other in $ALL; do
    [ "$other" = "$lib" ] || rm -f "$build/$lib/csrc/$other.cpp"
  done
  (cd "$build/$lib" && "$PY" setup.py build_ext --inplace > "$build/$lib.log" 2>&1) &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
for lib in $LIBS; do
  { echo "=== $lib"; cat "$build/$lib.log"; } >> "$LOG"
done
if [ "$failed" = 1 ]; then
  tail -60 "$LOG"
  echo "error: torch_sparse build failed (log: $LOG)" >&2
  exit 1
fi
if [ "$LIBS" = "$ALL" ]; then
  rm -rf "$SITE/torch_sparse"
  cp -a "$SRC/torch_sparse" "$SITE/torch_sparse"
  rm -f "$SITE"/torch_sparse/_*.so
fi
for lib in $LIBS; do
  cp "$build/$lib/torch_sparse/_${lib}_${SUFFIX}.so" "$SITE/torch_sparse/"
done
echo "torch_sparse built in $(( $(date +%s) - start )) s ($(echo $LIBS | wc -w) libraries)"
check || { echo "error: the torch_sparse just built does not work (log: $LOG)" >&2; exit 1; }
rm -rf "$build"
