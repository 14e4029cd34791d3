#!/usr/bin/env bash
# Set up meetmem with every extra the tests use in .venv, and the system tools that make test speech
# (espeak-ng, sox), then run the whole test suite.
set -euo pipefail
if ! command -v espeak-ng >/dev/null 2>&1 || ! command -v sox >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq espeak-ng sox >/dev/null
fi
source "$(dirname "$0")/venv.sh" cloud,edge,dev
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
