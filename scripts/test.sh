#!/usr/bin/env bash
# Installs what is needed, then runs the test suite (CUDA tests skip
# without a GPU). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
${PYTHON:-python3} -m pytest tests -q -ra "$@"
