"""`meetmem bench summaries-ami`: extractive, learned and lead-N summaries of AMI meetings, scored against the
annotators' chosen utterances and abstract.

Two tiny meetings in AMI's published format, written into tmp_path (../shared is never needed); the learned
arm runs the shipped head on the real MiniLM.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rouge_score import rouge_scorer

from meetmem.eval.corpora.ami_summaries import abstract_text, lead_lines, run
from meetmem.eval.harness import BenchDataError
from meetmem.store.records import Segment
from meetmem.summarizers.ledger_learned import UtteranceScorer
from meetmem.summarizers.summary_learned import ends_mid_clause

# (speaker, words) per dialogue act; the starred ones are the annotators' extractive summary.
FIRST = [
    ("A", "Okay, um, good morning everybody."),
    ("A", "*We are here to design a new remote control for the television."),
    ("B", "Mm-hmm."),
    ("A", "*The selling price is twenty five Euros and the production cost is twelve fifty."),
    ("C", "Yeah."),
    ("B", "*Customers don't like the way remote controls look,"),
    ("B", "*so we want something fancy and easy to use."),
    ("D", "Uh, right."),
    ("C", "I think we should use a rubber casing because"),
    ("A", "Okay."),
    ("C", "the rubber is cheaper and it does not break when you drop it."),
    ("D", "*The battery should last for two years at least."),
]
SECOND = [
    ("A", "Right, um, let's look at the prototype."),
    ("B", "*The prototype is yellow and shaped like a banana."),
    ("C", "Mm."),
    ("B", "*It has only four buttons and a scroll wheel."),
    ("D", "Sounds good to me."),
]


def _meeting(meeting_id: str, acts: list[tuple[str, str]], abstract: list[str]) -> dict[str, Any]:
    rows, chosen = [], []
    for n, (speaker, text) in enumerate(acts):
        act_id = f"{meeting_id}.{n}"
        if text.startswith("*"):
            chosen.append(act_id)
            text = text[1:]
        rows.append({"id": act_id, "speaker": speaker, "start": 5.0 * n, "end": 5.0 * n + 4.5, "da_type": "inf",
                     "text": text})
    return {"meeting_id": meeting_id, "dialogue_acts": rows, "extractive_summary_da_ids": chosen,
            "abstractive_summary": {"abstract": [{"text": t, "evidence_da_ids": []} for t in abstract],
                                    "actions": [], "decisions": [], "problems": []}}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ami") / "ami"
    (folder / "dev").mkdir(parents=True)
    meetings = [
        _meeting("XX0001a", FIRST, ["The project manager introduced the remote control project.",
                                    "The selling price is twenty five Euros.", "NA."]),
        _meeting("XX0001b", SECOND, ["The team looked at a yellow prototype shaped like a banana."]),
        _meeting("XX0001c", [], ["NA."]),  # no dialogue acts (as IB4005 in AMI dev): left out
    ]
    for meeting in meetings:
        (folder / "dev" / f"{meeting['meeting_id']}.json").write_text(json.dumps(meeting), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def report(data: Path, embedder: Any) -> dict[str, Any]:
    return run(data, half="all", sections="minilm", scorer=UtteranceScorer(embedder=embedder))


def test_every_arm_is_scored_at_both_levels(report: dict[str, Any]) -> None:
    assert report["meetings"] == 2 and report["meetings_with_abstract"] == 2
    assert report["learned_version"]
    for arm in ("extractive", "learned", "lead"):
        for level in ("l1", "l2"):
            figures = report[arm][level]
            for averaging in ("micro", "macro"):
                for value in figures["cited"][averaging].values():
                    assert value is None or 0.0 <= value <= 1.0
                for value in figures["rouge_f"][averaging].values():
                    assert 0.0 <= value <= 1.0
            assert figures["lines"] >= 2
    learned = report["learned"]["l1"]
    assert learned["lines_ending_mid_clause"] == 0 and learned["duplicate_lines"] == 0
    assert report["learned"]["seconds_per_meeting_hour"] > 0
    assert set(report["targets"]) == {"l1", "l2"}


def test_lead_takes_the_first_utterances_up_to_the_learned_word_count(report: dict[str, Any]) -> None:
    for meeting_id, row in report["per_meeting"]["lead"]["l1"].items():
        learned_words = report["per_meeting"]["learned"]["l1"][meeting_id]["words"]
        assert row["words"] >= learned_words


def test_figures_on_one_meeting_match_rouge_score_and_the_gold_by_hand(data: Path, embedder: Any) -> None:
    one = run(data, half="all", meetings=["XX0001b"], sections="pauses", scorer=UtteranceScorer(embedder=embedder))
    lead = one["lead"]["l1"]
    row = one["per_meeting"]["lead"]["l1"]["XX0001b"]
    # lead cites the first acts; of those, the annotators chose XX0001b.1 and .3
    cited = row["cited"]
    chosen = sum(1 for n in range(cited) if n in (1, 3))
    assert row["cited_gold"] == chosen and lead["cited"]["micro"]["precision"] == round(chosen / cited, 4)
    assert lead["cited"]["micro"]["recall"] == round(chosen / 2, 4)
    # micro over one meeting is the meeting's own ROUGE F, as rouge-score computes it with stemming
    words = row["words"]
    texts, total = [], 0
    for _, text in SECOND:
        if total >= words:
            break
        texts.append(text.lstrip("*"))
        total += len(text.split())
    expected = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True).score(
        "The team looked at a yellow prototype shaped like a banana.", " ".join(texts))["rouge2"].fmeasure
    assert lead["rouge_f"]["micro"]["rouge2"] == pytest.approx(expected, abs=1e-4)
    assert lead["rouge_f"]["macro"]["rouge2"] == pytest.approx(expected, abs=1e-4)


def test_abstract_and_lead_helpers() -> None:
    assert abstract_text({"abstractive_summary": {"abstract": [{"text": "NA."}, {"text": "They met. "}]}}) \
        == "They met."
    segments = [Segment(f"s{i}", "t", "m", "d", i, float(i), i + 0.5, text, "A", "en", None, None, None, "", i, "",
                        "") for i, text in enumerate(["one two three", "four five", "six"])]
    assert [line.text for line in lead_lines(segments, 4)] == ["one two three", "four five"]
    assert ends_mid_clause("the remote and")


def test_no_meeting_in_the_half_is_a_bench_error(data: Path) -> None:
    with pytest.raises(BenchDataError):
        run(data, half="report")


def test_the_command_prints_one_json_object(data: Path, run_cli: Any) -> None:
    result = run_cli("bench", "summaries-ami", "--data", str(data), "--half", "all", "--meetings", "XX0001b",
                     "--sections", "pauses", "--json", "-q", db=None, embedder=None)
    assert result.returncode == 0, result.stderr
    out = result.json()
    assert out["benchmark"] == "ami_summaries" and out["meetings"] == 1 and "per_meeting" not in out
