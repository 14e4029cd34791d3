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
