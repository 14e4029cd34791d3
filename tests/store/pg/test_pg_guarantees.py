"""What PostgreSQL adds to the log's guarantees, on a real server: grants, row-level security per tenant,
one writer per meeting across connections, and the same chain as SQLite for the same input."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from meetmem.store.errors import ImmutableLog, MeetingDeleted, MeetingNotFound, StoreError  # noqa: E402
from meetmem.store.log import TranscriptLog  # noqa: E402
from meetmem.store.pg.log import PgTranscriptLog  # noqa: E402
from meetmem.store.receipts import ReceiptKey  # noqa: E402
from meetmem.store.records import SegmentInput, utc_now  # noqa: E402
from meetmem.store.retention import RetentionPolicy  # noqa: E402

TEXTS = ["we ship on March 3rd", "the tooling quote is $4,250", "Dana owns the press release", "不是周五，是下周一"]


def batch(texts: list[str], *, first_seq: int = 0, start: float = 0.0) -> list[SegmentInput]:
    return [SegmentInput(seq=first_seq + i, start=start + 2.0 * i, end=start + 2.0 * i + 1.5, text=t,
                         speaker="AB"[i % 2], lang="en", confidence=0.5 + i / 100) for i, t in enumerate(texts)]


@pytest.fixture
def pg(pg_url: str):
    with PgTranscriptLog(pg_url) as log:
        yield log


def as_app(url: str, tenant: str | None):
    """A raw connection with the service's rights, serving `tenant` (None: no tenant set)."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET ROLE meetmem_app")
    if tenant is not None:
        conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
    return conn


def test_the_services_role_holds_no_update_or_delete_on_the_log(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        for table in ("segments", "meeting_closures", "meeting_deletions"):
            for right in ("UPDATE", "DELETE", "TRUNCATE"):
                assert not conn.execute("SELECT has_table_privilege('meetmem_app', %s, %s)",
                                        (table, right)).fetchone()[0], (table, right)
        for table in ("meetings", "meeting_heads"):
            assert not conn.execute("SELECT has_table_privilege('meetmem_app', %s, 'DELETE')",
                                    (table,)).fetchone()[0]
        # A meeting's metadata and its head may change (the head only forward); its keys never.
        assert conn.execute("SELECT has_column_privilege('meetmem_app', 'meetings', 'title', 'UPDATE')").fetchone()[0]
        assert not conn.execute("SELECT has_column_privilege('meetmem_app', 'meetings', 'tenant', 'UPDATE')"
                                ).fetchone()[0]


def test_truncate_is_refused_even_for_the_owner(pg: PgTranscriptLog, pg_url: str) -> None:
    pg.append("m1", "g1", batch(TEXTS))
    with psycopg.connect(pg_url) as conn:
        with pytest.raises(psycopg.errors.RestrictViolation, match="never truncated"):
            conn.execute("TRUNCATE segments")
    assert pg.count() == len(TEXTS) and pg.verify("m1").ok


def test_a_query_without_a_tenant_filter_reads_only_its_own_tenant(pg: PgTranscriptLog, pg_url: str) -> None:
    pg.append("m1", "g1", batch(TEXTS), tenant="acme")
    pg.append("m1", "g1", batch(TEXTS[:2]), tenant="globex")
    with as_app(pg_url, "acme") as conn:
        # The bug this guards against: a query that forgot `WHERE tenant = ...`.
        assert {r[0] for r in conn.execute("SELECT DISTINCT tenant FROM segments")} == {"acme"}
        assert conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == len(TEXTS)
        assert conn.execute("SELECT COUNT(*) FROM segments WHERE tenant = 'globex'").fetchone()[0] == 0
        assert [r[0] for r in conn.execute("SELECT tenant FROM meetings")] == ["acme"]
        assert conn.execute("SELECT COUNT(*) FROM meeting_heads").fetchone()[0] == 1
        # Nor can it write into another tenant.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES ('globex', 'x', 'now')")
    with as_app(pg_url, None) as conn:
        assert conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == 0  # no tenant set: nothing
    with as_app(pg_url, "*") as conn:
        assert conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0] == len(TEXTS) + 2
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES ('acme', 'y', 'now')")
    # Through the log: each tenant sees its own meeting under the same id.
    assert [s.text for s in pg.segments("m1", tenant="globex")] == TEXTS[:2]
    assert pg.meetings(tenant="acme") == [("acme", "m1")]
    assert sorted(pg.meetings()) == [("acme", "m1"), ("globex", "m1")]
    with pytest.raises(MeetingNotFound):
        pg.segments("m1", tenant="initech")


def test_the_deletion_function_serves_only_the_tenant_set(pg: PgTranscriptLog, pg_url: str) -> None:
    pg.append("m1", "g1", batch(TEXTS), tenant="acme")
    with as_app(pg_url, "globex") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="its own tenant"):
            conn.execute("SELECT meetmem_delete_meeting('acme', 'm1', 'now', 'x', 4, 3, 'h', 'k', 's', 1)")
    assert pg.verify("m1", tenant="acme").ok and pg.tombstones() == []


def test_a_connection_that_cannot_act_as_the_service_role_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS stranger")
        conn.execute("CREATE ROLE stranger LOGIN")
    try:
        stranger = pg_url.replace("postgres@", "stranger@", 1)
        with pytest.raises(StoreError, match="cannot act as meetmem_app"):
            PgTranscriptLog(stranger)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP ROLE stranger")


