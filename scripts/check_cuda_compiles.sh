#!/usr/bin/env bash
# Compiles CUDA sources of the extension on a machine without a GPU or a CUDA
# build of torch: nvcc against the installed (CPU) torch's headers, with the
# few cuBLAS/cuSPARSE/cuSOLVER types those headers name stubbed out. It checks
# that the code compiles for sm_90 (syntax, templates, device code); it does
# not link or run anything. Flags as the GPU machine's build passes them
# (torch's cpp_extension: C++17, which refuses some constructs C++20 takes,
# and no implicit half / bfloat16 operators).
#
#   bash scripts/check_cuda_compiles.sh kernels/walk/cuda/random_walk_kernel.cu ...
#   bash scripts/check_cuda_compiles.sh            # every kernels/**/*.cu
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
NVCC=${NVCC:-nvcc}
TORCH_INC=$($PY -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
PY_INC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
STUBS=$(mktemp -d)
trap 'rm -rf "$STUBS"' EXIT
mkdir -p "$STUBS/c10/cuda/impl"
echo 'typedef struct cusparseContext* cusparseHandle_t;' > "$STUBS/cusparse.h"
echo 'typedef struct cublasContext* cublasHandle_t; typedef int cublasStatus_t;' > "$STUBS/cublas_v2.h"
echo 'typedef struct cublasLtContext* cublasLtHandle_t;' > "$STUBS/cublasLt.h"
echo 'typedef struct cusolverDnContext* cusolverDnHandle_t; typedef int cusolverStatus_t;' > "$STUBS/cusolverDn.h"
: > "$STUBS/cusolver_common.h"
echo '#pragma once' > "$STUBS/c10/cuda/impl/cuda_cmake_macros.h"

if [ $# -eq 0 ]; then set -- $(find kernels -name '*.cu' | sort); fi
status=0
for f in "$@"; do
  if "$NVCC" -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -DWITH_CUDA \
      -DTORCH_ASSERT_ONLY_METHOD_OPERATORS \
      -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ \
      -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ \
      -I"$STUBS" -I"$TORCH_INC" -I"$TORCH_INC/torch/csrc/api/include" \
      -I"$PY_INC" -c "$f" -o "$STUBS/out.o" 2> "$STUBS/log"; then
    echo "ok      $f"
  else
    echo "FAILED  $f"; grep -E "error" "$STUBS/log" | head -20; status=1
  fi
done
exit $status
