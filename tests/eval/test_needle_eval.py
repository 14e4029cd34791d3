"""`meetmem eval run` and `needle_eval.evaluate`: the figures' keys, the baselines, and the CI guard on
meetmem's needle recall (it must fail when recall drops)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from meetmem.eval.needles.baselines import sliding_window
from meetmem.eval.needles.evaluation import evaluate, table
from meetmem.eval.needles.records import Needle, NeedleMeeting, NeedleQuestion
from meetmem.eval.needles.scoring import METHODS, holds, normalised
from meetmem.eval.needles.talk import background_line, topics

SPEAKERS = ("Ana", "Ben", "Chloe", "Dev")
SEGMENTS = 420
STEP_S = 3.0

#: (segment index, kind, text, values, questions as (question, expected), index of the corrected segment)
PLANTED: tuple[tuple[int, str, str, dict[str, str], tuple[tuple[str, str], ...], int | None], ...] = (
    (18, "todo", "Priya will send the revised casing drawings to the factory by Thursday the 14th.",
     {"owner": "Priya", "task": "send the revised casing drawings to the factory", "due": "Thursday the 14th"},
     (("Who is getting the updated casing drawings over to the factory?", "Priya"),
      ("By what date do the revised drawings have to reach the factory?", "Thursday the 14th")), None),
    (47, "money", "The tooling quote from Hartley Moulds came in at $18,400 all in.", {"amount": "$18,400"},
     (("How much did Hartley Moulds want for the tooling?", "$18,400"),), None),
    (76, "quantity", "For the pilot run we need 2,500 units off the line.", {"quantity": "2,500 units"},
     (("How many units does the pilot batch need?", "2,500"),), None),
    (103, "datetime", "The radio certification test is booked for March 3rd at 9:30 am.",
     {"date": "March 3rd", "time": "9:30 am"},
     (("When is the radio certification slot at the lab?", "March 3rd"),), None),
    (131, "name", "Internally we're calling the new headset Project Kestrel.", {"name": "Project Kestrel"},
     (("What code name did the team give the new headset?", "Kestrel"),), None),
    (158, "quote", "Dana said, and I quote, no firmware ships without a signed build.",
     {"quote": "no firmware ships without a signed build"},
     (("What exactly did Dana say about shipping firmware?", "no firmware ships without a signed build"),), None),
    (207, "negation", "We are not using the Shenzhen supplier for the lenses anymore.", {"supplier": "Shenzhen"},
     (("Which lens supplier did we stop using?", "Shenzhen"),), None),
    (266, "correction", "Correction on the design review: it moved to Friday, not Wednesday.", {"day": "Friday"},
     (("What day is the design review now?", "Friday"),), 240),
    (311, "todo", "Marco is going to book the factory audit before the end of the month.",
     {"owner": "Marco", "task": "book the factory audit", "due": "the end of the month"},
     (("Who is booking the factory audit?", "Marco"),), None),
    (372, "money", "The freight estimate is €3,200 per container from the port.", {"amount": "€3,200"},
     (("What's the freight cost per container?", "€3,200"),), None),
)
ORIGINAL = {240: "The design review is on Wednesday afternoon."}


def short_meeting(seed: int = 7) -> NeedleMeeting:
    """A hand-built 21-minute English meeting: topic talk, backchannel and logistics around ten needles."""
    rng = random.Random(seed)
    planted = {p[0]: p for p in PLANTED}
    rows: list[dict[str, Any]] = []
    talk = topics("en")
    topic = talk[0]
    for i in range(SEGMENTS):
        if i % 60 == 0:
            topic = talk[(i // 60) % len(talk)]
        if i in planted:
            text = planted[i][2]
        elif i in ORIGINAL:
            text = ORIGINAL[i]
        else:
            text = background_line(rng, "en", topic, SPEAKERS)
        rows.append({"start": round(i * STEP_S, 2), "end": round(i * STEP_S + STEP_S * 0.9, 2), "text": text,
                     "speaker": SPEAKERS[i % len(SPEAKERS)], "lang": "en"})
    needles = tuple(Needle(kind, "en", index, text, values, tuple(NeedleQuestion(q, a) for q, a in questions),
                           corrects)
                    for index, kind, text, values, questions, corrects in PLANTED)
    return NeedleMeeting("en", seed, round(SEGMENTS * STEP_S / 3600, 3), tuple(rows), needles, tuple(ORIGINAL))


@pytest.fixture(scope="module")
def meeting() -> NeedleMeeting:
    return short_meeting()


@pytest.fixture(scope="module")
def bm25_result(meeting: NeedleMeeting, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(meeting, db_path=tmp_path_factory.mktemp("needles-bm25") / "eval.db", routes=None)


@pytest.mark.parametrize(("text", "expected", "lang", "found"), [
    ("It came in at  $18,400\nall in.", "$18,400 all in", "en", True),
    ("Owner: PRIYA", "priya", "en", True),
    ("由 小 王 负责", "小王负责", "zh", True),
    ("周五 之前 交付", "周五之前", "zh", True),
    ("moved to Friday", "Wednesday", "en", False),
    ("anything", "", "en", False),
])
def test_an_answer_holds_the_expected_value_folded(text: str, expected: str, lang: str, found: bool) -> None:
    assert holds(text, expected, lang) is found


def test_normalised_keeps_english_words_apart() -> None:
    assert normalised("  Project\tKestrel ") == "project kestrel"


def test_the_result_has_the_documented_keys(bm25_result: dict[str, Any]) -> None:
    assert set(bm25_result) == {"meeting", "config", "build", "methods", "drift", "ledger", "by_kind", "by_lang",
                                "by_wording", "by_method", "misses", "wall_s"}
    methods = bm25_result["methods"]
    assert set(methods) == set(METHODS)
    assert methods["dense"] is None  # no model: no dense row, not a zero
    assert {"recall_at_k", "exact_answer_rate", "prompt_tokens", "prefix_reuse", "ask_latency"} <= set(
        methods["meetmem"])
    assert {"p50_ms", "p95_ms"} <= set(methods["meetmem"]["ask_latency"])
    assert set(bm25_result["drift"]) >= {"raw_retrieval", "l1", "l2", "raw_log"}
    assert set(bm25_result["ledger"]) == {"todo", "traceability"}
    assert {"precision", "recall"} <= set(bm25_result["ledger"]["todo"])
    rows = {row["method"]: row for row in bm25_result["by_method"]}
    assert set(rows) == set(METHODS) - {"dense"}
    for row in rows.values():
        assert set(row) == {"method", "recall_at_k", "tokens_per_question"}
        assert row["tokens_per_question"] > 0
    assert set(bm25_result["by_kind"]) == {p[1] for p in PLANTED}
    assert set(bm25_result["by_lang"]) == {"en"}
    assert bm25_result["meeting"]["questions"] == sum(len(p[4]) for p in PLANTED)
    json.dumps(bm25_result)  # all plain data


def test_the_baselines_measure_what_they_say(bm25_result: dict[str, Any], meeting: NeedleMeeting) -> None:
    methods = bm25_result["methods"]
    window = methods["sliding_window"]
    # The meeting is longer than the window, so the window starts after the early needles.
    assert bm25_result["meeting"]["transcript_tokens"] > window["limit_tokens"] >= window["tokens"]
    assert 0 < window["segments"] < len(meeting.segments)
    assert methods["sliding_window"]["recall"] < 1.0
    full = methods["full_transcript"]
    assert full["fits_128k"] and full["recall"] == 1.0
    assert full["tokens_per_question"] > bm25_result["meeting"]["transcript_tokens"]
    assert methods["meetmem"]["prompt_tokens"]["max"] <= 4000
    assert methods["meetmem"]["prompt_tokens"]["mean"] < full["tokens_per_question"]
    assert bm25_result["drift"]["raw_log"] == 1.0  # every expected value was said
    trace = bm25_result["ledger"]["traceability"]
    assert all(layer["share"] in (None, 1.0) for layer in trace.values())


def test_the_sliding_window_takes_the_newest_segments_that_fit() -> None:
    class Seg:
        def __init__(self, sid: str) -> None:
            self.segment_id = sid

    segments = [Seg(str(i)) for i in range(5)]
    window = sliding_window(segments, 25, costs=[10, 10, 10, 10, 10])
    assert window.segment_ids == {"3", "4"} and window.tokens == 20


def test_meetmem_beats_the_window_and_the_rolling_summary_bm25(bm25_result: dict[str, Any]) -> None:
    recall = {row["method"]: row["recall_at_k"] for row in bm25_result["by_method"]}
    assert recall["meetmem"] >= recall["sliding_window"]
    assert recall["meetmem"] >= recall["rolling_summary"]


def test_eval_run_prints_json_and_a_table(meeting: NeedleMeeting, tmp_path: Path, run_cli: Any) -> None:
    folder = tmp_path / "needles"
    meeting.write(folder)
    result = run_cli("eval", "run", "--folder", str(folder), "--json", db=None)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["evaluation"] == "needles" and report["config"]["k"] == 5
    assert report["by_method"][0]["method"] == "meetmem"
    assert "questions:" in result.stderr  # progress on stderr, stdout is the JSON alone
    shown = run_cli("eval", "run", "--folder", str(folder), "--k", "3", "-q", db=None)
    assert shown.returncode == 0, shown.stderr
    assert "recall@3" in shown.stdout and "sliding_window" in shown.stdout and shown.stderr == ""
    missing = run_cli("eval", "run", "--folder", str(tmp_path / "nowhere"), db=None)
    assert missing.returncode == 2 and "needle meeting" in missing.stderr


def test_eval_run_refuses_an_existing_database(meeting: NeedleMeeting, tmp_path: Path, run_cli: Any) -> None:
    folder = tmp_path / "needles"
    meeting.write(folder)
    existing = tmp_path / "old.db"
    existing.write_bytes(b"")
    result = run_cli("eval", "run", "--folder", str(folder), db=existing)
    assert result.returncode == 2 and "exists" in result.stderr


def test_the_table_names_every_method(bm25_result: dict[str, Any]) -> None:
    text = table(bm25_result)
    for row in bm25_result["by_method"]:
        assert row["method"] in text


@pytest.mark.model
def test_ci_guard_meetmem_recall_at_5_on_a_short_meeting(meeting: NeedleMeeting, embedder: Any,
                                                          tmp_path: Path) -> None:
    """The issue's CI guard: on a short English meeting, meetmem (hybrid, the real model) finds the needle's
    segment among its first 5 citations for at least 90% of the questions, and beats the baselines."""
    from meetmem.store.index.embedder_routes import EmbedderRoutes

    result = evaluate(meeting, db_path=tmp_path / "eval.db", routes=EmbedderRoutes(embedder), k=5)
    recall = {row["method"]: row["recall_at_k"] for row in result["by_method"]}
    assert recall["meetmem"] >= 0.9, result["misses"]
    assert recall["meetmem"] >= recall["sliding_window"]
    assert recall["meetmem"] >= recall["rolling_summary"]
    assert result["methods"]["dense"]["recall_at_k"] is not None


@pytest.mark.model
def test_ci_guard_on_a_generated_ten_minute_meeting(embedder: Any, tmp_path: Path) -> None:
    """The same guard on the needle generator's 10-minute English text meeting, once the generator exists."""
    needles = pytest.importorskip("meetmem.eval.needles.generator", reason="the needle generator is not written yet")
    from meetmem.store.index.embedder_routes import EmbedderRoutes

    generated = needles.generate(10 / 60, lang="en", seed=7)
    result = evaluate(generated, db_path=tmp_path / "eval.db", routes=EmbedderRoutes(embedder), k=5)
    recall = {row["method"]: row["recall_at_k"] for row in result["by_method"]}
    assert recall["meetmem"] >= 0.9, result["misses"]
    assert recall["meetmem"] >= recall["sliding_window"]
    assert recall["meetmem"] >= recall["rolling_summary"]
