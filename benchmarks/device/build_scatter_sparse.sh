#!/usr/bin/env bash
# On the GPU machine: the `bench layers` rival `pyg-trim-sparse` runs PyG's
# layers on a torch_sparse SparseTensor adj_t. The torch_scatter and
# torch_sparse wheels carried in .whl/ have CPU kernels only (no wheels for
# the machine's torch; nothing can be downloaded there), and torch_sparse
# calls torch_scatter (SparseStorage's counts, the matmul's backward), so
# both need CUDA kernels. This builds them (Hopper) from source trees
# carried to the machine, once per machine, into /tmp/site (run build.sh
# first, which installs the wheels there; export PYTHONPATH=/tmp/site
# afterwards, as for them):
#
#   bash benchmarks/device/build_scatter_sparse.sh SCATTER_SRC SPARSE_SRC
#
# SCATTER_SRC: a pytorch_scatter tree (rusty1s/pytorch_scatter, 2.1.2 =
# the wheel's version; written against 648dda3). SPARSE_SRC: a
# pytorch_sparse tree WITH its one submodule, third_party/parallel-hashmap
# (headers only); written against rusty1s/pytorch_sparse 91feaa5e (0.6.18)
# and greg7mdp/parallel-hashmap 01ea8093 (the submodule's pinned commit):
#   git clone https://github.com/rusty1s/pytorch_sparse .lab/src/pytorch_sparse
#   git -C .lab/src/pytorch_sparse submodule update --init
# (.lab/ is git-ignored; name it in the device call's `carry`.)
#
# What it builds. Each package is a set of libraries, one per csrc/*.cpp,
# loaded as _<lib>_cuda.so if there is one, else _<lib>_cpu.so.
# torch_scatter: all four (scatter, segment_csr, segment_coo, version).
# torch_sparse: four matter on a GPU for SparseTensor and its matmul: spmm,
# convert (ind2ptr / ptr2ind), diag (GATConv's set_diag) and version; the
# others have no CUDA code. Where the CPU wheel is installed in
# $SITE/<package>, only those are built, with CUDA, and their
# _<lib>_cuda.so put beside the wheel's files (which stay); otherwise (or
# FULL=1) all of them, and the package is installed into $SITE from the
# source tree. The setup.py files have no switch for this: each library is
# built by its own `setup.py build_ext --inplace` on its own copy of the
# tree with the other libraries' csrc/*.cpp removed, all at once (ninja
# inside each, MAX_JOBS jobs; one shared build folder would be clobbered by
# concurrent extensions), so the wall time is about that of the slowest
# file. FORCE_ONLY_CUDA=1 (a _cuda library holds the CPU kernels too),
# WITH_METIS=0, TORCH_CUDA_ARCH_LIST=9.0 and the system gcc/g++ as build.sh
# does (the image's default g++ links libstdc++ statically).
#
# Environment: SITE (default /tmp/site), PYTHON (python3), MAX_JOBS (4 per
# library), TORCH_CUDA_ARCH_LIST (9.0), REBUILD=1 (build even if packages
# with CUDA kernels already import), FULL=1 (all libraries), CPU_ONLY=1
# (_cpu libraries: to check this script on a machine without nvcc). Logs go
# to $OUT/<package>_build.log. Any failure exits non-zero with the log's
# tail; a build without CUDA kernels when CUDA was asked for is a failure.
set -eo pipefail
. "$(dirname "$0")/toolchain.sh"
usage="usage: build_scatter_sparse.sh PYTORCH_SCATTER_SRC PYTORCH_SPARSE_SRC"
SCATTER_SRC=${1:?$usage}
SPARSE_SRC=${2:?$usage}
SITE=${SITE:-/tmp/site}
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
export SITE SUFFIX

# The source tree $1 of package $2, as an absolute path; fails with a
# message unless it is one (torch_sparse: with its submodule).
source_tree() {
  local src=$1 pkg=$2
  if [ ! -f "$src/setup.py" ] || [ ! -d "$src/csrc" ] || [ ! -d "$src/$pkg" ]; then
    echo "error: $src is not a $pkg source tree (no setup.py, csrc/, $pkg/)" >&2
    return 1
  fi
  if [ "$pkg" = torch_sparse ] &&
     [ ! -f "$src/third_party/parallel-hashmap/parallel_hashmap/phmap.h" ]; then
    echo "error: $src/third_party/parallel-hashmap has no parallel_hashmap/phmap.h: the submodule is missing (see this script's header)" >&2
    return 1
  fi
  (cd "$src" && pwd)
}

