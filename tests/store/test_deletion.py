"""Deleting a meeting: the one narrow way rows leave the log, all or nothing, behind a signed tombstone."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from meetmem.store.audio import AudioStore
from meetmem.store.derived import DerivedStore
from meetmem.store.errors import MeetingDeleted, MeetingNotFound, StoreError
from meetmem.store.log import TranscriptLog
from meetmem.store.meeting_meta import MeetingMeta
from meetmem.store.receipts import ReceiptError, ReceiptKey
from meetmem.store.records import (
    LedgerItem,
    MeetingDigest,
    Section,
    SectionSummary,
    SegmentInput,
    Source,
    SummaryLine,
)
from meetmem.store.retention import RetentionPolicy
from meetmem.store.schema import SCHEMA_TRIGGERS
from meetmem.store.tombstones import Tombstone, check_tombstone


def make_segments(texts: list[str], *, first_seq: int = 0) -> list[SegmentInput]:
    return [SegmentInput(seq=first_seq + i, start=2.0 * i, end=2.0 * i + 1.5, text=t, speaker="A")
            for i, t in enumerate(texts)]

DEMO_AUDIO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"
KEYED_TABLES = ("meetings", "segments", "meeting_closures", "meeting_heads", "summary_sections", "meeting_digests",
                "ledger_items", "meeting_audio", "audio_policy")


@pytest.fixture
def log(tmp_path: Path) -> Iterator[TranscriptLog]:
    """SQLite only: the derived tables, audio files and old-schema cases here are SQLite's (the PostgreSQL
    deletion and retention: tests/store/pg/test_pg_guarantees.py, with audio tests/store/pg/test_pg_audio.py)."""
    with TranscriptLog(tmp_path / "log.db") as opened:
        yield opened


@pytest.fixture
def key(tmp_path: Path) -> ReceiptKey:
    return ReceiptKey.load(tmp_path / "receipt-key", create=True)


def _fill(log: TranscriptLog, meeting_id: str, *, tenant: str = "local", n: int = 6) -> None:
    """A meeting with segments, a closure, metadata, a digest, vectors, audio and an audio policy."""
    log.append(meeting_id, "glasses", make_segments([f"{meeting_id} line {i}" for i in range(n)]), tenant=tenant,
               meta=MeetingMeta(title=f"{meeting_id} review", started_at="2026-11-30T10:00:00+01:00"))
    log.close_meeting(meeting_id, tenant=tenant)
    ids = tuple(s.segment_id for s in log.segments(meeting_id, tenant=tenant))
    source = Source(0.0, 2.0 * n, ids)
    section = SectionSummary(Section(0, 0.0, 2.0 * n, ids, "end"), (SummaryLine("what was said", source),))
    ledger = (LedgerItem(id="d1", kind="decision", text="ship it", source=source),)
    DerivedStore(log).save(tenant, MeetingDigest(meeting_id=meeting_id, sections=(section,), l2=section.lines,
                                                 ledger=ledger, through_pos=n - 1, final=True,
                                                 made_at="2026-12-01T00:00:00+00:00"))
    with log.transaction():  # the vector cache is a derived table keyed by segment id
        log.db.execute("CREATE TABLE IF NOT EXISTS segment_vectors (segment_id TEXT NOT NULL, model TEXT NOT NULL, "
                       "vector BLOB NOT NULL, PRIMARY KEY (segment_id, model))")
        log.db.execute("INSERT INTO segment_vectors SELECT segment_id, 'minilm', x'00000000' FROM segments "
                       "WHERE tenant = ? AND meeting_id = ?", (tenant, meeting_id))
    audio = AudioStore(log)
    audio.set_policy(True, tenant=tenant, meeting_id=meeting_id)
    audio.add(meeting_id, "glasses", 0, DEMO_AUDIO.read_bytes(), start=0.0, tenant=tenant)


def _rows(log: TranscriptLog, tenant: str, meeting_id: str) -> dict[str, int]:
    counts = {t: log.read(f"SELECT COUNT(*) FROM {t} WHERE tenant = ? AND meeting_id = ?", (tenant, meeting_id))[0][0]
              for t in KEYED_TABLES}
    counts["segment_vectors"] = log.read(
        "SELECT COUNT(*) FROM segment_vectors WHERE segment_id IN (SELECT segment_id FROM segments WHERE tenant = ? "
        "AND meeting_id = ?)", (tenant, meeting_id))[0][0]
    return counts


def test_plain_deletes_are_still_refused(log: TranscriptLog, key: ReceiptKey) -> None:
    _fill(log, "m1")
    for table in ("segments", "meetings", "meeting_closures", "meeting_heads"):
        with pytest.raises(sqlite3.IntegrityError, match="refused|never deleted"):
            log.db.execute(f"DELETE FROM {table}")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.db.execute("UPDATE segments SET text = 'changed'")
    # After one meeting's deletion, the other meetings' rows are as protected as before.
    _fill(log, "m2")
    log.delete_meeting("m1", key=key)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.db.execute("DELETE FROM segments")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.db.execute("DELETE FROM segments WHERE meeting_id = 'm2'")
    # Tombstones are kept forever, as signed.
    with pytest.raises(sqlite3.IntegrityError, match="kept forever"):
        log.db.execute("DELETE FROM meeting_deletions")
    with pytest.raises(sqlite3.IntegrityError, match="as signed"):
        log.db.execute("UPDATE meeting_deletions SET reason = 'nothing to see'")
    assert log.verify("m2").ok


def test_delete_removes_every_row_of_the_meeting_and_only_those(log: TranscriptLog, key: ReceiptKey) -> None:
    _fill(log, "m1")
    _fill(log, "m2")
    _fill(log, "m1", tenant="other")  # the same id under another tenant is another meeting
    before_m2 = _rows(log, "local", "m2")
    assert all(before_m2.values()), before_m2
    tombstone, shas = log.delete_meeting("m1", tenant="local", reason="asked by Ana", key=key)
    assert _rows(log, "local", "m1") == dict.fromkeys([*KEYED_TABLES, "segment_vectors"], 0)
    assert log.read("SELECT COUNT(*) FROM segment_vectors WHERE segment_id NOT IN (SELECT segment_id FROM "
                    "segments)")[0][0] == 0
    assert _rows(log, "local", "m2") == before_m2
    assert all(_rows(log, "other", "m1").values())
    assert (tombstone.tenant, tombstone.meeting_id, tombstone.reason, tombstone.segments) == ("local", "m1",
                                                                                            "asked by Ana", 6)
    assert tombstone.head_pos == 5
    assert len(shas) == 1
    assert log.meetings(tenant="local") == [("local", "m2")]
    assert log.verify("m2").ok and log.verify("m1", tenant="other").ok
    with pytest.raises(MeetingNotFound, match="deleted at"):
        log.segments("m1")
    with pytest.raises(MeetingNotFound):
        log.delete_meeting("m1", key=key)  # once only
    with pytest.raises(MeetingNotFound):
        log.delete_meeting("never", key=key)
    assert [t.meeting_id for t in log.tombstones(tenant="local")] == ["m1"]
    assert log.tombstones(tenant="other") == []


def test_tombstone_records_the_chain_end_and_is_signed(log: TranscriptLog, key: ReceiptKey, tmp_path: Path) -> None:
    _fill(log, "m1")
    head = log.head("m1")
    tombstone, _ = log.delete_meeting("m1", key=key)
    assert (tombstone.head_pos, tombstone.head_hash) == head
    stored = log.tombstone("m1")
    assert stored == tombstone
    check_tombstone(key, stored)
    other = ReceiptKey.load(tmp_path / "another-key", create=True)
    with pytest.raises(ReceiptError, match="signed with key"):
        check_tombstone(other, stored)
    forged = Tombstone(**{**stored.public(), "segments": 2})
    with pytest.raises(ReceiptError, match="does not carry this server's signature"):
        check_tombstone(key, forged)


def test_reposting_a_deleted_meeting_is_refused(log: TranscriptLog, key: ReceiptKey) -> None:
    _fill(log, "m1")
    log.delete_meeting("m1", key=key)
    with pytest.raises(MeetingDeleted, match="deleted at .* new meeting id"):
        log.append("m1", "glasses", make_segments(["again"], first_seq=100))
    assert not log.has_meeting("m1")
    log.append("m1", "glasses", make_segments(["elsewhere"]), tenant="third")  # another tenant's id is its own
    assert log.has_meeting("m1", tenant="third")


def test_audio_files_go_after_the_commit_unless_another_meeting_uses_them(log: TranscriptLog,
                                                                           key: ReceiptKey) -> None:
    _fill(log, "m1")
    _fill(log, "m2")  # the same bytes: one file, named by its sha256
    audio = AudioStore(log)
    path = audio.chunks("m1")[0].path
    _, shas = log.delete_meeting("m1", key=key)
    assert audio.remove_files("m1", shas) == 0 and path.exists()  # m2 still plays it
    _, shas = log.delete_meeting("m2", key=key)
    assert audio.remove_files("m2", shas) == 1 and not path.exists()


def test_a_database_made_before_deletion_gets_the_narrow_door_on_open(tmp_path: Path, key: ReceiptKey) -> None:
    path = tmp_path / "old.db"
    with TranscriptLog(path) as log:
        _fill(log, "m1")
    conn = sqlite3.connect(path)  # put back the triggers of before, which refused every DELETE
    conn.execute("DROP TRIGGER segments_refuse_delete")
    conn.execute("CREATE TRIGGER segments_refuse_delete BEFORE DELETE ON segments BEGIN SELECT "
                 "RAISE(ABORT, 'transcript log is append-only: DELETE refused'); END")
    conn.commit()
    conn.close()
    with TranscriptLog(path) as log:
        log.delete_meeting("m1", key=key)
        assert not log.has_meeting("m1")
        sql = log.read("SELECT sql FROM sqlite_master WHERE name = 'segments_refuse_delete'")[0][0]
        assert "meeting_deletions" in sql
    assert any("segments_refuse_delete" in t for t in SCHEMA_TRIGGERS)


class _FailingConnection:
    """The log's connection, failing at one statement: a deletion interrupted half-way."""

    def __init__(self, conn: sqlite3.Connection, fail_at: str) -> None:
        self._conn = conn
        self._fail_at = fail_at

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.startswith(self._fail_at):
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


