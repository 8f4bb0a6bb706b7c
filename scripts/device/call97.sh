#!/usr/bin/env bash
# Device call, no build: call96's memcheck run of the prefetch='thread' tests
# failed 2 of 4 with 0 memcheck errors (log cut to its tail); again, with the
# abandoned epoch's thread given 60 s to stop and the failures printed.
export REBUILD=0 QUIET_BUILD=1
export PATH=$PATH:/usr/local/cuda/bin
gunzip -c .base_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 400 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -rf -p no:cacheprovider \
  tests/test_cuda_sampler.py -k "prefetch_thread" > "$OUT/sanitizer_prefetch_thread.log" 2>&1
echo "memcheck rc $?" | tee -a "$OUT/sanitizer_prefetch_thread.log"
grep -E "^E |Error|FAILED|passed|failed|ERROR SUMMARY" "$OUT/sanitizer_prefetch_thread.log" | head -40
