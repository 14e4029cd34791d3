"""Meetings as users know them, from the command line: title, date and participants on ingest, relative
dates resolved against the meeting's day, and search and questions across all of a tenant's meetings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BACKENDS = ("sqlite", "postgres")

LINES = [
    {"start": 1.0, "end": 4.0, "speaker": "Ana", "text": "Farida will send the status note by Friday.", "lang": "en"},
    {"start": 5.0, "end": 9.0, "speaker": "Bo", "text": "We decided to go with the aluminium casing.", "lang": "en"},
    {"start": 10.0, "end": 13.0, "speaker": "王芳", "text": "小王下周五之前把测试报告发给我。", "lang": "zh"},
]


def _todos(run_cli: Any, meeting: str) -> dict[str, Any]:
    ledger = run_cli("ledger", meeting, "--json").json()
    return {t["due"]: t for t in ledger["todos"]}


def test_relative_dates_resolve_against_the_meetings_date(run_cli: Any, jsonl_writer: Any, tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "m.jsonl", LINES)
    done = run_cli("ingest", "standup", str(path), "--title", "Weekly standup", "--date",
                   "2027-03-01T10:00:00+01:00", "--participants", "Ana, Bo,王芳", "--json")
    assert done.returncode == 0, done.stderr
    out = done.json()
    assert (out["title"], out["started_at"], out["participants"]) == (
        "Weekly standup", "2027-03-01T10:00:00+01:00", ["Ana", "Bo", "王芳"])
    todos = _todos(run_cli, "standup")
    assert todos["Friday"]["due_date"] == "2027-03-05"  # the meeting was on Monday 1 March 2027
    assert todos["下周五"]["due_date"] == "2027-03-12"


def test_without_a_date_nothing_is_resolved_against_the_day_of_ingest(run_cli: Any, jsonl_writer: Any,
                                                                       tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "m.jsonl", LINES)
    assert run_cli("ingest", "undated", str(path)).returncode == 0
    todos = _todos(run_cli, "undated")
    assert todos["Friday"]["due_date"] is None and todos["Friday"]["due"] == "Friday"
    # Given later, the date re-resolves the ledger (the same file adds no segment).
    again = run_cli("ingest", "undated", str(path), "--date", "2027-03-03T09:00:00Z", "--json")
    assert again.json()["new"] == 0
    assert _todos(run_cli, "undated")["Friday"]["due_date"] == "2027-03-05"


def test_a_bad_date_is_named_and_nothing_is_stored(run_cli: Any, jsonl_writer: Any, tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "m.jsonl", LINES)
    bad = run_cli("ingest", "m", str(path), "--date", "2027-03-01 10:00")
    assert bad.returncode != 0 and "no UTC offset" in bad.stderr and bad.stdout == ""
    missing = run_cli("segments", "m", "--json")
    assert missing.returncode != 0 and "no meeting" in missing.stderr


def test_search_and_ask_across_meetings(run_cli: Any, jsonl_writer: Any, tmp_path: Path) -> None:
    first = jsonl_writer(tmp_path / "a.jsonl", LINES)
    second = jsonl_writer(tmp_path / "b.jsonl", [
        {"start": 2.0, "end": 6.0, "speaker": "Cy", "text": "The pricing stays at 349 dollars for launch."},
        {"start": 7.0, "end": 9.0, "speaker": "Di", "text": "Shipping starts in June."},
    ])
    assert run_cli("ingest", "hardware", str(first), "--title", "Hardware").returncode == 0
    assert run_cli("ingest", "pricing", str(second), "--title", "Pricing").returncode == 0
    hits = run_cli("search", "--all", "pricing for launch", "--json").json()
    assert hits[0]["meeting_id"] == "pricing" and "349" in hits[0]["text"]
    assert {h["meeting_id"] for h in run_cli("search", "--all", "casing pricing", "--json").json()} == {
        "hardware", "pricing"}
    assert all(set(h) >= {"segment_id", "start", "end", "speaker", "text", "score", "meeting_id"} for h in hits)
    answer = run_cli("ask", "--all", "what did we decide about the casing?", "--explain", "--json").json()
    assert answer["meeting_id"] == "hardware" and "aluminium" in answer["answer"]
    assert answer["citations"][0]["meeting_id"] == "hardware"
    assert all("meeting_id" in c for c in answer["citations"])
    assert answer["route"]["name"] == "across" and "topic" in answer["route"]["reason"]
    both = run_cli("search", "hardware", "pricing", "--all")
    assert both.returncode != 0 and "--all" in both.stderr