@pytest.mark.parametrize("fail_at", ["DELETE FROM meeting_closures", "DELETE FROM meetings"])
def test_a_deletion_that_fails_half_way_leaves_everything(log: TranscriptLog, key: ReceiptKey, fail_at: str) -> None:
    _fill(log, "m1")
    before = _rows(log, "local", "m1")
    real = log.database.conn
    log.database.conn = _FailingConnection(real, fail_at)  # type: ignore[assignment]
    try:
        with pytest.raises(StoreError, match="nothing was removed"):
            log.delete_meeting("m1", key=key)
    finally:
        log.database.conn = real
    assert _rows(log, "local", "m1") == before
    assert log.tombstone("m1") is None and log.verify("m1").ok
    assert AudioStore(log).chunks("m1")[0].path.exists()
    log.delete_meeting("m1", key=key)  # and it can be done again, whole
    assert not log.has_meeting("m1")


def test_a_process_killed_mid_deletion_leaves_everything(tmp_path: Path, key: ReceiptKey) -> None:
    db = tmp_path / "log.db"
    with TranscriptLog(db) as log:
        _fill(log, "m1", n=400)
        before = _rows(log, "local", "m1")
    script = textwrap.dedent(f"""
        import os
        from meetmem.store.log import TranscriptLog
        from meetmem.store.receipts import ReceiptKey

        class Dying:
            def __init__(self, conn):
                self._conn = conn
            def execute(self, sql, *args):
                if sql.startswith("DELETE FROM meeting_heads"):
                    os._exit(9)  # the segments are deleted inside the transaction; nothing committed
                return self._conn.execute(sql, *args)
            def __getattr__(self, name):
                return getattr(self._conn, name)

        log = TranscriptLog({str(db)!r})
        log.database.conn = Dying(log.database.conn)
        log.delete_meeting("m1", key=ReceiptKey.load({str(tmp_path / 'receipt-key')!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    with TranscriptLog(db) as log:
        assert _rows(log, "local", "m1") == before
        assert log.tombstone("m1") is None
        report = log.verify("m1")
        assert report.ok and report.checked == 400


def test_retention_counts_from_the_servers_first_arrival(log: TranscriptLog) -> None:
    def arriving(stamp: str) -> None:
        log._clock = lambda: stamp

    # The start a device gives is not read: a meeting's age runs from the server's first stored row.
    arriving("2026-11-01T09:00:00+00:00")
    log.append("dated", "g", make_segments(["a"]), meta=MeetingMeta(started_at="9999-12-31T09:00:00+00:00"))
    arriving("2026-11-25T09:00:00+00:00")
    log.append("recent", "g", make_segments(["b"]), meta=MeetingMeta(started_at="1970-01-01T00:00:00+00:00"))
    arriving("2020-01-01T09:00:00+00:00")
    log.append("theirs", "g", make_segments(["c"]), tenant="keeper")
    for tenant, meeting_id in (("local", "dated"), ("local", "recent"), ("keeper", "theirs")):
        log.close_meeting(meeting_id, tenant=tenant)
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    policy = RetentionPolicy(log)
    assert policy.expired(now=now) == []  # no default, no tenant setting: kept forever
    policy = RetentionPolicy(log, default_days=20)
    assert [(e.meeting_id, e.basis, e.since) for e in policy.expired(now=now)] == [
        ("theirs", "first_received", "2020-01-01T09:00:00+00:00"),
        ("dated", "first_received", "2026-11-01T09:00:00+00:00")]
    policy.set("keeper", 0)  # the tenant keeps its meetings forever, whatever the default
    assert [e.meeting_id for e in policy.expired(now=now)] == ["dated"]
    later = datetime(2026, 12, 20, 12, tzinfo=UTC)
    assert [e.meeting_id for e in policy.expired(now=later)] == ["dated", "recent"]
    # An explicit number of days (`retention apply --days N`) stands for every tenant's setting.
    assert [e.meeting_id for e in policy.expired(now=now, days=40)] == ["theirs"]
    assert [e.meeting_id for e in policy.expired(now=now, days=10, tenant="keeper")] == ["theirs"]
    policy.set("keeper", None)
    assert policy.days_for("keeper") == (20, "service")
    with pytest.raises(StoreError, match="whole number"):
        policy.set("keeper", -1)
    assert json.dumps(policy.expired(now=now)[0].public())
    # A meeting still receiving is kept, however old: open (a segment after its closure reopened it) ...
    arriving("2026-11-02T09:00:00+00:00")
    log.append("dated", "g", make_segments(["a late one"], first_seq=1))
    assert [e.meeting_id for e in policy.expired(now=now)] == ["theirs"]
    # ... or closed, with a segment stored within the last day.
    log.close_meeting("dated")
    assert [e.meeting_id for e in policy.expired(now=now)] == ["theirs", "dated"]
    arriving("2026-12-01T11:00:00+00:00")
    log.append("dated", "g", make_segments(["later still"], first_seq=2))
    log.close_meeting("dated")
    assert [e.meeting_id for e in policy.expired(now=now)] == ["theirs"]
