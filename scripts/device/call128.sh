#!/usr/bin/env bash
# Device call, no build (call126's .so): which CUDA sampler test hangs
# (call126/127's whole suite stopped at about 13%, in test_cuda_sampler.py):
# verbose, with Python's faulthandler dumping every thread after 40 s.
export REBUILD=0 QUIET_BUILD=1
gunzip -c .c_so/_C312.so.gz > pyg_fusesample/_C.cpython-312-x86_64-linux-gnu.so
source "$(dirname "$0")/prelude.sh"
timeout 150 python3 -m pytest -v -p no:cacheprovider -o faulthandler_timeout=40 \
  tests/test_cuda_sampler.py > $OUT/hang_probe.log 2>&1
echo "rc=$?" >> $OUT/hang_probe.log
grep -E "PASSED|FAILED|ERROR" $OUT/hang_probe.log | tail -5; grep -B2 -A30 "Timeout\|Thread 0x" $OUT/hang_probe.log | head -80; tail -3 $OUT/hang_probe.log
