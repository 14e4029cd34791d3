"""`meetmem bench roles`: role mentions resolved to AMI speaker letters, against the summaries' evidence.

Two meetings of one series in AMI's published format, written into tmp_path (../shared is never needed): the
project manager (A) and the marketing expert (B) introduce themselves in the first; the second's summary names
the project manager, the marketing expert and the industrial designer (D, who never says so). No model loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from meetmem.cli import main
from meetmem.eval.corpora.ami_roles import reference_roles, run, subject_role

# ES2002 is in the report half (eval.training.ami_split).
FIRST = [
    ("A", "Good morning everyone, I'm the project manager."),
    ("B", "Hi, I'm the marketing expert."),
    ("C", "Hello."),
    ("D", "Morning."),
    ("A", "Let's go through the agenda."),
    ("A", "Marketing, please look at what users want."),
    ("B", "I'll look at the market."),
]
SECOND = [
    ("A", "Okay, let's open the meeting."),
    ("A", "First the minutes of last time."),
    ("B", "Market research says people want fancy remotes."),
    ("B", "And they want it easy to use."),
    ("C", "I agree with that."),
    ("C", "Fancy and easy, yes."),
    ("C", "Definitely."),
    ("D", "The components are a battery, a chip and a case."),
    ("D", "The chip is the expensive part."),
]


def _meeting(meeting_id: str, acts: list[tuple[str, str]], summary: dict[str, list[tuple[str, list[int]]]]
             ) -> dict[str, Any]:
    ids = [f"{meeting_id}.{speaker}.dialog-act.test.{n}" for n, (speaker, _) in enumerate(acts)]
    return {
        "meeting_id": meeting_id,
        "dialogue_acts": [{"id": ids[n], "speaker": speaker, "start": 5.0 * n, "end": 5.0 * n + 4, "da_type": "inf",
                           "text": text} for n, (speaker, text) in enumerate(acts)],
        "abstractive_summary": {section: [{"id": f"{meeting_id}.s.{section}.{k}", "text": text,
                                           "evidence_da_ids": [ids[n] for n in evidence]}
                                          for k, (text, evidence) in enumerate(sentences)]
                                for section, sentences in summary.items()},
        "extractive_summary_da_ids": [],
    }


def write_series(folder: Path) -> Path:
    first = _meeting("ES2002a", FIRST, {
        # Another actor than the role (the team): skipped, though its evidence would make B the project manager.
        "abstract": [("The project manager opened the meeting and the team introduced themselves.", [1, 6])],
        "actions": [("The marketing expert will study what users want.", [4, 5])],  # the chair's words: skipped
        "decisions": [], "problems": []})
    second = _meeting("ES2002b", SECOND, {
        "abstract": [("The Project Manager opened the meeting.", [0, 1]),
                     ("The ME presented the market research.", [2, 3]),
                     ("The project manager and the marketing expert agreed on a fancy remote.", [4, 5, 6]),
                     ("The Industrial Designer presented the components.", [7, 8]),
                     ("NA.", [])],
        "actions": [], "decisions": [], "problems": []})
    (folder / "dev").mkdir(parents=True)
    for meeting in (first, second):
        (folder / "dev" / f"{meeting['meeting_id']}.json").write_text(json.dumps(meeting), encoding="utf-8")
    return folder


@pytest.mark.parametrize(("text", "role"), [
    ("The Project Manager opened the meeting.", "PM"),
    ("The PM recapped the decisions.", "PM"),
    ("The ME presented the market research.", "ME"),
    ("The marketing executive will work on the requirements.", "ME"),
    ("Then the interface specialist presented the options.", "UI"),
    ("The User Interface Designer will work on the functions.", "UI"),
    ("The industrial designer discussed the components.", "ID"),
    ("The project manager and the marketing expert agreed.", None),
    ("The Project Manager instructed the ID to work on the case.", None),
    ("The project manager recapped and two team members presented their prototype.", None),
    ("The remote will be yellow.", None),
    ("Me and the project manager agreed.", None),
])
def test_the_subject_of_a_summary_sentence(text: str, role: str | None) -> None:
    assert subject_role(text) == role


def test_the_reference_takes_the_evidence_of_sentences_about_one_role(tmp_path: Path) -> None:
    folder = write_series(tmp_path / "ami")
    first = json.loads((folder / "dev" / "ES2002a.json").read_text(encoding="utf-8"))
    second = json.loads((folder / "dev" / "ES2002b.json").read_text(encoding="utf-8"))
    assert reference_roles(first)[0] == {}
    found, evidence = reference_roles(second)
    assert found == {"PM": "A", "ME": "B", "ID": "D"}
    assert evidence["PM"] == {"letters": {"A": 2}, "sentences": 1, "letter": "A"}


def test_the_benchmark_scores_the_mentions(tmp_path: Path) -> None:
    report = run(write_series(tmp_path / "ami"))
    assert report["meetings"] == 2 and report["series"] == 1
    assert report["reference"]["pairs"] == 3 and report["reference"]["pairs_by_half"] == {"tune": 0, "report": 3}
    half = report["report"]
    assert half["overall"]["asked"] == 2 * 8 and report["tune"]["overall"]["asked"] == 0
    # The introductions of ES2002a name the project manager and the marketing expert in ES2002b too.
    for mention in ("project manager", "marketing expert", "marketing"):
        figures = half["by_mention"][mention]
        assert figures["resolved"] == 2 and figures["with_reference"] == 1, mention
        assert figures["accuracy"] == 1.0 and figures["precision"] == 1.0, mention
    # D never says what they do: "industrial designer" stays unresolved, and is listed as a miss.
    assert half["by_mention"]["industrial designer"] == {
        "asked": 2, "resolved": 0, "resolved_share": 0.0, "with_reference": 1, "correct": 0, "accuracy": 0.0,
        "precision": None}
    assert {"meeting": "ES2002b", "mention": "industrial designer", "role": "ID", "got": None, "expected": "D",
            "why": None} in report["report_misses"]
    assert report["report_misses_total"] == len(report["report_misses"])


def test_the_command_prints_one_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_series(tmp_path / "ami")
    assert main(["bench", "roles", "--data", str(folder), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and json.loads(out)["benchmark"] == "ami_roles"
    assert main(["bench", "roles", "--data", str(folder)]) == 0  # without --json: the figures for a person
    assert "benchmark: ami_roles" in capsys.readouterr().out.splitlines()
    assert main(["bench", "roles", "--data", str(tmp_path / "missing")]) == 2
