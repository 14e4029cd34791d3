"""The hash chain shows tampering done behind the triggers' back (as an attacker with the file would)."""

from __future__ import annotations

import pytest

from meetmem.store.log import TranscriptLog
from meetmem.store.records import GENESIS_HASH

TEXTS = [f"segment number {i} about the launch" for i in range(8)]


@pytest.fixture
def chained(log: TranscriptLog, segments_factory) -> TranscriptLog:
    log.append("m1", "glasses-1", segments_factory(TEXTS[:3]))
    log.append("m1", "glasses-2", segments_factory(TEXTS[3:5], start=1.0))
    log.append("m1", "glasses-1", segments_factory(TEXTS[5:], first_seq=3, start=20.0))
    log.append("m2", "glasses-1", segments_factory(TEXTS[:2]))
    return log


def test_a_fresh_chain_verifies(backend, chained: TranscriptLog) -> None:
    report = chained.verify("m1")
    assert report.ok and report.checked == len(TEXTS) and report.broken_at is None
    rows = list(chained.chain("m1"))
    assert [r.chain_pos for r in rows] == list(range(len(TEXTS)))
    assert rows[0].prev_hash == GENESIS_HASH
    assert all(b.prev_hash == a.hash for a, b in zip(rows, rows[1:], strict=False))
    assert chained.verify("m2").ok


@pytest.mark.parametrize(("column", "value"), [
    ("text", "segment number 4 about the cancellation"),
    ("start", 99.0),
    ("speaker", "Mallory"),
    ("received_at", "2000-01-01T00:00:00.000000+00:00"),
])
def test_an_altered_row_is_named(backend, chained: TranscriptLog, column: str, value: object) -> None:
    victim = list(chained.chain("m1"))[4]
    backend.tamper("DROP TRIGGER segments_refuse_update",
           f'UPDATE segments SET "{column}" = ? WHERE segment_id = ?', params=(value, victim.segment_id))
    report = chained.verify("m1")
    assert not report.ok
    assert report.broken_at == victim.segment_id
    assert report.broken_pos == 4
    assert victim.segment_id in (report.reason or "")
    assert chained.verify("m2").ok  # one meeting's chain does not depend on another's


def test_a_rewritten_hash_breaks_the_next_link(backend, chained: TranscriptLog) -> None:
    rows = list(chained.chain("m1"))
    backend.tamper("DROP TRIGGER segments_refuse_update",
           "UPDATE segments SET hash = ? WHERE segment_id = ?", params=("f" * 64, rows[2].segment_id))
    report = chained.verify("m1")
    assert not report.ok and report.broken_at == rows[2].segment_id


def test_a_deleted_middle_row_is_detected(backend, chained: TranscriptLog) -> None:
    rows = list(chained.chain("m1"))
    backend.tamper("DROP TRIGGER segments_refuse_delete",
           "DELETE FROM segments WHERE segment_id = ?", params=(rows[3].segment_id,))
    report = chained.verify("m1")
    assert not report.ok
    assert report.broken_at == rows[4].segment_id  # the first link that no longer holds
    assert report.checked == 3


def test_the_first_row_deleted_is_detected(backend, chained: TranscriptLog) -> None:
    rows = list(chained.chain("m1"))
    backend.tamper("DROP TRIGGER segments_refuse_delete",
           "DELETE FROM segments WHERE segment_id = ?", params=(rows[0].segment_id,))
    report = chained.verify("m1")
    assert not report.ok and report.broken_at == rows[1].segment_id


def test_reopening_restores_the_triggers_an_attacker_dropped(tmp_path, segments_factory) -> None:
    # SQLite's triggers live in the file, where whoever holds it can drop them; opening makes them again.
    # (PostgreSQL's triggers are dropped only by the tables' owner, and the service's role is not it.)
    import sqlite3
    from contextlib import closing

    path = tmp_path / "reopen.db"
    with TranscriptLog(path) as log:
        log.append("m1", "glasses-1", segments_factory(TEXTS[:3]))
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DROP TRIGGER segments_refuse_update")
        conn.execute("DROP TRIGGER segments_refuse_delete")
        conn.commit()
    with TranscriptLog(path):
        pass
    with closing(sqlite3.connect(path)) as conn:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE segments SET text = 'x'")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("DELETE FROM segments")
