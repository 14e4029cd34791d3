"""The PostgreSQL log's connections when the server goes away: an unreachable server is `DatabaseUnavailable`
(which the API answers with 503), and pooled connections the server dropped (a restart, an operator's
pg_terminate_backend) are replaced without failing the next transaction."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from meetmem.store.errors import DatabaseUnavailable  # noqa: E402
from meetmem.store.pg.log import PgTranscriptLog  # noqa: E402
from meetmem.store.pg.server import free_port  # noqa: E402
from meetmem.store.records import SegmentInput  # noqa: E402


def segment(seq: int) -> SegmentInput:
    return SegmentInput(seq=seq, start=2.0 * seq, end=2.0 * seq + 1.5, text=f"Order {seq} units.", speaker="Ana")


def test_connections_the_server_dropped_are_replaced_before_a_transaction_begins(pg_url: str,
                                                                                 pg_cluster) -> None:
    with PgTranscriptLog(pg_url) as log:
        # Several pooled connections, as a busy process holds.
        with log.database.session("acme"), log.database.session("acme"), log.database.session("acme"):
            pass
        log.append("m", "d", [segment(0)], tenant="acme")
        assert log.database.idle >= 3
        database = pg_url.rsplit("/", 1)[1]
        with psycopg.connect(pg_cluster.server.url(), autocommit=True) as admin:
            ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE datname = %s AND pid <> pg_backend_pid()", (database,)).fetchone()[0]
        assert ended >= 3
        # Every pooled connection is dead now; the next reads and writes still succeed, first time.
        assert log.append("m", "d", [segment(1)], tenant="acme").new == 1
        assert [s.seq for s in log.chain("m", tenant="acme")] == [0, 1]
        assert log.verify("m", tenant="acme").ok


def test_an_unreachable_server_is_database_unavailable_naming_why() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(DatabaseUnavailable) as caught:
        PgTranscriptLog(url)
    assert caught.value.reason == "connection refused"
    assert "127.0.0.1" in str(caught.value)  # the operator's message names the server
    assert "127.0.0.1" not in caught.value.reason  # the clients' does not
