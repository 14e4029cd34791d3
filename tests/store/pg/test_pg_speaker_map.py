"""The speaker map's guarantees on a real PostgreSQL: the service's role may read and add names, never change
or remove one; UPDATE, DELETE and TRUNCATE are refused even to the owner; a tenant sees only its own names;
and a meeting's deletion takes its names, under the tombstone, and nothing else."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from meetmem.store.errors import MeetingNotFound  # noqa: E402
from meetmem.store.pg.log import PgTranscriptLog  # noqa: E402
from meetmem.store.receipts import ReceiptKey  # noqa: E402
from meetmem.store.records import SegmentInput  # noqa: E402
from meetmem.store.speaker_map import SpeakerMap, speaker_map_for  # noqa: E402


def _seg(seq: int, speaker: str, text: str) -> SegmentInput:
    return SegmentInput(seq=seq, start=2.0 * seq, end=2.0 * seq + 1.5, text=text, speaker=speaker)


@pytest.fixture
def pg(pg_url: str):
    with PgTranscriptLog(pg_url) as log:
        for tenant in ("acme", "rival"):
            for meeting in ("m1", "m2"):
                log.append(meeting, "g1", [_seg(0, "S1", "hello"), _seg(1, "S2", "I'm Priya")], tenant=tenant)
        yield log


def as_app(url: str, tenant: str | None):
    """A raw connection with the service's rights, serving `tenant` (None: no tenant set)."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET ROLE meetmem_app")
    if tenant is not None:
        conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
    return conn


def as_owner(url: str, tenant: str):
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
    return conn


