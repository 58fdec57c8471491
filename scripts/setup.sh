#!/usr/bin/env bash
# Create .venv (if missing) and install a requirements file into it. Idempotent: the install
# is skipped when the requirements files have not changed since the last successful install.
#
#   bash scripts/setup.sh                     # development + test dependencies
#   bash scripts/setup.sh requirements.txt    # runtime dependencies only
#
# PYTHON selects the interpreter for a new venv (default: python3; needs Python 3.11+).
set -euo pipefail
cd "$(dirname "$0")/.."

requirements="${1:-requirements-dev.txt}"
venv=".venv"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv with $("$python" --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi

# Fingerprint the requested file, every file it includes with -r and pyproject.toml.
stamp="$venv/.installed-$(basename "$requirements").sha256"
fingerprint="$(cat "$requirements" requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$fingerprint" ]; then
    exit 0
fi

echo "setup: installing $requirements into $venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
# The engine itself, editable (pyproject.toml): `engine` imports from anywhere and pytest finds
# the scheduler_sim fixture that plugin authors' tests use.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e .
echo "$fingerprint" > "$stamp"
