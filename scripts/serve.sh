#!/usr/bin/env bash
# Installs hms-cache-proxy into .venv (once) and starts it: thrift://0.0.0.0:9083 on the
# embedded SQLite database ./hms-cache-proxy.db, created on first start.
# Arguments are passed to `hms-cache-proxy serve` (see `hms-cache-proxy serve --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
exec .venv/bin/hms-cache-proxy serve "$@"
