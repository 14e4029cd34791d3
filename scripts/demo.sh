#!/usr/bin/env bash
# Set up meetmem in .venv (embedded default: SQLite and in-process indexes) and run the demo.
set -euo pipefail
source "$(dirname "$0")/venv.sh" cloud
exec .venv/bin/meetmem demo "$@"
