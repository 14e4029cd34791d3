"""The edge installs on a Raspberry Pi with the `edge` extra alone: its stages run with torch, FastAPI,
faiss, sentence-transformers, the cloud and the search index blocked from import."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BLOCKED = ("torch", "fastapi", "faiss", "sentence_transformers", "transformers", "uvicorn", "meetmem.cloud",
           "meetmem.store.index")

SCRIPT = textwrap.dedent('''
    import importlib.abc, sys

    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError(f"{{name}} is blocked on the edge")
            return None

    sys.meta_path.insert(0, Block())

    import numpy as np
    from meetmem.edge import asr, audio, cleaning, errors, models, vad

    samples = np.concatenate(list(audio.read_file({clip!r})))
    utterances = vad.segment(samples)
    assert len(utterances) == 1, utterances
    assert cleaning.clean("Um, we ship on March 3rd.").text == "We ship on March 3rd."
    if {load_model!r}:
        recogniser = asr.WhisperASR(asr.ASROptions(model="tiny.en", cpu_threads=1))
        pieces = recogniser.transcribe(utterances[0].audio, offset=utterances[0].start)
        assert pieces, "no text"
    loaded = [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]
    assert not loaded, loaded
    print("ok")
''')


def _run(clip: Path, load_model: bool) -> subprocess.CompletedProcess[str]:
    script = SCRIPT.format(blocked=BLOCKED, clip=str(clip), load_model=load_model)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_edge_stages_run_without_the_cloud_packages(budget_speech) -> None:
    proc = _run(budget_speech.path, load_model=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


@pytest.mark.model
def test_whisper_runs_without_the_cloud_packages(budget_speech) -> None:
    proc = _run(budget_speech.path, load_model=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
