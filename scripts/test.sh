#!/usr/bin/env bash
# Run every test. Extra arguments go to pytest, e.g. bash scripts/test.sh -k library
#
# The browser tests drive Debian's chromium with Playwright (Playwright cannot download its
# own browser here) and one test runs two servers behind a redis-server: both are installed
# with apt-get when missing (needs root, or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    echo "test: installing ${missing[*]} with apt-get" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bash scripts/setup.sh requirements-dev.txt
exec .venv/bin/python -m pytest "$@"