def test_the_same_input_gives_the_same_chain_and_heads_on_both_backends(pg_url: str, tmp_path: Path) -> None:
    ticks = iter(f"2026-12-01T10:00:{s:02d}.000000+00:00" for s in range(60))
    stamps: dict[int, str] = {}

    def clock_for(which: int):
        def clock() -> str:
            # Both logs see the same arrival time for their n-th batch.
            if which not in stamps:
                stamps[which] = next(ticks)
            return stamps[which]
        return clock

    def feed(log) -> None:
        n = 0
        for tenant, meeting, device, texts, first, start in [
            ("local", "m1", "g1", TEXTS, 0, 0.0), ("local", "m1", "g2", TEXTS[:2], 0, 1.0),
            ("acme", "m1", "g1", TEXTS[1:], 0, 0.0), ("local", "m1", "g1", TEXTS[:1], 4, 30.0),
        ]:
            log._clock = clock_for(n)
            log.append(meeting, device, batch(texts, first_seq=first, start=start), tenant=tenant)
            n += 1
        log.close_meeting("m1", tenant="acme")

    with TranscriptLog(tmp_path / "same.db") as lite, PgTranscriptLog(pg_url) as pg:
        feed(lite)
        feed(pg)
        for tenant in ("local", "acme"):
            assert pg.head("m1", tenant=tenant) == lite.head("m1", tenant=tenant)
            assert list(pg.chain("m1", tenant=tenant)) == list(lite.chain("m1", tenant=tenant))
            assert pg.segments("m1", tenant=tenant) == lite.segments("m1", tenant=tenant)
            assert pg.verify("m1", tenant=tenant) == lite.verify("m1", tenant=tenant)
            assert pg.verify("m1", tenant=tenant).ok
        assert pg.count() == lite.count() == 4 + 2 + 3 + 1


def test_concurrent_writers_to_one_meeting_keep_one_chain(pg_url: str) -> None:
    """Four connections (as four API processes would) append to the same meeting at once."""
    errors: list[BaseException] = []

    def device(n: int) -> None:
        try:
            with PgTranscriptLog(pg_url) as log:
                for b in range(10):
                    log.append("shared", f"g{n}", batch([f"device {n} batch {b} line {i}" for i in range(5)],
                                                        first_seq=b * 5, start=b * 10.0))
                    # A replay of the same batch from a retrying device adds nothing.
                    log.append("shared", f"g{n}", batch([f"device {n} batch {b} line {i}" for i in range(5)],
                                                        first_seq=b * 5, start=b * 10.0))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=device, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with PgTranscriptLog(pg_url) as log:
        report = log.verify("shared")
        assert report.ok and report.checked == 4 * 10 * 5 and log.head("shared")[0] == 199
        assert log.count() == 200


def test_deletion_on_postgres(pg: PgTranscriptLog, pg_url: str, tmp_path: Path) -> None:
    key = ReceiptKey.load(tmp_path / "key", create=True)
    for tenant in ("local", "acme"):
        pg.append("m1", "g1", batch(TEXTS), tenant=tenant)
    pg.append("m2", "g1", batch(TEXTS[:2]))
    pg.close_meeting("m1")
    tombstone, shas = pg.delete_meeting("m1", key=key, reason="asked by the team")
    assert shas == [] and (tombstone.segments, tombstone.head_pos, tombstone.reason) == (4, 3, "asked by the team")
    pg.check_tombstone(tombstone, key)
    assert pg.tombstone("m1") == tombstone and pg.tombstones(tenant="acme") == []
    with pytest.raises(MeetingNotFound, match="deleted at"):
        pg.segments("m1")
    with pytest.raises(MeetingDeleted):
        pg.append("m1", "g1", batch(TEXTS))
    with psycopg.connect(pg_url) as conn:
        conn.execute("SELECT set_config('app.tenant', '*', false)")
        for table in ("segments", "meetings", "meeting_heads", "meeting_closures"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant = 'local' AND meeting_id = 'm1'"
                                ).fetchone()[0] == 0, table
        # The tombstone is kept as signed: the owner cannot change or remove it.
        with pytest.raises(psycopg.errors.RestrictViolation, match="kept forever"):
            conn.execute("DELETE FROM meeting_deletions")
    assert pg.verify("m1", tenant="acme").ok and pg.verify("m2").ok
    with pytest.raises(MeetingNotFound):
        pg.delete_meeting("m1", key=key)


def test_retention_on_postgres(pg: PgTranscriptLog, tmp_path: Path) -> None:
    from meetmem.store.meeting_meta import meeting_meta

    pg._clock = lambda: "2026-01-05T08:00:00+00:00"  # the server's arrival clock, which retention reads
    pg.append("old", "g1", batch(TEXTS), meta=meeting_meta(started_at="9999-12-31T09:00:00+01:00"))
    pg.close_meeting("old")
    pg._clock = utc_now
    pg.append("new", "g1", batch(TEXTS), meta=meeting_meta(started_at="1970-01-01T00:00:00+00:00"))
    pg.close_meeting("new")
    policy = RetentionPolicy(pg, default_days=None)
    policy.set("local", 30)
    assert policy.settings() == {"local": 30}
    expired = policy.expired()
    assert [(e.meeting_id, e.basis, e.since) for e in expired] == [("old", "first_received",
                                                                    "2026-01-05T08:00:00+00:00")]
    policy.set("local", None)
    assert policy.settings() == {} and policy.expired() == []


def test_an_append_refused_by_the_database_names_it(pg: PgTranscriptLog) -> None:
    with pytest.raises(StoreError, match="NUL"):
        pg.append("m1", "g1", [SegmentInput(seq=0, start=0.0, end=1.0, text="a\x00b")])
    assert not pg.has_meeting("m1")
    assert issubclass(ImmutableLog, StoreError)
