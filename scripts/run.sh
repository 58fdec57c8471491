#!/usr/bin/env bash
# Run the app at http://127.0.0.1:8000/ (Daphne-backed runserver: HTTP, WebSockets, static).
# ADDR overrides the address, e.g. ADDR=0.0.0.0:8000 bash scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh requirements.txt
.venv/bin/python manage.py migrate --noinput
exec .venv/bin/python manage.py runserver "${ADDR:-127.0.0.1:8000}"
