#!/usr/bin/env bash
# Device call, no build (call90's kernels): prefetch='thread' iterators now
# built by _BackgroundIterator.start (every PyTorch call made before the
# iterator exists); memcheck on the thread tests (call97: 2 of 4 failed, the
# abandoned epoch's thread not stopped) and on the probe; then the loader,
# sampler and harness CUDA tests plainly.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
log=$OUT/sanitizer_prefetch_thread.log
timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -rf \
  -p no:cacheprovider tests/test_cuda_sampler.py -k "prefetch_thread" > $log 2>&1
echo "memcheck rc $?" >> $log
THREAD_STOP_WAIT=20 timeout 150 compute-sanitizer --tool memcheck \
  python3 scripts/device/thread_stop_probe.py >> $log 2>&1
echo "memcheck (probe) rc $?" >> $log
grep -E "^E |FAILED|passed|failed|ERROR SUMMARY|rc |trial|alive|held by" $log | head -40
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_sampler.py tests/test_loader.py \
  tests/test_bench.py 2>&1 | tee $OUT/cuda_tests_loader.log | tail -3