def test_the_services_role_may_read_and_add_names_only(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        for right, held in (("SELECT", True), ("INSERT", True), ("UPDATE", False), ("DELETE", False),
                            ("TRUNCATE", False)):
            assert conn.execute("SELECT has_table_privilege('meetmem_app', 'speaker_names', %s)",
                                (right,)).fetchone()[0] is held, right


def test_update_delete_and_truncate_are_refused_even_to_the_owner(pg: PgTranscriptLog, pg_url: str) -> None:
    names = SpeakerMap(pg)
    names.set("m1", {"S2": "Priya"}, tenant="acme")
    with as_owner(pg_url, "acme") as conn:
        for sql, message in (("UPDATE speaker_names SET name = 'Eve'", "append-only: UPDATE refused"),
                             ("DELETE FROM speaker_names", "append-only: DELETE refused"),
                             ("TRUNCATE speaker_names", "never truncated")):
            with pytest.raises(psycopg.errors.RestrictViolation, match=message):
                conn.execute(sql)
    with as_app(pg_url, "acme") as conn:
        for sql in ("UPDATE speaker_names SET name = 'Eve'", "DELETE FROM speaker_names"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
    assert [(e.label, e.name, e.version) for e in names.history("m1", tenant="acme")] == [("S2", "Priya", 1)]


def test_another_tenant_cannot_read_or_write_the_names(pg: PgTranscriptLog, pg_url: str) -> None:
    names = SpeakerMap(pg)
    names.set("m1", {"S2": "Priya"}, tenant="acme")
    # A query with no tenant filter reads only the tenant the session serves; none set reads nothing.
    with as_app(pg_url, "rival") as conn:
        assert conn.execute("SELECT * FROM speaker_names").fetchall() == []
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("INSERT INTO speaker_names VALUES ('acme', 'm1', 'S2', 2, 'Eve', 'user', 'now')")
    with as_app(pg_url, None) as conn:
        assert conn.execute("SELECT * FROM speaker_names").fetchall() == []
    with as_app(pg_url, "acme") as conn:
        assert conn.execute("SELECT label, name FROM speaker_names").fetchall() == [("S2", "Priya")]
    # The same meeting id under another tenant is another map.
    assert names.history("m1", tenant="rival") == []
    names.set("m1", {"S2": "Rita"}, tenant="rival")
    assert names.current("m1", tenant="acme")["S2"].name == "Priya"
    assert names.current("m1", tenant="rival")["S2"].name == "Rita"


def test_deleting_a_meeting_takes_its_names_and_nothing_else(pg: PgTranscriptLog, pg_url: str,
                                                             tmp_path: Path) -> None:
    names = SpeakerMap(pg)
    for tenant in ("acme", "rival"):
        for meeting in ("m1", "m2"):
            names.set(meeting, {"S1": "Maria", "S2": "Priya"}, tenant=tenant)
            names.set(meeting, {"S1": "Marie"}, tenant=tenant)
    pg.delete_meeting("m1", tenant="acme", key=ReceiptKey.load(tmp_path / "key", create=True))
    with as_owner(pg_url, "*") as conn:
        left = conn.execute("SELECT tenant, meeting_id, COUNT(*) FROM speaker_names GROUP BY 1, 2 "
                            "ORDER BY 1, 2").fetchall()
    assert left == [("acme", "m2", 3), ("rival", "m1", 3), ("rival", "m2", 3)]
    with pytest.raises(MeetingNotFound, match="deleted at"):
        names.set("m1", {"S1": "Maria"}, tenant="acme")


def test_concurrent_renames_of_one_label_get_successive_versions(pg: PgTranscriptLog) -> None:
    names = SpeakerMap(pg)
    errors: list[BaseException] = []

    def rename(n: int) -> None:
        try:
            names.set("m1", {"S1": f"Name {n}"}, tenant="acme")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=rename, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [e.version for e in names.history("m1", tenant="acme")] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("direction", ["sqlite to postgres", "postgres to sqlite"])
def test_migrating_a_log_brings_every_version_of_its_names(pg_url: str, tmp_path: Path, direction: str) -> None:
    from meetmem.store.log import TranscriptLog
    from meetmem.store.speaker_map import read_history
    from meetmem.store.transfer import copy_log

    with TranscriptLog(tmp_path / "log.db") as lite, PgTranscriptLog(pg_url) as pgl:
        source, target = (lite, pgl) if direction.startswith("sqlite") else (pgl, lite)
        source.append("m1", "g1", [_seg(0, "S1", "hello"), _seg(1, "S2", "I'm Priya")], tenant="acme")
        source.append("m2", "g1", [_seg(0, "S1", "hi")], tenant="acme")
        names = speaker_map_for(source)
        names.set("m1", {"S1": "Maria", "S2": "Priya"}, tenant="acme")
        names.set("m1", {"S1": "Marie", "S2": None}, tenant="acme")
        report = copy_log(source, target)
        assert report.ok and report.speaker_names == 4, report.public()
        assert read_history(target, "m1", tenant="acme") == read_history(source, "m1", tenant="acme")
        assert read_history(target, "m2", tenant="acme") == []
        # Again: nothing new; a version held with other content is refused, not rewritten.
        assert copy_log(source, target).speaker_names == 0
        speaker_map_for(target).set("m2", {"S1": "Tom"}, tenant="acme")
        names.set("m2", {"S1": "Tim"}, tenant="acme")
        again = copy_log(source, target)
        assert [f["meeting_id"] for f in again.failed] == ["m2"] and "another version" in again.failed[0]["reason"]
        assert [e.name for e in read_history(target, "m2", tenant="acme")] == ["Tom"]


def test_the_revision_upgrades_a_database_holding_meetings(pg_cluster, tmp_path: Path) -> None:
    from meetmem.store.pg import migrate

    url = pg_cluster.server.create_database(f"spk_upgrade_{pg_cluster.created}")
    try:
        assert migrate.upgrade(url, "b20s02_jobs") == (None, "b20s02_jobs")
        with psycopg.connect(url, autocommit=True) as conn:  # a meeting stored before the speaker map existed
            conn.execute("SELECT set_config('app.tenant', 'acme', false)")
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES ('acme', 'm1', 'then')")
        assert migrate.upgrade(url) == ("b20s02_jobs", migrate.head_revision())
        with PgTranscriptLog(url) as log:
            SpeakerMap(log).set("m1", {"S1": "Maria"}, tenant="acme")
            log.delete_meeting("m1", tenant="acme", key=ReceiptKey.load(tmp_path / "key", create=True))
            assert SpeakerMap(log).history("m1", tenant="acme") == []
    finally:
        pg_cluster.drop_database(url)
