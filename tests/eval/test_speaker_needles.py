"""Speaker needles: "who said ...?" questions answered from a meeting stored with edge labels and a map."""

from __future__ import annotations

from pathlib import Path

from meetmem.eval.needles.generator import generate
from meetmem.eval.needles.speakers import as_edge_labels, evaluate, speaker_questions


def test_questions_labels_and_a_bm25_run(tmp_path: Path) -> None:
    meeting = generate(0.25, seed=11)
    questions = speaker_questions(meeting)
    assert questions and all(q.question.startswith("Who said") for q in questions)
    negations = [q for q in questions if q.needle.kind == "negation"]
    assert all(q.needle.values["vendor"] in q.question for q in negations)
    labelled, names = as_edge_labels(meeting)
    assert {row["speaker"] for row in labelled.segments} == set(names)
    assert set(names.values()) == {row["speaker"] for row in meeting.segments}
    result = evaluate(meeting, db_path=tmp_path / "n.db", routes=None)
    assert result["questions"] == len(questions)
    assert result["speaker_at_1"] >= 0.7, result["wrong"]
    assert result["speaker_at_5"] >= result["speaker_at_1"]
