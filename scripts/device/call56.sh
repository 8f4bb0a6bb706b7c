#!/usr/bin/env bash
# Device call: call55 with bf16 autocast.
AMP=on exec bash "$(dirname "$0")/call55.sh"
