#!/usr/bin/env bash
# Each C++ file must include what it uses: the build puts a precompiled
# header (kernels/common/precompiled.hpp) in front of every .cpp file, which
# hides a missing include there, but not from nvcc, clang or FUSESAMPLE_PCH=0
# builds. This parses every kernels/**/*.cpp on its own (g++ -fsyntax-only,
# the build's light-header guard defined), two at a time; about 2 minutes on
# 2 cores. (.cu files: scripts/check_cuda_compiles.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
INC=$($PY -c 'import torch.utils.cpp_extension as c; print(" ".join("-I" + p for p in c.include_paths()))')
PY_INC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
export INC PY_INC LOGS
find kernels -name '*.cpp' | sort | xargs -P "${JOBS:-2}" -I{} sh -c '
  if ${CXX:-c++} -std=c++20 -fopenmp -DTORCH_ASSERT_ONLY_METHOD_OPERATORS $INC -I$PY_INC \
      -fsyntax-only {} 2> "$LOGS/$(echo {} | tr / _).log"; then echo "ok      {}";
  else echo "FAILED  {}"; grep -m5 error "$LOGS/$(echo {} | tr / _).log"; exit 255; fi'
