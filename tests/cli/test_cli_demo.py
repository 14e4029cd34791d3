"""`meetmem demo --json`: the bundled sample meeting through the real CLI and the real embedding model."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.model
def test_demo_json_answers_every_sample_question_with_timestamped_citations(
    meetmem_cli, sample_questions, sample_meeting_path: Path, tmp_path: Path
) -> None:
    result = meetmem_cli("demo", "--json", db=None, embedder=None, cwd=tmp_path)
    # The demo exits 1 when an answer lacks its expected value; that is a quality verdict (see
    # tests/cloud/test_answer.py), not a crash, and the exit status must agree with the JSON.
    assert result.returncode in (0, 1), result.stderr
    report = result.json()  # --json: exactly one JSON document on stdout, progress on stderr
    assert report["meeting_id"]
    assert report["segments"] == sum(1 for line in sample_meeting_path.read_text().splitlines() if line.strip())
    answers = report["answers"]
    assert [a["question"] for a in answers] == [q["question"] for q in sample_questions]
    for answer, item in zip(answers, sample_questions, strict=True):
        assert answer["kind"] in ("verbatim", "overview")
        assert isinstance(answer["answer"], str) and answer["answer"]
        assert 1 <= len(answer["citations"]) <= 10
        for citation in answer["citations"]:
            assert set(citation) == {"segment_id", "start", "end", "speaker", "text"}
            assert citation["segment_id"].startswith("s_")
            assert isinstance(citation["start"], float) and isinstance(citation["end"], float)
            assert 0 <= citation["start"] <= citation["end"]
        assert answer["found"] == (item["expected"].casefold() in answer["answer"].casefold())
    assert (result.returncode == 0) == all(a["found"] for a in answers)
    assert "answering" in result.stderr  # progress goes to stderr
    stored = {c["segment_id"] for a in answers for c in a["citations"]}
    assert report["summary"]["final"] and report["summary"]["l2"]
    assert any(d["text"].endswith("TS-204 and order 500 units for the first batch.")
               for d in report["ledger"]["decisions"])
    assert report["overview"]["kind"] == "overview" and "Decisions:" in report["overview"]["answer"]
    assert "To do:" in report["overview"]["answer"] and report["overview"]["citations"]
    assert stored
    assert list(tmp_path.iterdir()) == []  # a temporary database, nothing left in the working directory


def test_demo_serve_prints_the_page_and_a_token_and_serves_the_meeting_with_its_audio(
        cli_command: list[str], tmp_path: Path) -> None:
    import hashlib
    import os
    import subprocess
    import time

    import httpx

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEETMEM_EMBEDDER": "none"}
    env.pop("MEETMEM_DB", None)
    proc = subprocess.Popen([*cli_command, "demo", "--serve", "--port", "0", "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        url = token = None
        for line in proc.stdout:
            if line.startswith("The meeting app: "):
                url = line.split(": ", 1)[1].strip()
            if line.startswith("Sign-in token: "):
                token = line.split(":", 1)[1].strip()
                break
        assert url and token, proc.stderr.read() if proc.stderr else ""
        headers = {"Authorization": f"Bearer {token}"}
        deadline = time.monotonic() + 60
        while True:
            try:
                page = httpx.get(url, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)  # the server is binding its port; the deadline bounds the wait
        assert page.status_code == 200 and "meetmem" in page.text
        meetings = httpx.get(f"{url}v1/meetings", headers=headers, timeout=30).json()
        assert [m["meeting_id"] for m in meetings] == ["demo-launch-review"]
        audio = httpx.get(f"{url}v1/meetings/demo-launch-review/audio", headers=headers, timeout=30)
        shipped = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"
        assert audio.status_code == 200
        assert hashlib.sha256(audio.content).hexdigest() == hashlib.sha256(shipped.read_bytes()).hexdigest()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
