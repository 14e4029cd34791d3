"""The log is append-only in the database itself: UPDATE and DELETE fail, a forged re-insert changes nothing.

On SQLite the file's triggers refuse, whoever opens it; on PostgreSQL the service's role has no UPDATE or
DELETE on the log (grants) and the triggers refuse the owner too.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from meetmem.store.log import TranscriptLog


def _rows(backend) -> list[tuple]:
    return sorted(backend.raw("SELECT * FROM segments"))


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
def test_the_services_connection_refuses_update_and_delete(backend, filled: TranscriptLog, sql: str) -> None:
    before = _rows(backend)
    with pytest.raises(backend.refused, match="append-only|permission denied"):
        backend.raw(sql)
    assert _rows(backend) == before
    assert filled.verify("m1").ok


@pytest.mark.parametrize("sql", UPDATES + DELETES)
def test_even_the_owner_is_refused(backend, filled: TranscriptLog, sql: str) -> None:
    """SQLite: any connection to the file. PostgreSQL: the tables' owner (here the superuser), whose grants
    allow everything: the triggers still refuse."""
    before = _rows(backend)
    if backend.name == "sqlite":
        with closing(sqlite3.connect(backend.path)) as conn:
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute(sql)
    else:
        import psycopg

        with psycopg.connect(backend.url) as conn:
            conn.execute("SELECT set_config('app.tenant', 'local', false)")
            with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
                conn.execute(sql)
    assert _rows(backend) == before


def test_the_refusals_hold_for_a_reopened_log(backend, filled: TranscriptLog, open_log) -> None:
    filled.close()
    with pytest.raises(backend.refused):
        backend.raw("UPDATE segments SET text = 'changed'")
    reopened = open_log()
    assert [s.text for s in reopened.segments("m1")] == ["we ship on March 3rd", "budget is $4,250", "ask Dana"]


def test_a_forged_reinsert_of_an_existing_row_changes_nothing(backend, filled: TranscriptLog) -> None:
    before = _rows(backend)
    columns = [r[0] for r in (backend.raw("SELECT name FROM pragma_table_info('segments') ORDER BY cid")
                              if backend.name == "sqlite" else
                              backend.raw("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                          "'segments' ORDER BY ordinal_position"))]
    forged = list(sorted(before, key=lambda r: r[columns.index("chain_pos")])[1])
    forged[columns.index("text")] = "we ship in June"
    renamed = list(forged)
    renamed[columns.index("segment_id")] = "s_forged"  # collides on (device_id, seq) and on chain_pos
    marks = ",".join("?" * len(forged))
    for row in (forged, renamed):
        if backend.name == "sqlite":
            backend.raw(f"INSERT OR REPLACE INTO segments VALUES ({marks})", tuple(row))
        else:
            # No REPLACE in PostgreSQL: the unique keys refuse the row outright.
            with pytest.raises(backend.refused, match="duplicate key"):
                backend.raw(f"INSERT INTO segments VALUES ({marks})", tuple(row))
    assert _rows(backend) == before
    assert filled.verify("m1").ok


def test_meetings_are_never_deleted(backend, filled: TranscriptLog) -> None:
    with pytest.raises(backend.refused):
        backend.raw("DELETE FROM meetings")
    assert filled.has_meeting("m1")
