# Sourced by the device build scripts (build_torch_cluster.sh,
# build_scatter_sparse.sh): the CUDA compiler and the host compilers they
# build with.

# Puts nvcc on PATH (from $CUDA_HOME or /usr/local/cuda when it is not
# there yet) and prints which one; returns 1, with a message, without one.
require_nvcc() {
  if ! command -v nvcc >/dev/null; then
    for d in "${CUDA_HOME:-}" /usr/local/cuda; do
      [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && export PATH="$d/bin:$PATH" && break
    done
  fi
  if ! command -v nvcc >/dev/null; then
    echo "error: nvcc not found (PATH, \$CUDA_HOME, /usr/local/cuda): cannot build the CUDA kernels" >&2
    return 1
  fi
  echo "nvcc: $(command -v nvcc) ($(nvcc --version | tail -1))"
}

# The system gcc/g++ where there is one, as build.sh uses: the image's
# default g++ links libstdc++ statically (see build.sh).
use_system_compilers() {
  if [ -x /usr/bin/g++ ] && [ -x /usr/bin/gcc ]; then
    export CC=/usr/bin/gcc CXX=/usr/bin/g++
  fi
}
