#!/usr/bin/env bash
# Run the app at http://127.0.0.1:8000/ (Daphne-backed runserver: HTTP, WebSockets, static).
#
#   bash scripts/run.sh            this machine only (127.0.0.1)
#   bash scripts/run.sh --class    a class: serve on every interface (0.0.0.0) so phones on the
#                                  same network can join; the machine's own host name and
#                                  addresses become allowed hosts (VISUALIZER_CLASS_MODE=1, see
#                                  visualizer/classroom.py) and the presenter page's join link
#                                  and QR code carry one of those addresses (or CLASS_HOST)
#
# PORT sets the port (default 8000); ADDR overrides the whole address, e.g. ADDR=127.0.0.1:9000.
# RUN_SH_DRY_RUN=1 prints the class-mode setting and the server command instead of setting up
# and running anything (tests/visualizer/test_classroom_mode.py uses it).
# SCHEDULER_PLUGINS=path/to/my_plugin.py[,other.py,my.module] loads out-of-tree plugins at start;
# relative paths are taken from where you run this script (the server runs in the project root).
# Unset, it loads the example plugins the lessons use (docs/examples/coscheduling.py, lesson 20);
# set it (even to "") to load only what you list.
# DATABASE_URL=postgres://user:password@host:5432/name uses that PostgreSQL database instead of the
# SQLite file db.sqlite3 (migrated here all the same; README.md "Run on PostgreSQL").
# SCHEDULER_EXTENDERS=http://127.0.0.1:8888/scheduler[,...] lets sessions call those scheduler
# extenders (the urlPrefix values allowed; docs/extenders.md): passed on as it is.
set -euo pipefail

usage="usage: bash scripts/run.sh [--class]"
class_mode=0
for arg in "$@"; do
  case "$arg" in
    --class) class_mode=1 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "run.sh: unknown argument: $arg" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
if [ "$class_mode" = 1 ]; then
  addr="${ADDR:-0.0.0.0:${PORT:-8000}}"
  export VISUALIZER_CLASS_MODE=1
else
  addr="${ADDR:-127.0.0.1:${PORT:-8000}}"
fi

if [ -z "${SCHEDULER_PLUGINS+set}" ]; then
  SCHEDULER_PLUGINS="$(cd "$(dirname "$0")/.." && pwd)/docs/examples/coscheduling.py"
fi

if [ -n "${SCHEDULER_PLUGINS:-}" ]; then
  resolved=""
  IFS=',' read -r -a specs <<< "$SCHEDULER_PLUGINS"
  for spec in "${specs[@]}"; do
    spec="${spec#"${spec%%[![:space:]]*}"}"
    spec="${spec%"${spec##*[![:space:]]}"}"
    [ -z "$spec" ] && continue
    case "$spec" in
      /*) ;;
      "~/"*) spec="$HOME/${spec#"~/"}" ;;
      *.py|*/*) spec="$PWD/$spec" ;;
    esac
    resolved="${resolved:+$resolved,}$spec"
  done
  export SCHEDULER_PLUGINS="$resolved"
fi

cd "$(dirname "$0")/.."

if [ "${RUN_SH_DRY_RUN:-0}" = 1 ]; then
  echo "VISUALIZER_CLASS_MODE=${VISUALIZER_CLASS_MODE:-}"
  echo ".venv/bin/python manage.py runserver $addr"
  exit 0
fi

bash scripts/setup.sh requirements.txt
.venv/bin/python manage.py migrate --noinput
if [ "$class_mode" = 1 ]; then
  port="${addr##*:}"
  echo "class mode: serving on $addr; open http://127.0.0.1:$port/ here and start a session:" \
       "phones join by the link and QR code on its page (Join code (QR))." >&2
  echo "class mode: this machine's addresses: $(.venv/bin/python -m visualizer.classroom)" >&2
fi
exec .venv/bin/python manage.py runserver "$addr"
