"""The log is append-only in the database itself: UPDATE and DELETE fail, INSERT OR REPLACE changes nothing."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from meetmem.store.log import TranscriptLog


def _rows(path: Path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT * FROM segments ORDER BY chain_pos").fetchall()


@pytest.fixture
def filled(log: TranscriptLog, segments_factory) -> TranscriptLog:
    log.append("m1", "glasses-1", segments_factory(["we ship on March 3rd", "budget is $4,250", "ask Dana"]))
    return log


UPDATES = [
    "UPDATE segments SET text = 'we ship in June'",
    "UPDATE segments SET start = start + 1 WHERE seq = 1",
    "UPDATE segments SET hash = 'x'",
]
DELETES = [
    "DELETE FROM segments",
    "DELETE FROM segments WHERE seq = 1",
]


@pytest.mark.parametrize("sql", UPDATES + DELETES)
def test_log_connection_refuses_update_and_delete(filled: TranscriptLog, sql: str) -> None:
    before = _rows(filled.path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        filled.db.conn.execute(sql)
    assert _rows(filled.path) == before


@pytest.mark.parametrize("sql", UPDATES + DELETES)
def test_raw_connection_to_the_same_file_refuses_update_and_delete(filled: TranscriptLog, sql: str) -> None:
    before = _rows(filled.path)
    conn = sqlite3.connect(filled.path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(sql)
        conn.commit()
    finally:
        conn.close()
    assert _rows(filled.path) == before


def test_triggers_survive_reopening(filled: TranscriptLog) -> None:
    path = filled.path
    filled.close()
    with closing(sqlite3.connect(path)) as conn:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE segments SET text = 'changed'")
    with TranscriptLog(path) as reopened:
        assert [s.text for s in reopened.segments("m1")] == ["we ship on March 3rd", "budget is $4,250", "ask Dana"]


def test_insert_or_replace_of_an_existing_row_changes_nothing(filled: TranscriptLog) -> None:
    before = _rows(filled.path)
    conn = sqlite3.connect(filled.path)
    try:
        columns = [d[0] for d in conn.execute("SELECT * FROM segments").description]
        forged = list(before[1])
        forged[columns.index("text")] = "we ship in June"
        conn.execute(f"INSERT OR REPLACE INTO segments VALUES ({','.join('?' * len(forged))})", forged)
        # A new segment_id that collides on (device_id, seq) and on chain_pos must not replace either.
        renamed = list(forged)
        renamed[columns.index("segment_id")] = "s_forged"
        conn.execute(f"INSERT OR REPLACE INTO segments VALUES ({','.join('?' * len(renamed))})", renamed)
        conn.commit()
    finally:
        conn.close()
    assert _rows(filled.path) == before
    assert filled.verify("m1").ok


def test_meetings_are_never_deleted(filled: TranscriptLog) -> None:
    with closing(sqlite3.connect(filled.path)) as conn:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("DELETE FROM meetings")
    assert filled.has_meeting("m1")