# Prints the package's version and where it imports from; fails unless it
# imports from $SITE, has CUDA kernels when CUDA was asked for, and its
# reductions (torch_scatter: scatter / segment_csr sum, mean, max;
# torch_sparse: SparseTensor matmul sum and mean), with their backward, on
# that device match dense references.
check() {
  (cd /tmp && PKG=$1 "$PY" - <<'PY'
import importlib, os
import torch
pkg = os.environ['PKG']
mod = importlib.import_module(pkg)
where = os.path.dirname(mod.__file__)
cuda = int(getattr(torch.ops, pkg).cuda_version())
print(f'{pkg} {mod.__version__} ({where}), CUDA {cuda}; '
      f'torch {torch.__version__}, CUDA {torch.version.cuda}')
if os.path.realpath(where) != os.path.realpath(
        os.path.join(os.environ['SITE'], pkg)):
    raise SystemExit(f"error: {pkg} imports from {where}, not from "
                     f"{os.environ['SITE']}")
dev = 'cpu'
if os.environ['SUFFIX'] == 'cuda':
    if cuda == -1:
        raise SystemExit(f'error: {pkg} has no CUDA kernels')
    dev = 'cuda'
row = torch.tensor([0, 0, 1, 2, 2, 2], device=dev)
col = torch.tensor([1, 2, 0, 0, 1, 2], device=dev)
dense = torch.zeros(3, 3, device=dev)
dense[row, col] = 1.
x = torch.randn(3, 4, device=dev, requires_grad=True)
if pkg == 'torch_scatter':
    from torch_scatter import scatter, segment_csr
    ptr = torch.tensor([0, 2, 3, 6], device=dev)
    for reduce in ('sum', 'mean', 'max'):
        a = scatter(x[col], row, dim=0, dim_size=3, reduce=reduce)
        b = segment_csr(x[col], ptr, reduce=reduce)
        op = 'amax' if reduce == 'max' else reduce
        ref = torch.stack([getattr(x[col[row == i]], op)(0)
                           for i in range(3)])
        assert torch.allclose(a, ref, atol=1e-5), (reduce, a, ref)
        assert torch.allclose(b, ref, atol=1e-5), (reduce, b, ref)
        ga, = torch.autograd.grad(a.sum(), x)
        gr, = torch.autograd.grad(ref.sum(), x)
        assert torch.allclose(ga, gr, atol=1e-5), reduce
    print(f'scatter / segment_csr (sum, mean, max, backward) on {dev}: OK')
else:
    from torch_sparse import SparseTensor
    adj = SparseTensor(row=row, col=col, sparse_sizes=(3, 3))
    for reduce, ref in (('sum', dense),
                        ('mean', dense / dense.sum(1, keepdim=True))):
        out = adj.matmul(x, reduce=reduce)
        assert torch.allclose(out, ref @ x, atol=1e-5), (reduce, out, ref @ x)
        g, = torch.autograd.grad(out.sum(), x)
        assert torch.allclose(g, ref.t() @ torch.ones_like(out),
                              atol=1e-5), reduce
    print(f'SparseTensor matmul (sum, mean, backward) on {dev}: OK')
PY
  )
}

# Builds package $1 from tree $2 (libraries $3 where the wheel is there)
# into $SITE/$1, unless one with the kernels asked for imports already.
build_package() {
  local pkg=$1 src=$2 needed=$3 log=${OUT:-/tmp}/$1_build.log
  if [ "${REBUILD:-0}" != 1 ] && check "$pkg" >/dev/null 2>&1; then
    echo "$pkg with the kernels asked for already in $SITE (REBUILD=1 rebuilds it)"
    check "$pkg"
    return 0
  fi
  local all libs how
  all=$(cd "$src/csrc" && ls *.cpp | sed 's/\.cpp$//' | grep -v hip | sort)
  if [ "${FULL:-0}" != 1 ] && [ -f "$SITE/$pkg/__init__.py" ]; then
    libs=$needed
    how="$(echo $libs | wc -w) libraries, beside the installed package"
  else
    libs=$all
    how="all $(echo $all | wc -w) libraries, and the package from the source tree"
  fi
  local build start lib other pid failed=0 pids=()
  build=$(mktemp -d)
  start=$(date +%s)
  echo "building $pkg ($SUFFIX: $how, $MAX_JOBS jobs each) into $SITE/$pkg; log: $log"
  : > "$log"
  for lib in $libs; do
    [ -f "$src/csrc/$lib.cpp" ] || { echo "error: $src/csrc/$lib.cpp missing" >&2; return 1; }
    mkdir "$build/$lib"
    cp -a "$src/." "$build/$lib/"
    rm -rf "$build/$lib/build" "$build/$lib/$pkg"/_*.so
    for other in $all; do
      [ "$other" = "$lib" ] || rm -f "$build/$lib/csrc/$other.cpp"
    done
    (cd "$build/$lib" && "$PY" setup.py build_ext --inplace > "$build/$lib.log" 2>&1) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  for lib in $libs; do
    { echo "=== $lib"; cat "$build/$lib.log"; } >> "$log"
  done
  if [ "$failed" = 1 ]; then
    tail -60 "$log"
    echo "error: $pkg build failed (log: $log)" >&2
    return 1
  fi
  if [ "$libs" = "$all" ]; then
    rm -rf "$SITE/$pkg"
    cp -a "$src/$pkg" "$SITE/$pkg"
    rm -f "$SITE/$pkg"/_*.so
  fi
  for lib in $libs; do
    cp "$build/$lib/$pkg/_${lib}_${SUFFIX}.so" "$SITE/$pkg/"
  done
  echo "$pkg built in $(( $(date +%s) - start )) s ($(echo $libs | wc -w) libraries)"
  check "$pkg" || { echo "error: the $pkg just built does not work (log: $log)" >&2; return 1; }
  rm -rf "$build"
}

SCATTER_SRC=$(source_tree "$SCATTER_SRC" torch_scatter)
SPARSE_SRC=$(source_tree "$SPARSE_SRC" torch_sparse)
if [ "$CPU_ONLY" != 1 ]; then
  require_nvcc
fi
use_system_compilers
# One after the other: torch_sparse's check calls torch_scatter.
build_package torch_scatter "$SCATTER_SRC" "scatter segment_csr segment_coo version"
build_package torch_sparse "$SPARSE_SRC" "convert diag spmm version"
