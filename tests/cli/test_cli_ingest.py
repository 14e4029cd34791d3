"""`meetmem ingest`: a file is appended all or nothing, twice adds nothing, a bad line is named."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

#: Every ingest here on both stores (`--database postgresql://...` for PostgreSQL).
BACKENDS = ("sqlite", "postgres")

GOOD_LINES = [
    {"start": 0.5, "end": 3.0, "speaker": "Alice", "text": "Good morning, let's start with the casing.", "lang": "en"},
    {"start": 3.2, "end": 6.0, "speaker": "Bob", "text": "The supplier quoted $4,250 for the tooling.", "lang": "en"},
    {"start": 6.5, "end": 9.0, "speaker": "Chen Wei", "text": "We are not using plastic.", "lang": "en"},
    {"start": 9.5, "end": 12.0, "speaker": "Dana", "text": "We ship on March 3rd.", "lang": "en"},
]


def _stored_rows(db: Any) -> int:
    """Rows in the log (0 when the CLI never created the database)."""
    if not isinstance(db, Path):  # a PostgreSQL store (tests/conftest.py PgStore)
        from meetmem.store.pg.log import PgTranscriptLog

        with PgTranscriptLog(db.url) as log:
            return log.count()
    if not db.exists():
        return 0
    with closing(sqlite3.connect(db)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] if "segments" in tables else 0


def test_ingest_twice_adds_nothing_the_second_time(run_cli, jsonl_writer, tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "meeting.jsonl", GOOD_LINES)
    device = "file:" + hashlib.sha256(path.read_bytes()).hexdigest()

    first = run_cli("ingest", "m1", str(path), "--json")
    assert first.returncode == 0, first.stderr
    meta = {"title": None, "started_at": None, "participants": []}  # none given on the command line
    assert first.json() == {"meeting_id": "m1", "device_id": device, "segments": 4, "new": 4, "duplicates": 0,
                            **meta}
    listing = run_cli("segments", "m1", "--json").json()

    second = run_cli("ingest", "m1", str(path), "--json")
    assert second.returncode == 0, second.stderr
    assert second.json() == {"meeting_id": "m1", "device_id": device, "segments": 4, "new": 0, "duplicates": 4,
                             **meta}
    assert run_cli("segments", "m1", "--json").json() == listing
    assert [row["seq"] for row in listing] == [1, 2, 3, 4]  # seq = line number
    assert {row["device_id"] for row in listing} == {device}
    assert [row["text"] for row in listing] == [line["text"] for line in GOOD_LINES]
    assert _stored_rows(run_cli.db) == 4


def test_the_same_file_renamed_is_still_a_replay(run_cli, jsonl_writer, tmp_path: Path) -> None:
    one = jsonl_writer(tmp_path / "one.jsonl", GOOD_LINES)
    two = tmp_path / "copy-of-one.jsonl"
    two.write_bytes(one.read_bytes())
    assert run_cli("ingest", "m1", str(one), "--json").json()["new"] == 4
    assert run_cli("ingest", "m1", str(two), "--json").json()["new"] == 0


def test_ingest_without_json_reports_on_stdout_and_progress_on_stderr(run_cli, jsonl_writer, tmp_path) -> None:
    path = jsonl_writer(tmp_path / "meeting.jsonl", GOOD_LINES)
    result = run_cli("ingest", "m1", str(path))
    assert result.returncode == 0, result.stderr
    assert "4 new" in result.stdout


def _with_bad_line(bad: bytes | str, *, at: int) -> list:
    """Good lines, a blank line (it keeps its number), then `bad` as physical line `at`, then more good lines."""
    rows: list = [GOOD_LINES[0], ""]
    while len(rows) < at - 1:
        rows.append(GOOD_LINES[len(rows) % len(GOOD_LINES)])
    return [*rows, bad, GOOD_LINES[3]]


def _line(**fields) -> str:
    return json.dumps({"start": 1.0, "end": 2.0, "speaker": "A", "text": "fine", **fields}, ensure_ascii=False)


BAD_LINES = [
    pytest.param('{"start": 1.0, "end": 2.0, "text": "x",}', 3, "JSON", id="malformed JSON"),
    pytest.param(json.dumps({"end": 2.0, "text": "no start"}), 5, "start", id="missing start"),
    pytest.param(json.dumps({"start": 1.0, "end": 2.0}), 3, "text", id="missing text"),
    pytest.param(_line(text=""), 6, "text", id="empty text"),
    pytest.param(_line(text="   "), 3, "text", id="blank text"),
    pytest.param(_line(start=5.0, end=4.0), 4, "end", id="end before start"),
    pytest.param(_line(start=-0.5), 3, "start", id="negative start"),
    pytest.param('{"start": 1.0, "end": 2.0, "text": "caf\xe9"}'.encode("latin-1"), 7, "UTF-8", id="non-UTF-8 bytes"),
    pytest.param(_line(start="1.0"), 3, "start", id="string for start"),
    pytest.param(_line(start=True), 4, "start", id="boolean start"),
    pytest.param('{"start": NaN, "end": 2.0, "text": "x"}', 3, "start", id="NaN start"),
]


@pytest.mark.parametrize(("bad", "line", "named"), BAD_LINES)
def test_a_bad_line_stores_nothing_and_is_named(run_cli, jsonl_writer, tmp_path: Path, bad, line: int,
                                                named: str) -> None:
    path = jsonl_writer(tmp_path / "bad.jsonl", _with_bad_line(bad, at=line))
    result = run_cli("ingest", "m1", str(path), "--json")
    assert result.returncode != 0
    assert result.stdout == ""
    assert f"{path}:{line}:" in result.stderr, result.stderr
    assert named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, "one line, not a traceback"
    assert _stored_rows(run_cli.db) == 0


def test_a_bad_file_leaves_an_existing_meeting_untouched(run_cli, jsonl_writer, tmp_path: Path) -> None:
    good = jsonl_writer(tmp_path / "good.jsonl", GOOD_LINES[:2])
    assert run_cli("ingest", "m1", str(good), "--json").returncode == 0
    before = run_cli("segments", "m1", "--json").json()
    bad = jsonl_writer(tmp_path / "bad.jsonl", [*GOOD_LINES, _line(start=9.0, end=1.0)])
    result = run_cli("ingest", "m1", str(bad), "--json")
    assert result.returncode != 0 and f"{bad}:5:" in result.stderr and result.stdout == ""
    assert run_cli("segments", "m1", "--json").json() == before


@pytest.mark.parametrize(("content", "message"), [
    (b"", "no segments"),
    (b"\n  \n", "no segments"),
])
def test_an_empty_file_is_an_error(run_cli, tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    result = run_cli("ingest", "m1", str(path))
    assert result.returncode != 0 and message in result.stderr and str(path) in result.stderr
    assert _stored_rows(run_cli.db) == 0


def test_a_missing_file_is_an_error(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "nowhere.jsonl"
    result = run_cli("ingest", "m1", str(path), "--json")
    assert result.returncode != 0 and result.stdout == ""
    assert str(path) in result.stderr
