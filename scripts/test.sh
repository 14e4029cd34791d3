#!/usr/bin/env bash
# Set up meetmem with the development extras in .venv and run the whole test suite.
set -euo pipefail
source "$(dirname "$0")/venv.sh" cloud,dev
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
