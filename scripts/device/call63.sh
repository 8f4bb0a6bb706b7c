#!/usr/bin/env bash
# Device call: call62 again with the harness's settle steps (untimed steps
# before the first variant of each setting), to check the order effect is
# gone.
SETTLE=20 TAG=call63 exec bash "$(dirname "$0")/call62.sh"
