#!/usr/bin/env bash
# On the GPU machine: wheels carried in .whl/, then the extension with its
# CUDA kernels for Hopper. Output goes to $OUT/build.log.
set -eo pipefail
cd "$(dirname "$0")/../.."
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0 FORCE_CUDA=1
if ! ls pyg_fusesample/_C*.so >/dev/null 2>&1 || [ "${REBUILD:-1}" = 1 ]; then
  python3 setup.py build_ext --inplace > "${OUT:-/tmp}/build.log" 2>&1 \
    || { tail -60 "${OUT:-/tmp}/build.log"; exit 1; }
fi
python3 -c "import pyg_fusesample as p; print('CUDA kernels:', p._extension.cuda_kernels_built())"
