#!/usr/bin/env bash
# Run the app at http://127.0.0.1:8000/ (Daphne-backed runserver: HTTP, WebSockets, static).
# ADDR overrides the address, e.g. ADDR=0.0.0.0:8000 bash scripts/run.sh
# SCHEDULER_PLUGINS=path/to/my_plugin.py[,other.py,my.module] loads out-of-tree plugins at start;
# relative paths are taken from where you run this script (the server runs in the project root).
# Unset, it loads the example plugins the lessons use (docs/examples/coscheduling.py, lesson 20);
# set it (even to "") to load only what you list.
set -euo pipefail

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

bash scripts/setup.sh requirements.txt
.venv/bin/python manage.py migrate --noinput
exec .venv/bin/python manage.py runserver "${ADDR:-127.0.0.1:8000}"
