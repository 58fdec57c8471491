#!/usr/bin/env bash
# Run every test. Extra arguments go to pytest, e.g. bash scripts/test.sh -k library
#
# The browser tests drive Debian's chromium with Playwright (Playwright cannot download its
# own browser here), some tests run several servers behind a redis-server and PostgreSQL
# (tests/stack.py) and nginx (tests/proxy.py), and the database tests run a second time
# against a throw-away PostgreSQL server: chromium, redis-server, postgresql and nginx are
# installed with apt-get when missing (needs root, or sudo).
#
# PostgreSQL pass (issue 27): after the whole suite (SQLite), tests/pgserver.py starts a
# PostgreSQL server on 127.0.0.1 on a free port (a temporary directory, fsync off; as root it
# runs as the user nobody) and every test of tests/visualizer but the browser ones runs again
# with DATABASE_URL pointing at it (about 2.5 minutes); the server is stopped after.
#   TEST_POSTGRES=0   skip that pass
#   TEST_POSTGRES=1   run it even when arguments are given (then with those arguments)
# By default it runs only without arguments (a full run, as CI's .ci/run does).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || missing+=(nginx)
if [ "${TEST_POSTGRES:-auto}" != 0 ] && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null \
   && ! command -v initdb >/dev/null 2>&1; then
    missing+=(postgresql)
fi
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
status=0
.venv/bin/python -m pytest "$@" || status=$?

postgres="${TEST_POSTGRES:-auto}"
if [ "$postgres" = auto ]; then
    postgres=$([ "$#" -eq 0 ] && echo 1 || echo 0)
fi
if [ "$postgres" = 1 ]; then
    read -r pgdir pgurl < <(.venv/bin/python tests/pgserver.py start) || true
    if [ -z "${pgurl:-}" ]; then
        echo "test: the PostgreSQL server did not start (above)" >&2
        exit 1
    fi
    trap '.venv/bin/python tests/pgserver.py stop "$pgdir"' EXIT
    echo "test: the database tests again on PostgreSQL ($pgurl)" >&2
    if [ "$#" -eq 0 ]; then
        set -- tests/visualizer -m "not browser"
    fi
    DATABASE_URL="$pgurl" .venv/bin/python -m pytest -q "$@" || status=$?
fi
exit "$status"
