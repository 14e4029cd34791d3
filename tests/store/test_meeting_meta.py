"""Meeting metadata: validated on the way in, stored with the batch that brings it, migrated in place."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from meetmem.store.errors import InvalidSegment, SequenceError
from meetmem.store.log import TranscriptLog
from meetmem.store.meeting_meta import meeting_meta, parse_participants, parse_started_at
from meetmem.store.records import SegmentInput


@pytest.mark.parametrize(("given", "stored"), [
    ("2027-03-01T10:00:00+01:00", "2027-03-01T10:00:00+01:00"),
    ("2027-03-01T09:00:00Z", "2027-03-01T09:00:00+00:00"),
    (" 2027-03-01 10:00+08:00 ", "2027-03-01T10:00:00+08:00"),
])
def test_started_at_keeps_its_offset(given: str, stored: str) -> None:
    assert parse_started_at(given) == stored


@pytest.mark.parametrize(("given", "says"), [
    ("2027-03-01", "without a time of day"),
    ("2027-03-01T10:00:00", "no UTC offset"),
    ("next Tuesday", "not an ISO 8601"),
    ("", "ISO 8601"),
])
def test_bad_started_at_is_named(given: str, says: str) -> None:
    with pytest.raises(InvalidSegment, match=says):
        parse_started_at(given)


@pytest.mark.parametrize(("given", "names"), [
    ("Ana,Bo", ("Ana", "Bo")),
    (" Ana ,  Bo , Ana ", ("Ana", "Bo")),
    (["C: Priya (project manager)", "李娜"], ("C: Priya (project manager)", "李娜")),
    ("", ()),
])
def test_participants(given: object, names: tuple[str, ...]) -> None:
    assert parse_participants(given) == names


@pytest.mark.parametrize("given", [[""], ["ok", 3], "x" * 0 + "\x01bad"])
def test_bad_participants_are_refused(given: object) -> None:
    with pytest.raises(InvalidSegment):
        parse_participants(given if not isinstance(given, str) else [given])


def _segments(n: int = 2) -> list[SegmentInput]:
    return [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1, text=f"line {i}", speaker="A") for i in range(n)]


def test_metadata_is_stored_with_the_batch_and_replaced_field_by_field(log) -> None:
    log.append("m1", "dev", _segments(), meta=meeting_meta("Design review", "2027-03-01T10:00:00+01:00",
                                                            "Ana,Bo"))
    meta = log.meta("m1")
    assert (meta.title, meta.started_at, meta.participants) == (
        "Design review", "2027-03-01T10:00:00+01:00", ("Ana", "Bo"))
    # A later batch with only a title changes the title alone; no segments still updates it.
    log.append("m1", "dev", [], meta=meeting_meta(title="Design review 2"))
    meta = log.meta("m1")
    assert (meta.title, meta.started_at, meta.participants) == (
        "Design review 2", "2027-03-01T10:00:00+01:00", ("Ana", "Bo"))


def test_a_refused_batch_leaves_no_metadata(log) -> None:
    log.append("m1", "dev", _segments())
    clash = [SegmentInput(seq=0, start=0.0, end=1.0, text="different words", speaker="A")]
    with pytest.raises(SequenceError):
        log.append("m1", "dev", clash, meta=meeting_meta(title="should not stay"))
    assert log.meta("m1").title is None


def test_an_old_database_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with TranscriptLog(path) as log:
        log.append("m1", "dev", _segments(3))
        chain_before = log.verify("m1")
    # Take the database back to the schema before metadata: the meetings table without its columns.
    conn = sqlite3.connect(path)
    conn.executescript("""
        DROP TRIGGER meetings_refuse_delete;
        DROP TRIGGER deletions_match_the_meeting;
        DROP TRIGGER deletions_need_the_key;
        CREATE TABLE meetings_old AS SELECT tenant, meeting_id, created_at FROM meetings;
        DROP TABLE meetings;
        ALTER TABLE meetings_old RENAME TO meetings;
        PRAGMA user_version = 0;  -- made before the schema's steps were numbered
    """)
    conn.close()
    with TranscriptLog(path) as log:
        assert log.meta("m1").title is None
        assert [s.text for s in log.segments("m1")] == ["line 0", "line 1", "line 2"]
        assert log.verify("m1") == chain_before
        log.append("m1", "dev", [], meta=meeting_meta(title="named later"))
        assert log.meta("m1").title == "named later"
    columns = {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(meetings)")}
    assert {"title", "started_at", "participants"} <= columns
    with closing(sqlite3.connect(path)) as conn:  # the tombstones' guards are made again on open
        triggers = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {"deletions_refuse_unsigned", "deletions_match_the_meeting", "deletions_need_the_key"} <= triggers
