"""Kept audio on a real PostgreSQL: the bytes are rows under the tenant's row security, idempotent by
(device, chunk seq) under concurrent uploads, held to their sha256 by the database, removed with the meeting
under its tombstone (and by retention, which deletes the same way), and removed alone without touching the
log's hash chain; the revision applies in place to a database holding meetings, and `meetmem migrate`
carries the audio both ways."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from meetmem.store.audio import AudioStore  # noqa: E402
from meetmem.store.backends import audio_store_for  # noqa: E402
from meetmem.store.errors import MeetingNotFound, SequenceError, StoreError  # noqa: E402
from meetmem.store.log import TranscriptLog  # noqa: E402
from meetmem.store.pg.audio import PgAudioStore  # noqa: E402
from meetmem.store.pg.log import PgTranscriptLog  # noqa: E402
from meetmem.store.receipts import ReceiptKey  # noqa: E402
from meetmem.store.records import SegmentInput  # noqa: E402
from meetmem.store.retention import RetentionPolicy  # noqa: E402
from meetmem.store.transfer import copy_log  # noqa: E402

DEMO_AUDIO = Path(__file__).resolve().parents[3] / "meetmem" / "demo_data" / "sample_meeting.ogg"


def _seg(seq: int, text: str) -> SegmentInput:
    return SegmentInput(seq=seq, start=2.0 * seq, end=2.0 * seq + 1.5, text=text, speaker="A")


@pytest.fixture(scope="module")
def ogg() -> bytes:
    return DEMO_AUDIO.read_bytes()


@pytest.fixture
def key(tmp_path: Path) -> ReceiptKey:
    return ReceiptKey.load(tmp_path / "receipt-key", create=True)


@pytest.fixture
def pg(pg_url: str):
    with PgTranscriptLog(pg_url) as log:
        for tenant in ("acme", "rival"):
            for meeting in ("m1", "m2"):
                log.append(meeting, "g1", [_seg(0, "hello"), _seg(1, "the price is 349 euros")], tenant=tenant)
        yield log


def _owner(url: str, tenant: str = "*"):
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
    return conn


def _audio_rows(url: str) -> list[tuple[str, str, int]]:
    with _owner(url) as conn:
        return [tuple(r) for r in conn.execute("SELECT tenant, meeting_id, chunk_seq FROM meeting_audio "
                                               "ORDER BY 1, 2, 3")]


def test_the_log_picks_the_postgres_audio_store(pg: PgTranscriptLog) -> None:
    assert isinstance(audio_store_for(pg), PgAudioStore)
    with pytest.raises(StoreError, match="audio_store_for"):
        AudioStore(pg)


def test_chunks_round_trip_in_ranges_and_are_idempotent(pg: PgTranscriptLog, ogg: bytes) -> None:
    audio = PgAudioStore(pg)
    chunk, new = audio.add("m1", "glasses", 0, ogg, start=1.5, tenant="acme")
    assert new and chunk.sha256 == hashlib.sha256(ogg).hexdigest() and chunk.size == len(ogg) and chunk.path is None
    assert audio.add("m1", "glasses", 0, ogg, start=1.5, tenant="acme") == (chunk, False)
    with pytest.raises(SequenceError, match="other content"):
        audio.add("m1", "glasses", 0, ogg[:5000] + bytes([ogg[5000] ^ 0xFF]) + ogg[5001:], start=1.5, tenant="acme")
    assert audio.read_bytes(chunk) == ogg
    blob = audio.blob(chunk)
    assert blob.size == len(ogg)
    # Every read crosses block edges the same way a file read does.
    for first, last in ((0, 0), (100, 1099), (len(ogg) - 50, len(ogg) - 1), (0, len(ogg) - 1)):
        assert b"".join(blob.read(first, last)) == ogg[first:last + 1]
    assert audio.chunks("m1", tenant="acme") == [chunk] and audio.chunk_seqs("m1", "glasses", tenant="acme") == [0]
    assert audio.chunks("m1", tenant="rival") == [] and audio.get("m1", "glasses", 0, tenant="rival") is None
    with pytest.raises(MeetingNotFound):
        audio.add("nope", "glasses", 0, ogg, start=0, tenant="acme")
    assert audio.verify("m1", tenant="acme") == []


def test_concurrent_uploads_of_one_chunk_store_it_once(pg: PgTranscriptLog, pg_url: str, ogg: bytes) -> None:
    results: list[bool] = []
    errors: list[BaseException] = []

    def upload() -> None:
        with PgTranscriptLog(pg_url) as own:  # a process of its own
            try:
                results.append(PgAudioStore(own).add("m1", "glasses", 7, ogg, start=0, tenant="acme")[1])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=upload) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(results) == [False, False, False, True]
    assert _audio_rows(pg_url) == [("acme", "m1", 7)]


def test_the_policy_is_per_meeting_then_tenant_then_service(pg: PgTranscriptLog) -> None:
    audio = PgAudioStore(pg, default_keep=True)
    assert audio.keeps("m1", tenant="acme") == (True, "service")
    audio.set_policy(False, tenant="acme")
    assert audio.keeps("m1", tenant="acme") == (False, "tenant")
    audio.set_policy(True, tenant="acme", meeting_id="m1")
    assert audio.keeps("m1", tenant="acme") == (True, "meeting")
    assert audio.keeps("m2", tenant="acme") == (False, "tenant")
    assert audio.keeps("m1", tenant="rival") == (True, "service")  # another tenant's settings are not seen
    assert [p[:3] for p in audio.policies()] == [("acme", None, False), ("acme", "m1", True)]


def test_the_database_guards_the_bytes_and_the_tenants(pg: PgTranscriptLog, pg_url: str, ogg: bytes) -> None:
    PgAudioStore(pg).add("m1", "glasses", 0, ogg, start=0, tenant="acme")
    with psycopg.connect(pg_url) as conn:
        for right, held in (("SELECT", True), ("INSERT", True), ("DELETE", True), ("UPDATE", False)):
            assert conn.execute("SELECT has_table_privilege('meetmem_app', 'meeting_audio', %s)",
                                (right,)).fetchone()[0] is held, right
    with _owner(pg_url, "acme") as conn:  # even the owner cannot rewrite a chunk
        with pytest.raises(psycopg.errors.RestrictViolation):
            conn.execute("UPDATE meeting_audio SET data = %s", (b"x",))
    with _owner(pg_url, "acme") as conn:  # nor store bytes that are not what their sha256 says
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("INSERT INTO meeting_audio SELECT tenant, meeting_id, device_id, 9, start, duration, sha256, "
                         "bytes, codec, added_at, overlay(data placing '\\x00'::bytea from 100) FROM meeting_audio")
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the service's role, serving the other tenant
        conn.execute("SET ROLE meetmem_app")
        conn.execute("SELECT set_config('app.tenant', 'rival', false)")
        assert conn.execute("SELECT count(*) FROM meeting_audio").fetchone()[0] == 0  # no WHERE, still nothing
        assert conn.execute("DELETE FROM meeting_audio").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO meeting_audio SELECT 'acme', 'm1', 'x', 1, 0, 1, '', 0, 'opus', '', ''::bytea")
    assert len(_audio_rows(pg_url)) == 1


def test_deleting_audio_alone_leaves_the_chain(pg: PgTranscriptLog, pg_url: str, ogg: bytes) -> None:
    from meetmem.cloud.audio_render import render_range

    audio = PgAudioStore(pg)
    audio.add("m1", "glasses", 0, ogg, start=0, tenant="acme")
    audio.add("m1", "glasses", 1, ogg, start=5, tenant="acme")
    audio.add("m1", "glasses", 0, ogg, start=0, tenant="rival")
    chunks = audio.chunks("m1", tenant="acme")
    made = audio.render("m1", chunks, 1.0, 4.0, renderer=render_range, tenant="acme")
    again = audio.render("m1", chunks, 1.0, 4.0, renderer=render_range, tenant="acme")  # from the database now
    assert b"".join(made.read(0, made.size - 1)) == b"".join(again.read(0, again.size - 1))
    head, chain = pg.head("m1", tenant="acme"), [s.hash for s in pg.chain("m1", tenant="acme")]
    assert audio.delete("m1", tenant="acme") == 2
    assert audio.chunks("m1", tenant="acme") == [] and audio.delete("m1", tenant="acme") == 0
    assert pg.head("m1", tenant="acme") == head and [s.hash for s in pg.chain("m1", tenant="acme")] == chain
    assert pg.verify("m1", tenant="acme").ok
    with _owner(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM meeting_audio_rendered").fetchone()[0] == 0
    assert _audio_rows(pg_url) == [("rival", "m1", 0)]


def test_deleting_the_meeting_or_retention_takes_its_audio(pg: PgTranscriptLog, pg_url: str, ogg: bytes,
                                                           key: ReceiptKey) -> None:
    from meetmem.cloud.audio_render import render_range

    audio = PgAudioStore(pg)
    for tenant in ("acme", "rival"):
        for meeting in ("m1", "m2"):
            audio.add(meeting, "glasses", 0, ogg, start=0, tenant=tenant)
            audio.set_policy(True, tenant=tenant, meeting_id=meeting)
    audio.render("m1", audio.chunks("m1", tenant="acme"), 0.5, 2.0, renderer=render_range, tenant="acme")
    _, shas = pg.delete_meeting("m1", tenant="acme", key=key)
    assert shas == []  # nothing is left to remove after the transaction: the bytes were rows
    assert ("acme", "m1", 0) not in _audio_rows(pg_url) and len(_audio_rows(pg_url)) == 3
    with _owner(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM meeting_audio_rendered").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM audio_policy WHERE tenant = 'acme' AND "
                            "meeting_id = 'm1'").fetchone()[0] == 0
    with pytest.raises(MeetingNotFound, match="deleted"):
        audio.add("m1", "glasses", 1, ogg, start=0, tenant="acme")
    # Retention deletes the same way: a month on, rival's m2 (closed) is old; its m1, still open, is kept.
    pg.close_meeting("m2", tenant="rival")
    for expired in RetentionPolicy(pg).expired(days=30, tenant="rival", now=datetime.now(UTC) + timedelta(days=31)):
        pg.delete_meeting(expired.meeting_id, tenant=expired.tenant, key=key, reason="retention")
    assert _audio_rows(pg_url) == [("acme", "m2", 0), ("rival", "m1", 0)]
    for tenant, meeting in (("acme", "m2"), ("rival", "m1")):
        assert pg.verify(meeting, tenant=tenant).ok and audio.verify(meeting, tenant=tenant) == []


def test_the_revision_upgrades_a_database_holding_meetings(pg_cluster, ogg: bytes, key: ReceiptKey) -> None:
    from meetmem.store.pg import migrate

    url = pg_cluster.server.create_database(f"audio_upgrade_{pg_cluster.created}")
    try:
        assert migrate.upgrade(url, "b21k01_speaker_names") == (None, "b21k01_speaker_names")
        with psycopg.connect(url, autocommit=True) as conn:  # a meeting stored before audio was kept here
            conn.execute("SELECT set_config('app.tenant', 'acme', false)")
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES ('acme', 'm1', 'then')")
        assert migrate.upgrade(url) == ("b21k01_speaker_names", migrate.head_revision())
        with PgTranscriptLog(url) as log:
            log.append("m1", "g1", [_seg(0, "after the upgrade")], tenant="acme")
            audio = audio_store_for(log)
            assert audio.add("m1", "glasses", 0, ogg, start=0, tenant="acme")[1]
            log.delete_meeting("m1", tenant="acme", key=key)
        assert _audio_rows(url) == []
    finally:
        pg_cluster.drop_database(url)


def test_migrate_carries_audio_both_ways(pg: PgTranscriptLog, pg_url: str, tmp_path: Path, ogg: bytes) -> None:
    sqlite_path = tmp_path / "there.db"
    with TranscriptLog(sqlite_path) as sqlite_log:
        sqlite_log.append("s1", "g1", [_seg(0, "recorded on the glasses")], tenant="acme")
        files = AudioStore(sqlite_log)
        files.add("s1", "glasses", 0, ogg, start=0.5, tenant="acme")
        files.add("s1", "glasses", 1, ogg, start=9.0, tenant="acme")
        files.set_policy(True, tenant="acme", meeting_id="s1")
        files.set_policy(False, tenant="acme")
        to_pg = copy_log(sqlite_log, pg)
        assert to_pg.ok and (to_pg.audio_chunks, to_pg.audio_bytes, to_pg.audio_policies) == (2, 2 * len(ogg), 2)
        rows = PgAudioStore(pg)
        assert [(c.device_id, c.chunk_seq, c.start, c.sha256, c.added_at) for c in rows.chunks("s1", tenant="acme")] \
            == [(c.device_id, c.chunk_seq, c.start, c.sha256, c.added_at) for c in files.chunks("s1", tenant="acme")]
        assert rows.keeps("s1", tenant="acme") == (True, "meeting") and rows.keeps("x", tenant="acme")[0] is False
        assert copy_log(sqlite_log, pg).audio_chunks == 0  # a second run adds nothing
    rows.add("m2", "glasses", 3, ogg, start=4.0, tenant="rival")
    back_path = tmp_path / "back.db"
    with TranscriptLog(back_path) as back:
        report = copy_log(pg, back)
        assert report.ok and report.audio_chunks == 3, report.public()
        again = AudioStore(back)
        assert [again.read_bytes(c) for c in again.chunks("s1", tenant="acme")] == [ogg, ogg]
        assert again.get("m2", "glasses", 3, tenant="rival").start == 4.0
        assert again.verify("s1", tenant="acme") == [] and back.verify("s1", tenant="acme").ok
