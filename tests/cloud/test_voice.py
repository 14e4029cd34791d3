"""Spoken questions on the cloud: real speech (espeak-ng), the real Whisper base weights, the edge's ASR."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from meetmem.store.records import SegmentInput

Api = Any  # tests/cloud/conftest.py: a TestClient on a fresh app, with token helpers

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(not (shutil.which("espeak-ng") and shutil.which("sox")), reason="needs espeak-ng and sox"),
]

#: The spoken question's answer is the typed one's, from the store: asked on both. The rest is about decoding
#: audio before anything reaches the store, so it runs once (on SQLite), not twice with the Whisper model.
BACKENDS = ("sqlite", "postgres")

MEETING = "design-review"
QUESTION = "What does the tooling for the aluminium version cost?"


def _say(text: str, path: Path, *, rate: int = 16000, raw: bool = False) -> Path:
    spoken = path.with_suffix(".espeak.wav")
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(spoken), text], check=True, capture_output=True)
    out_type = ["-t", "raw", "-e", "signed-integer"] if raw else []
    subprocess.run(["sox", str(spoken), "-r", str(rate), "-c", "1", "-b", "16", *out_type, str(path), "pad", "0.3",
                    "0.3"], check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def question_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _say(QUESTION, tmp_path_factory.mktemp("voice") / "question.wav")


@pytest.fixture
def voice_api(make_api: Any, sample_device_and_segments: tuple[str, list[SegmentInput]],
              tmp_path_factory: pytest.TempPathFactory) -> tuple[Api, dict[str, str]]:
    api = make_api(voice_model="base")
    token = api.token("local")
    device_id, segments = sample_device_and_segments
    body = {"device_id": device_id, "segments": [{k: v for k, v in asdict(s).items() if v is not None}
                                                 for s in segments]}
    assert api.client.post(f"/v1/meetings/{MEETING}/segments", json=body, headers=api.headers(token)).status_code == 200
    # Both questions see the meeting indexed alike: until the background indexer has embedded the new rows they
    # rank by keywords alone, and a question asked meanwhile may cite other segments than one asked after.
    assert api.service.scheduler.indexer.wait_idle(120) and api.service.scheduler.summaries.wait_idle(120)
    return api, api.headers(token)


def _ask(api: Api, headers: dict[str, str], content: bytes, name: str = "q.wav", **form: Any) -> Any:
    return api.client.post(f"/v1/meetings/{MEETING}/ask/voice", headers=headers,
                           files={"file": (name, content, "application/octet-stream")}, data=form)


def test_a_spoken_question_gets_the_typed_answer(voice_api: tuple[Api, dict[str, str]], question_wav: Path) -> None:
    api, headers = voice_api
    r = _ask(api, headers, question_wav.read_bytes())
    assert r.status_code == 200, r.text
    got = r.json()
    assert "tooling" in got["transcribed_question"].lower()
    assert "$4,250" in got["answer"] and got["citations"] and got["kind"] == "verbatim"
    typed = api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": got["transcribed_question"]},
                            headers=headers).json()
    assert {k: v for k, v in got.items() if k != "transcribed_question"} == typed


@pytest.mark.backends("sqlite")
def test_raw_pcm_at_another_rate_is_resampled(voice_api: tuple[Api, dict[str, str]], tmp_path: Path) -> None:
    api, headers = voice_api
    pcm = _say(QUESTION, tmp_path / "question.raw", rate=44100, raw=True)
    r = _ask(api, headers, pcm.read_bytes(), name="question.raw", sample_rate="44100")
    assert r.status_code == 200, r.text
    assert "$4,250" in r.json()["answer"]


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize(("content", "form", "needle"), [
    (b"", {}, "empty"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt garbage", {}, "file"),
    (b"not audio at all\n" * 100, {}, "file"),
    (b"\x00\x01\x02", {"sample_rate": "16000"}, "16-bit"),
    (b"\x00\x00" * 16000, {"sample_rate": "300"}, "sample_rate"),
    (b"\x00\x00" * 16000, {"sample_rate": "16000"}, "no speech"),
])
def test_bad_audio_is_a_clear_422(voice_api: tuple[Api, dict[str, str]], content: bytes, form: dict[str, str],
                                  needle: str) -> None:
    api, headers = voice_api
    r = _ask(api, headers, content, **form)
    assert r.status_code == 422, r.text
    assert needle in r.json()["detail"]


@pytest.mark.backends("sqlite")
def test_without_a_recogniser_spoken_questions_are_503(make_api: Any, question_wav: Path) -> None:
    api = make_api(embedders=None)  # voice_model none
    token = api.token("acme")
    headers = api.headers(token)
    api.client.post("/v1/meetings/m/segments", headers=headers,
                    json={"device_id": "d", "segments": [{"seq": 0, "start": 0, "end": 1, "text": "hello"}]})
    r = api.client.post("/v1/meetings/m/ask/voice", headers=headers,
                        files={"file": ("q.wav", question_wav.read_bytes(), "audio/wav")})
    assert r.status_code == 503 and "voice_model" in r.json()["detail"]
    assert api.client.post("/v1/meetings/other/ask/voice", headers=headers,
                           files={"file": ("q.wav", b"x", "audio/wav")}).status_code == 404


_VOICE_PROBE = """
import json, sys
from importlib.metadata import packages_distributions
from pathlib import Path
before = set(sys.modules)  # what the interpreter loaded on its own (site hooks), not the voice path
from meetmem.cloud.voice import VoiceQuestions

voice = VoiceQuestions(sys.argv[1], threads=1)
voice.load()
text = voice.transcribe(Path(sys.argv[2]).read_bytes(), filename="q.wav")
dists = packages_distributions()
used = sorted({d for name in set(sys.modules) - before for d in dists.get(name.split(".")[0], [])})
print(json.dumps({"text": text, "distributions": used}))
"""


def _requirement_closure(requirements: list[str]) -> set[str]:
    """Every distribution the requirements pull in, through the installed packages' own metadata."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [(Requirement(r), set()) for r in requirements]
    while todo:
        req, extras = todo.pop()
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            for sub in requires(req.name) or []:
                todo.append((Requirement(sub), set(req.extras)))
        except PackageNotFoundError:
            continue
    return seen


def test_the_cloud_extra_carries_what_spoken_questions_need(question_wav: Path, repo_root: Path) -> None:
    """A server installed with `[cloud]` alone must answer /ask/voice (issue 16: it answered 503)."""
    import json
    import sys
    import tomllib

    from packaging.utils import canonicalize_name

    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    cloud = [r for r in project["optional-dependencies"]["cloud"] if not r.startswith("meetmem[")]
    closure = _requirement_closure(project["dependencies"] + cloud)
    probe = subprocess.run([sys.executable, "-c", _VOICE_PROBE, "base", str(question_wav)], capture_output=True,
                           text=True, timeout=300, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert probe.returncode == 0, probe.stderr[-3000:]
    result = json.loads(probe.stdout.splitlines()[-1])
    assert "tooling" in result["text"].lower()
    used = {canonicalize_name(d) for d in result["distributions"]} - {"meetmem"}
    missing = sorted(used - closure)
    assert not missing, f"spoken questions import {missing}, which the cloud extra does not install"
    assert "torch" in closure  # and the extra still pins the CPU torch beside them
