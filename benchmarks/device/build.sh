#!/usr/bin/env bash
# On the GPU machine: wheels carried in .whl/, then the extension with its
# CUDA kernels for Hopper. Output goes to $OUT/build.log; the build's wall
# time is printed and its objects' compile times (ninja's log, longest
# first) go to $OUT/build_objects.txt.
set -eo pipefail
cd "$(dirname "$0")/../.."
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0 FORCE_CUDA=1
# The image's default g++ (/opt/gcc) links libstdc++ statically into the
# extension, whose private locale state then crashes any error message that
# formats a number. The system compiler links it dynamically, like torch.
if [ -x /usr/bin/g++ ] && [ -x /usr/bin/gcc ]; then
  export CC=/usr/bin/gcc CXX=/usr/bin/g++
fi
echo "compilers: CC=${CC:-default} CXX=${CXX:-default} ($(${CXX:-c++} --version | head -1))"
if ! ls pyg_fusesample/_C*.so >/dev/null 2>&1 || [ "${REBUILD:-1}" = 1 ]; then
  rm -rf build
  start=$(date +%s%N)
  python3 setup.py build_ext --inplace > "${OUT:-/tmp}/build.log" 2>&1 \
    || { tail -60 "${OUT:-/tmp}/build.log"; exit 1; }
  echo "build: $(( ($(date +%s%N) - start) / 1000000 )) ms"
  awk 'NR>1{printf "%6.1f %s\n", ($2-$1)/1000, $4}' build/temp.*/.ninja_log \
    | sort -rn | sed 's#/[^ ]*/build/temp[^/]*/##' > "${OUT:-/tmp}/build_objects.txt"
  head -5 "${OUT:-/tmp}/build_objects.txt"
fi
python3 -c "import pyg_fusesample as p; print('CUDA kernels:', p._extension.cuda_kernels_built())"
# The error path must raise, not crash (the failure mode above).
python3 - <<'PY'
import torch, pyg_fusesample
for dev in ('cpu', 'cuda'):
    try:
        torch.ops.fusesample.neighbor_sample(
            torch.zeros(3, dtype=torch.long, device=dev),
            torch.zeros(0, dtype=torch.long, device=dev), None,
            torch.tensor([7], device=dev), [1])
    except RuntimeError as e:
        print(f'error path on {dev} OK:', str(e).splitlines()[0][:80])
PY
