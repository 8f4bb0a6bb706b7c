#!/usr/bin/env bash
# Installs what is needed, then runs the main demo (extra arguments go to it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
${PYTHON:-python3} -m pyg_fusesample.demo "$@"
