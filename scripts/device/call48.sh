#!/usr/bin/env bash
# Device call: call47 again after keeping GPU seeds on the device (PyG's
# NodeSamplerInput moved them to the CPU: a pageable copy, so a host sync,
# per batch).
TAG=call48 exec bash "$(dirname "$0")/call47.sh"
