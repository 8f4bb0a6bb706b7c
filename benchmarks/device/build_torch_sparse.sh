#!/usr/bin/env bash
# On the GPU machine: the `bench layers` rival `pyg-trim-sparse` runs PyG's
# layers on a torch_sparse SparseTensor adj_t, and the torch_sparse wheel
# carried in .whl/ has CPU kernels only (no wheel for the machine's torch;
# nothing can be downloaded there). This builds torch_sparse WITH its CUDA
# kernels (Hopper) from a source tree carried to the machine and installs it
# into /tmp/site, over the CPU wheel build.sh put there (run build.sh first;
# export PYTHONPATH=/tmp/site afterwards, as for the wheels).
#
#   bash benchmarks/device/build_torch_sparse.sh SRC
#
# SRC: a pytorch_sparse source tree WITH its one submodule,
# third_party/parallel-hashmap (headers only). Written against
# rusty1s/pytorch_sparse 91feaa5e (0.6.18) and greg7mdp/parallel-hashmap
# 01ea8093 (the submodule's pinned commit). Assembled here, once:
#   git clone https://github.com/rusty1s/pytorch_sparse .lab/src/pytorch_sparse
#   git -C .lab/src/pytorch_sparse submodule update --init
# or, from two plain checkouts: copy pytorch_sparse, then put parallel-hashmap
# at 01ea8093 into its third_party/parallel-hashmap (the folder must hold
# parallel_hashmap/phmap.h). .lab/ is git-ignored and travels with a device
# call (name it in `carry` if the call's tree does not have it).
#
# What it sets: FORCE_CUDA=1 and FORCE_ONLY_CUDA=1 (only the _*_cuda
# libraries: each also holds its CPU kernels, and torch_sparse loads it
# first), WITH_METIS=0, TORCH_CUDA_ARCH_LIST=9.0 and the system gcc/g++ as
# build.sh does. torch_sparse has no switch to build only what SparseTensor
# matmul needs (its __init__ loads all twelve libraries), and only four of
# them have .cu files (convert, diag, rw, spmm). Its setup.py builds with
# ninja, whose build.ninja sits in the one shared build folder, so its twelve
# extensions cannot be built concurrently that way: the copy's setup.py is
# switched to the plain compiler backend (use_ninja=False, as
# torch_cluster's own setup.py does) and its setup.cfg gets `[build_ext]
# parallel = MAX_JOBS`, which builds the extensions concurrently, each
# extension's 2-3 sources in turn. The wall time is that of the longest
# extension (spmm: two .cpp files and spmm_cuda.cu); not yet measured on the
# GPU machine. Then `pip install --no-build-isolation --no-deps --no-index
# --target $SITE`.
#
# Environment: SITE (default /tmp/site), PYTHON (python3), MAX_JOBS (16),
# TORCH_CUDA_ARCH_LIST (9.0), REBUILD=1 (build even if a torch_sparse with
# CUDA already imports), CPU_ONLY=1 (a CPU build, to check this script on a
# machine without nvcc). The log goes to $OUT/torch_sparse_build.log. Any
# failure exits non-zero with the log's tail; a build without CUDA kernels
# when CUDA was asked for is a failure.
set -eo pipefail
SRC=${1:?usage: build_torch_sparse.sh PYTORCH_SPARSE_SOURCE_DIR}
if [ ! -f "$SRC/setup.py" ] || [ ! -d "$SRC/csrc" ]; then
  echo "error: $SRC is not a pytorch_sparse source tree (no setup.py, csrc/)" >&2
  exit 1
fi
if [ ! -f "$SRC/third_party/parallel-hashmap/parallel_hashmap/phmap.h" ]; then
  echo "error: $SRC/third_party/parallel-hashmap is empty: the submodule is missing (see this script's header)" >&2
  exit 1
fi
SRC=$(cd "$SRC" && pwd)
SITE=${SITE:-/tmp/site}
LOG=${OUT:-/tmp}/torch_sparse_build.log
PY=${PYTHON:-python3}
CPU_ONLY=${CPU_ONLY:-0}
export MAX_JOBS=${MAX_JOBS:-16} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export WITH_METIS=0
if [ "$CPU_ONLY" = 1 ]; then
  export FORCE_CUDA=0 FORCE_ONLY_CPU=1 FORCE_ONLY_CUDA=0
else
  export FORCE_CUDA=1 FORCE_ONLY_CUDA=1 FORCE_ONLY_CPU=0
fi
mkdir -p "$SITE"
# torch itself may come from the wheels build.sh put in $SITE: the build
# (no isolation) and the checks import it from there.
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

# Prints the version and where it imports from; fails unless it imports,
# has CUDA kernels when CUDA was asked for, and a SparseTensor matmul (sum
# and mean, with the backward) on that device matches a dense product.
check() {
  (cd /tmp && "$PY" - <<'PY'
import os
import torch
import torch_sparse
from torch_sparse import SparseTensor
cuda = int(torch.ops.torch_sparse.cuda_version())
print(f'torch_sparse {torch_sparse.__version__} ({torch_sparse.__file__}), '
      f'CUDA {cuda}; torch {torch.__version__}, CUDA {torch.version.cuda}')
dev = 'cpu'
if os.environ.get('FORCE_ONLY_CPU') != '1':
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

if [ "${REBUILD:-0}" != 1 ] && check >/dev/null 2>&1; then
  echo "torch_sparse with the kernels asked for already installed (REBUILD=1 rebuilds it)"
  check
  exit 0
fi

if [ "$CPU_ONLY" != 1 ]; then
  if ! command -v nvcc >/dev/null; then
    for d in "${CUDA_HOME:-}" /usr/local/cuda; do
      [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && export PATH="$d/bin:$PATH" && break
    done
  fi
  if ! command -v nvcc >/dev/null; then
    echo "error: nvcc not found (PATH, \$CUDA_HOME, /usr/local/cuda): cannot build the CUDA kernels" >&2
    exit 1
  fi
  echo "nvcc: $(command -v nvcc) ($(nvcc --version | tail -1))"
fi
if [ -x /usr/bin/g++ ] && [ -x /usr/bin/gcc ]; then
  export CC=/usr/bin/gcc CXX=/usr/bin/g++
fi

build=$(mktemp -d)
cp -a "$SRC/." "$build/"
rm -rf "$build/build" "$build"/torch_sparse/_*.so
grep -q "with_options(no_python_abi_suffix=True)" "$build/setup.py" || {
  echo "error: $SRC/setup.py is not the one this script edits (BuildExtension.with_options(no_python_abi_suffix=True))" >&2
  exit 1
}
sed -i 's/with_options(no_python_abi_suffix=True)/with_options(no_python_abi_suffix=True, use_ninja=False)/' "$build/setup.py"
printf '\n[build_ext]\nparallel = %s\n' "$MAX_JOBS" >> "$build/setup.cfg"
start=$(date +%s)
echo "building torch_sparse ($( [ "$CPU_ONLY" = 1 ] && echo CPU only || echo "CUDA, arch $TORCH_CUDA_ARCH_LIST"), $MAX_JOBS extensions at a time) into $SITE; log: $LOG"
(cd "$build" && "$PY" -m pip install --no-build-isolation --no-deps --no-index \
   --no-cache-dir --upgrade --target "$SITE" .) > "$LOG" 2>&1 || {
  tail -60 "$LOG"
  echo "error: torch_sparse build failed (log: $LOG)" >&2
  exit 1
}
echo "torch_sparse built in $(( $(date +%s) - start )) s"
check || { echo "error: the torch_sparse just built does not work (log: $LOG)" >&2; exit 1; }
rm -rf "$build"
