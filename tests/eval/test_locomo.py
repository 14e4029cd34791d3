"""`meetmem bench locomo` and `locomo.evaluate_locomo` on a two-session conversation in LoCoMo's format."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from meetmem.eval.corpora.locomo import (
    SESSION_GAP_S,
    conversation_segments,
    evaluate_locomo,
    load_locomo,
    parse_date_time,
)
from meetmem.eval.harness import BenchDataError
from meetmem.store.interchange import MAX_TIMESTAMP_S

Turns = tuple[list[tuple[str, str]], list[tuple[str, str]]]


def test_the_conversation_loads_with_sessions_in_order_and_evidence_split(locomo_folder: Path) -> None:
    (conv,) = load_locomo(locomo_folder)
    assert [s.number for s in conv.sessions] == [1, 2]  # the empty session 3 is dropped
    assert conv.sessions[0].date_time == datetime(2022, 12, 17, 11, 1)
    assert conv.sessions[1].date_time == datetime(2023, 5, 8, 13, 56)
    by_question = {q.question: q for q in conv.questions}
    multi = by_question["Which composer's sonata did Ben play at his recital, and which instrument?"]
    assert multi.evidence == ("D2:5", "D1:4")  # "D2:5; D1:4" is two ids
    photo = by_question["What did Ben say about the Brahms recital photo?"]
    assert photo.evidence == ("D2:3",) and photo.unknown_evidence == ("D9:9",)
    assert load_locomo(locomo_folder / "locomo10_dev.json")[0].sample_id == conv.sample_id


@pytest.mark.parametrize(("text", "expected"), [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
    ("11:01 am on 17 December, 2022", datetime(2022, 12, 17, 11, 1)),
    ("12:09 am on 2 January, 2023", datetime(2023, 1, 2, 0, 9)),
])
def test_session_date_times_parse(text: str, expected: datetime) -> None:
    assert parse_date_time(text) == expected


def test_a_bad_date_or_a_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(BenchDataError):
        parse_date_time("sometime in May")
    with pytest.raises(BenchDataError):
        load_locomo(tmp_path)


def test_segments_follow_the_turns_on_one_clock_within_a_week(locomo_folder: Path, locomo_turns: Turns) -> None:
    first, second = locomo_turns
    (conv,) = load_locomo(locomo_folder)
    segments, dia_ids, sessions = conversation_segments(conv)
    turns = first + second
    assert [s.text for s in segments] == [t for _s, t in turns]
    assert [s.speaker for s in segments] == [s for s, _t in turns]
    assert dia_ids[:2] == ["D1:1", "D1:2"] and dia_ids[-1] == f"D2:{len(second)}"
    assert [s.seq for s in segments] == list(range(len(turns)))
    starts = [s.start for s in segments]
    assert starts == sorted(starts) and starts[0] == 0.0
    assert all(a.end <= b.start + 1e-9 for a, b in zip(segments, segments[1:], strict=False))
    assert segments[-1].end < MAX_TIMESTAMP_S
    assert [row["date_time"] for row in sessions] == ["2022-12-17T11:01", "2023-05-08T13:56"]
    assert sessions[1]["start_s"] == pytest.approx(sessions[0]["end_s"] + SESSION_GAP_S)
    assert segments[len(first)].start == pytest.approx(sessions[1]["start_s"])


def test_captions_are_appended_only_when_asked(locomo_folder: Path) -> None:
    (conv,) = load_locomo(locomo_folder)
    plain, dia_ids, _ = conversation_segments(conv)
    captioned, _, _ = conversation_segments(conv, captions=True)
    i = dia_ids.index("D2:3")
    assert plain[i].text == "Look at this photo from my recital."
    assert captioned[i].text == "Look at this photo from my recital. [shares a photo: a man playing a cello on a stage]"
    assert [s.text for j, s in enumerate(captioned) if j != i] == [s.text for j, s in enumerate(plain) if j != i]


@pytest.fixture
def bm25_result(locomo_folder: Path) -> dict[str, Any]:
    return evaluate_locomo(locomo_folder, embedder=None)


def test_bm25_recall_is_what_the_wording_allows(bm25_result: dict[str, Any], locomo_turns: Turns) -> None:
    """Worked by hand: kayak -> D1:3 (only turn with the word): 1. sister/aquarium -> D1:6 first: 1.
    sonata/Brahms/recital -> D2:5 found; D1:4 ("cello") shares no word with the question: 1/2.
    Brahms recital photo -> D2:3 ("photo", "recital"): 1 (the unknown D9:9 dropped). Mean 3.5/4."""
    assert set(bm25_result["methods"]) == {"ask", "bm25"}  # no model: no dense or hybrid rows
    bm25 = bm25_result["methods"]["bm25"]
    assert bm25["answerable"]["n"] == 4
    assert bm25["answerable"]["recall@5"] == pytest.approx(3.5 / 4)
    assert bm25["answerable"]["any@5"] == 1.0
    assert bm25["by_category"]["1 multi-hop"]["recall@10"] == 0.5
    single = bm25["by_category"]["4 single-hop"]
    assert {k: v for k, v in single.items() if k not in ("results", "precision")} == {
        "n": 2, "recall@5": 1.0, "any@5": 1.0, "recall@10": 1.0, "any@10": 1.0}
    # Of all it returned, BM25 found the one evidence turn of each among its results.
    assert single["precision"] == pytest.approx(1.0 / single["results"])
    assert bm25["by_category"]["5 unanswerable"]["n"] == 1  # apart, not in the answerable figures
    questions = bm25_result["questions"]
    assert questions["total"] == 6 and questions["scored"] == 5
    assert questions["unknown_evidence_ids"] == ["D9:9"]
    assert [q["question"] for q in questions["unscored_no_known_evidence"]] == ["Is Ana an ally of Ben?"]
    n = sum(len(turns) for turns in locomo_turns)
    assert bm25_result["random_baseline"]["answerable"]["recall@5"] == pytest.approx(5 / n, abs=1e-4)
    assert bm25_result["conversations"][0]["segments"] == n


def test_ask_cites_the_unique_turn_first(bm25_result: dict[str, Any]) -> None:
    ask = bm25_result["methods"]["ask"]
    assert ask["by_category"]["4 single-hop"]["recall@5"] == 1.0
    assert 0.0 <= ask["answerable"]["recall@5"] <= ask["answerable"]["recall@10"] <= 1.0


@pytest.mark.model
def test_dense_and_hybrid_rows_with_the_real_model(locomo_folder: Path, embedder: Any) -> None:
    from meetmem.store.index.embedder_routes import EmbedderRoutes

    result = evaluate_locomo(locomo_folder, embedder=EmbedderRoutes(embedder))
    assert set(result["methods"]) == {"ask", "bm25", "dense", "hybrid"}
    assert result["embedder"] == ["minilm"]
    for figures in result["methods"].values():
        answerable = figures["answerable"]
        assert 0.0 <= answerable["recall@5"] <= answerable["recall@10"] <= 1.0
    assert result["methods"]["ask"]["by_category"]["4 single-hop"]["recall@5"] == 1.0
    # "What colour is the kayak Ana bought?": the only kayak turn is the nearest in meaning too.
    assert result["methods"]["dense"]["by_category"]["4 single-hop"]["any@10"] == 1.0


def test_bench_locomo_prints_one_json_object(locomo_folder: Path, run_cli: Any) -> None:
    result = run_cli("bench", "locomo", "--data", str(locomo_folder), "--json", db=None)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["benchmark"] == "locomo" and set(report["methods"]) == {"ask", "bm25"}
    assert report["methods"]["bm25"]["answerable"]["recall@5"] == pytest.approx(0.875)
    missing = run_cli("bench", "locomo", "--data", str(locomo_folder / "nowhere"), db=None)
    assert missing.returncode == 2 and "LoCoMo" in missing.stderr


def test_the_audit_rescored_from_the_same_rankings(locomo_folder: Path, tmp_path: Path) -> None:
    """The audit drops D1:4 ("cello", no word in common with the question) from the multi-hop question's
    evidence: BM25 then recalls every answerable question. An entry that keeps the evidence changes nothing."""
    multi = "Which composer's sonata did Ben play at his recital, and which instrument?"
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps([
        {"question_id": "locomo_0_qa2", "question": multi, "category": 1, "error_type": "WRONG_CITATION",
         "cited_evidence": ["D2:5; D1:4"], "correct_evidence": ["D2:5"]},
        {"question_id": "locomo_0_qa0", "question": "What colour is the kayak Ana bought?", "category": 4,
         "error_type": "AMBIGUOUS", "cited_evidence": ["D1:3"], "correct_evidence": ["D1:3"]},
    ]), encoding="utf-8")
    result = evaluate_locomo(locomo_folder, embedder=None, errata=audit)
    assert result["errata"]["questions_changed"] == 1 and result["errata"]["entries_with_other_evidence"] == 1
    bm25 = result["methods"]["bm25"]
    assert bm25["answerable"]["recall@5"] == pytest.approx(0.875)  # the published evidence, unchanged
    assert bm25["answerable_errata"]["recall@5"] == 1.0 and bm25["answerable_errata"]["n"] == 4
    assert "answerable_errata" not in evaluate_locomo(locomo_folder, embedder=None)["methods"]["bm25"]
