#!/usr/bin/env bash
# Device call: call64 with bf16 autocast.
AMP=on exec bash "$(dirname "$0")/call64.sh"
