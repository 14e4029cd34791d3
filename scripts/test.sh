#!/usr/bin/env bash
# Set up meetmem with every extra the tests use in .venv, and the system tools that make test speech
# (espeak-ng, sox) and drive the meeting app in a real browser (Debian's chromium, which Playwright
# launches by path: no browser download), then run the whole test suite.
# llm-server builds llama.cpp from source (about 6 minutes on 2 cores, only when it is not installed yet).
set -euo pipefail
if ! command -v espeak-ng >/dev/null 2>&1 || ! command -v sox >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1 \
        || ! command -v calcurse >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # calcurse: a calendar program that imports the todos `export --format ics` writes (tests/store/test_calendar.py).
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq espeak-ng sox calcurse >/dev/null
    # The browser tests skip, saying why, where chromium cannot be installed.
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null \
        || echo "scripts/test.sh: chromium could not be installed; the browser tests will be skipped" >&2
fi
# A portable llama.cpp build: the default native one crashes on x86 machines with AVX-512.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF}"
source "$(dirname "$0")/venv.sh" cloud,edge,frame,dev,llm-server,postgres
.venv/bin/ruff check .
# One worker per core and one more (pytest-xdist): many tests wait on a process they started (a server, the
# CLI, an edge, a browser), and the extra worker runs meanwhile. Each test file runs on one worker (its module
# fixtures built once), each worker with its own bundled PostgreSQL and temporary folders; the longest files
# start first (tests/durations.json). MEETMEM_TEST_WORKERS=0 runs in one process; -m "not slow" is the fast tier.
WORKERS="${MEETMEM_TEST_WORKERS:-$(( $(nproc) + 1 ))}"
exec .venv/bin/python -m pytest -q -n "$WORKERS" --dist loadfile "$@"
