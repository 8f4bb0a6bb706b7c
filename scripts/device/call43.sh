#!/usr/bin/env bash
# Device call: call41's full `spmm` benchmark on a fresh build, with the
# scheduler's whole-graph confirmation band widened to 0.8-1.6 (call41 missed
# a Reddit-like kernel probed at 1.52).
REBUILD=${REBUILD:-1} exec bash "$(dirname "$0")/call41.sh"
