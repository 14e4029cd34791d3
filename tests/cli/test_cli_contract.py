"""The CLI's JSON shapes, orderings, exit codes and streams, as CONTRACT.md fixes them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

SEGMENT_FIELDS = ["segment_id", "device_id", "seq", "start", "end", "speaker", "text", "raw_text", "lang"]
HIT_FIELDS = ["segment_id", "start", "end", "speaker", "text", "score"]
ANSWER_FIELDS = {"question", "kind", "answer", "citations"}
CITATION_FIELDS = ["segment_id", "start", "end", "speaker", "text"]
MEETING = "launch"
#: The contract holds on both stores (`--database postgresql://...`); tampering behind a store's back speaks
#: SQLite here (PostgreSQL's refusals and tampering: tests/store/test_log_immutability.py, on both).
BACKENDS = ("sqlite", "postgres")


@pytest.fixture(scope="module")
def launch_db(meetmem_cli, sample_meeting_path: Path, cli_store) -> Path:
    """A database holding the sample meeting, ingested once through the CLI; tests here only read it."""
    db = cli_store("launch")
    result = meetmem_cli("ingest", MEETING, str(sample_meeting_path), "--json", db=db)
    assert result.returncode == 0, result.stderr
    assert result.json()["new"] == 52
    return db


@pytest.fixture(scope="module")
def listing(meetmem_cli, launch_db: Path) -> list[dict]:
    result = meetmem_cli("segments", MEETING, "--json", db=launch_db)
    assert result.returncode == 0, result.stderr
    return result.json()


# -- segments ---------------------------------------------------------------------------------------------
def test_segments_json_fields_are_exactly_the_contracts(listing: list[dict], sample_meeting_path: Path) -> None:
    assert len(listing) == 52
    for row in listing:
        assert list(row) == SEGMENT_FIELDS
        assert isinstance(row["seq"], int) and isinstance(row["start"], float) and isinstance(row["end"], float)
        assert 0 <= row["start"] <= row["end"]
    source = [json.loads(line) for line in sample_meeting_path.read_text(encoding="utf-8").splitlines() if line]
    assert [(r["start"], r["end"], r["speaker"], r["text"], r["lang"]) for r in listing] == [
        (s["start"], s["end"], s["speaker"], s["text"], s["lang"]) for s in source
    ]
    assert {r["device_id"] for r in listing} == {"file:" + hashlib.sha256(sample_meeting_path.read_bytes()).hexdigest()}


def test_segments_are_ordered_by_start_then_device_then_seq(run_cli, jsonl_writer, tmp_path: Path) -> None:
    a = jsonl_writer(tmp_path / "a.jsonl", [
        {"start": 5.0, "end": 6.0, "text": "a1 at five"},
        {"start": 1.0, "end": 2.0, "text": "a2 at one"},
        {"start": 5.0, "end": 5.5, "text": "a3 also at five"},
        {"start": 0.0, "end": 9.0, "text": "a4 at zero"},
    ])
    b = jsonl_writer(tmp_path / "b.jsonl", [
        {"start": 5.0, "end": 7.0, "text": "b1 at five"},
        {"start": 1.0, "end": 1.5, "text": "b2 at one"},
    ])
    for path in (a, b):
        assert run_cli("ingest", "order", str(path)).returncode == 0
    rows = run_cli("segments", "order", "--json").json()
    dev = {p.name: "file:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)}
    expected = sorted(
        [(5.0, dev["a.jsonl"], 1), (1.0, dev["a.jsonl"], 2), (5.0, dev["a.jsonl"], 3), (0.0, dev["a.jsonl"], 4),
         (5.0, dev["b.jsonl"], 1), (1.0, dev["b.jsonl"], 2)]
    )
    assert [(r["start"], r["device_id"], r["seq"]) for r in rows] == expected
    assert rows[0]["text"] == "a4 at zero"


@pytest.mark.parametrize(("window", "rule"), [
    (["--start", "100"], lambda r: r["end"] >= 100),
    (["--end", "30"], lambda r: r["start"] <= 30),
    (["--start", "60", "--end", "90.5"], lambda r: r["end"] >= 60 and r["start"] <= 90.5),
    (["--start", "5000"], lambda r: False),
])
def test_segments_time_range_keeps_overlapping_segments(meetmem_cli, launch_db: Path, listing: list[dict],
                                                        window: list[str], rule) -> None:
    result = meetmem_cli("segments", MEETING, *window, "--json", db=launch_db)
    assert result.returncode == 0, result.stderr
    assert result.json() == [r for r in listing if rule(r)]


def test_segments_without_json_are_for_people(meetmem_cli, launch_db: Path) -> None:
    result = meetmem_cli("segments", MEETING, "--end", "10", db=launch_db)
    assert result.returncode == 0
    assert "Alice" in result.stdout and "00:00" in result.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.stdout)


# -- search -----------------------------------------------------------------------------------------------
def test_search_json_shape_and_best_first(meetmem_cli, launch_db: Path, listing: list[dict]) -> None:
    result = meetmem_cli("search", MEETING, "supplier quote tooling $4,250", "--k", "5", "--json", db=launch_db)
    assert result.returncode == 0, result.stderr
    hits = result.json()
    assert 1 <= len(hits) <= 5
    stored = {r["segment_id"]: r for r in listing}
    for hit in hits:
        assert list(hit) == HIT_FIELDS
        row = stored[hit["segment_id"]]
        assert (hit["start"], hit["end"], hit["speaker"], hit["text"]) == (row["start"], row["end"],
                                                                          row["speaker"], row["text"])
        assert isinstance(hit["score"], float)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert "$4,250" in hits[0]["text"]


def test_search_k_and_filters(meetmem_cli, launch_db: Path) -> None:
    many = meetmem_cli("search", MEETING, "aluminium casing plastic", "--k", "20", "--json", db=launch_db).json()
    few = meetmem_cli("search", MEETING, "aluminium casing plastic", "--k", "2", "--json", db=launch_db).json()
    assert len(few) == 2 and few == many[:2]
    bob = meetmem_cli("search", MEETING, "aluminium casing plastic", "--k", "20", "--speaker", "Bob", "--json",
                      db=launch_db).json()
    assert bob and all(h["speaker"] == "Bob" for h in bob) and len(bob) < len(many)
    late = meetmem_cli("search", MEETING, "aluminium casing plastic", "--k", "20", "--start", "100", "--json",
                       db=launch_db).json()
    assert late and all(h["end"] >= 100 for h in late) and len(late) < len(many)


# -- ask --------------------------------------------------------------------------------------------------
def _check_answer(answer: dict, question: str, listing: list[dict]) -> None:
    assert set(answer) == ANSWER_FIELDS
    assert answer["question"] == question
    assert answer["kind"] in ("verbatim", "overview")
    assert isinstance(answer["answer"], str) and answer["answer"]
    assert 1 <= len(answer["citations"]) <= 10
    stored = {r["segment_id"]: r for r in listing}
    for citation in answer["citations"]:
        assert list(citation) == CITATION_FIELDS
        row = stored[citation["segment_id"]]
        assert citation["text"] == row["text"]  # verbatim, the stored segment text
        assert (citation["start"], citation["end"], citation["speaker"]) == (row["start"], row["end"],
                                                                             row["speaker"])
    assert len({c["segment_id"] for c in answer["citations"]}) == len(answer["citations"])


def test_ask_json_shape(meetmem_cli, launch_db: Path, listing: list[dict]) -> None:
    question = "Which part number is the sensor board?"
    result = meetmem_cli("ask", MEETING, question, "--json", db=launch_db)
    assert result.returncode == 0, result.stderr
    answer = result.json()
    _check_answer(answer, question, listing)
    assert answer["kind"] == "verbatim"
    assert "manifest" not in answer


def test_ask_explain_adds_the_manifest(meetmem_cli, launch_db: Path, listing: list[dict]) -> None:
    question = "What did we decide about the casing?"
    result = meetmem_cli("ask", MEETING, question, "--explain", "--json", db=launch_db)
    assert result.returncode == 0, result.stderr
    answer = result.json()
    manifest = answer.pop("manifest")
    route = answer.pop("route")  # an added field: which route the question took, and why
    assert route["name"] == "topic" and "casing" in route["reason"]
    plan = answer.pop("plan")  # the third wave's: the route, its parameters, why
    assert plan == {"route": "topic", "params": {"topic": "casing", "focus": ["decision"]}, "why": route["reason"]}
    _check_answer(answer, question, listing)
    assert answer["kind"] == "overview"
    assert manifest
    for block in manifest:
        assert set(block) == {"block", "tokens", "reason"}
        assert isinstance(block["block"], str) and block["block"]
        assert isinstance(block["tokens"], int) and block["tokens"] >= 0
        assert isinstance(block["reason"], str) and block["reason"]
    assert any(block["tokens"] > 0 for block in manifest)


def test_ask_questions_file_gives_one_line_per_question_in_order(meetmem_cli, launch_db: Path, jsonl_writer,
                                                                  tmp_path: Path, listing: list[dict]) -> None:
    questions = ["How much did the supplier quote for the tooling?", "Which part number is the sensor board?",
                 "What did we decide about the casing?", "谁负责新闻稿？"]
    path = jsonl_writer(tmp_path / "questions.jsonl", [{"question": q} for q in questions])
    result = meetmem_cli("ask", MEETING, "--questions", str(path), "--json", db=launch_db)
    assert result.returncode == 0, result.stderr
    answers = result.json_lines()
    assert [a["question"] for a in answers] == questions
    for answer, question in zip(answers[:3], questions, strict=False):
        _check_answer(answer, question, listing)
    assert [a["kind"] for a in answers[:3]] == ["verbatim", "verbatim", "overview"]


def test_ask_questions_file_with_a_bad_line_is_named(meetmem_cli, launch_db: Path, jsonl_writer,
                                                     tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "questions.jsonl", [{"question": "fine?"}, {"q": "wrong key"}])
    result = meetmem_cli("ask", MEETING, "--questions", str(path), "--json", db=launch_db)
    assert result.returncode != 0 and result.stdout == ""
    assert f"{path}:2:" in result.stderr


def test_ask_needs_exactly_one_of_question_and_file(meetmem_cli, launch_db: Path) -> None:
    result = meetmem_cli("ask", MEETING, "--json", db=launch_db)
    assert result.returncode != 0 and result.stdout == "" and result.stderr


# -- verify -----------------------------------------------------------------------------------------------
def test_verify_a_fresh_meeting(meetmem_cli, launch_db: Path) -> None:
    plain = meetmem_cli("verify", MEETING, db=launch_db)
    assert plain.returncode == 0, plain.stderr
    assert "52" in plain.stdout
    report = meetmem_cli("verify", MEETING, "--json", db=launch_db).json()
    assert report["ok"] is True and report["checked"] == 52 and report["broken_at"] is None


@pytest.fixture
def tamper_db(meetmem_cli, sample_meeting_path: Path, tmp_path: Path) -> Path:
    db = tmp_path / "tamper.db"
    assert meetmem_cli("ingest", MEETING, str(sample_meeting_path), db=db).returncode == 0
    return db


def _chain(db: Path) -> list[tuple[str, int]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT segment_id, chain_pos FROM segments ORDER BY chain_pos").fetchall()


def test_verify_names_an_altered_segment(meetmem_cli, tamper_db: Path) -> None:
    victim, _ = _chain(tamper_db)[17]
    with closing(sqlite3.connect(tamper_db)) as conn:
        conn.execute("DROP TRIGGER segments_refuse_update")
        conn.execute("UPDATE segments SET text = 'We never agreed to aluminium.' WHERE segment_id = ?", (victim,))
        conn.commit()
    result = meetmem_cli("verify", MEETING, db=tamper_db)
    assert result.returncode != 0
    assert victim in result.stderr
    assert result.stdout == ""
    report = meetmem_cli("verify", MEETING, "--json", db=tamper_db)
    assert report.returncode != 0
    assert report.json()["ok"] is False and report.json()["broken_at"] == victim


def test_verify_detects_a_deleted_middle_row(meetmem_cli, tamper_db: Path) -> None:
    chain = _chain(tamper_db)
    with closing(sqlite3.connect(tamper_db)) as conn:
        conn.execute("DROP TRIGGER segments_refuse_delete")
        conn.execute("DELETE FROM segments WHERE segment_id = ?", (chain[30][0],))
        conn.commit()
    result = meetmem_cli("verify", MEETING, db=tamper_db)
    assert result.returncode != 0
    assert chain[31][0] in result.stderr  # the first link that no longer holds


# -- errors and streams -----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [
    ["segments", "no-such-meeting", "--json"],
    ["search", "no-such-meeting", "aluminium", "--json"],
    ["ask", "no-such-meeting", "what was decided?", "--json"],
    ["verify", "no-such-meeting"],
    ["summary", "no-such-meeting", "--json"],
    ["ledger", "no-such-meeting", "--json"],
    ["ledger", MEETING, "--json", "--tenant", "someone-else"],
    ["segments", MEETING, "--json", "--tenant", "someone-else"],
])
def test_unknown_meeting_is_an_error_on_stderr_only(meetmem_cli, launch_db: Path, command: list[str]) -> None:
    result = meetmem_cli(*command, db=launch_db)
    assert result.returncode != 0
    assert result.stdout == ""
    assert command[1] in result.stderr
    assert "Traceback" not in result.stderr


def test_reindex_json(run_cli, sample_meeting_path: Path, jsonl_writer, tmp_path: Path) -> None:
    assert run_cli("ingest", MEETING, str(sample_meeting_path)).returncode == 0
    other = jsonl_writer(tmp_path / "other.jsonl", [{"start": 0, "end": 1, "text": "another meeting"}])
    assert run_cli("ingest", "other", str(other)).returncode == 0
    result = run_cli("reindex", "--json")
    assert result.returncode == 0, result.stderr
    assert result.json() == {"meetings": 2, "segments": 53, "digests": 2}
    hits = run_cli("search", MEETING, "TS-204", "--json").json()
    assert "TS-204" in hits[0]["text"]


def test_summary_and_ledger_json_follow_the_contract(meetmem_cli, launch_db: Path) -> None:
    summary = meetmem_cli("summary", MEETING, "--json", db=launch_db)
    assert summary.returncode == 0, summary.stderr
    data = summary.json()
    assert data["final"] is True  # a file ingest is a closed meeting
    assert data["l2"] and all(set(line) >= {"text", "segment_ids"} for line in data["l2"])
    assert data["l1"] and all(set(s) >= {"start", "end", "text", "segment_ids"} for s in data["l1"])
    segments = {s["segment_id"]: s for s in meetmem_cli("segments", MEETING, "--json", db=launch_db).json()}
    for line in data["l2"]:
        assert all(sid in segments for sid in line["segment_ids"])

    ledger = meetmem_cli("ledger", MEETING, "--json", db=launch_db)
    assert ledger.returncode == 0, ledger.stderr
    items = ledger.json()
    for key in ("decisions", "todos", "open_questions", "facts", "glossary"):
        for item in items[key]:
            assert set(item) >= {"id", "text", "status", "superseded_by", "source"}
            assert set(item["source"]) == {"start", "end", "segment_ids"}
            assert all(sid in segments for sid in item["source"]["segment_ids"])
    todo = next(t for t in items["todos"] if t["owner"] == "Bob" and t["due"] == "March 12th")
    assert set(todo) >= {"owner", "task", "due", "due_date"} and "revised quote" in todo["task"]
    assert all(set(f) >= {"what", "value"} for f in items["facts"])
    assert any(f["value"] == "$4,250" for f in items["facts"])

    text = meetmem_cli("ledger", MEETING, db=launch_db)
    assert text.returncode == 0 and "Decisions:" in text.stdout and "TS-204" in text.stdout
