#!/usr/bin/env bash
# Run every test. Extra arguments go to pytest, e.g. bash scripts/test.sh -k library
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh requirements-dev.txt
exec .venv/bin/python -m pytest "$@"
