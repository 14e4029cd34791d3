"""The local PostgreSQL for tests and development, and the schema's Alembic migrations, on a real server."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from meetmem.store.errors import StoreError  # noqa: E402
from meetmem.store.pg import migrate  # noqa: E402
from meetmem.store.pg.server import LocalPostgres  # noqa: E402


def test_the_command_line_starts_a_server_with_pgvector_and_stops_it() -> None:
    data = Path(tempfile.mkdtemp(prefix="meetmem-pg-cli-")) / "data"
    run = [sys.executable, "-m", "meetmem.store.pg.server"]
    try:
        started = subprocess.run([*run, "start", "--data", str(data)], capture_output=True, text=True, check=True)
        url = started.stdout.strip()
        assert url.startswith("postgresql://postgres@127.0.0.1:")
        # Started from a process that has exited: the server outlives it, and a second start only reports it.
        again = subprocess.run([*run, "start", "--data", str(data)], capture_output=True, text=True, check=True)
        assert again.stdout.strip() == url
        made = subprocess.run([*run, "createdb", "meetmem", "--data", str(data)], capture_output=True, text=True,
                              check=True).stdout.strip()
        assert made == url.rsplit("/", 1)[0] + "/meetmem"
        with psycopg.connect(made, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            assert conn.execute("SELECT '[1,2,3]'::vector <-> '[1,2,5]'::vector").fetchone()[0] == 2.0
        subprocess.run([*run, "stop", "--data", str(data)], check=True, capture_output=True)
        assert not LocalPostgres(data).running()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(made, connect_timeout=5)
        stopped = subprocess.run([*run, "url", "--data", str(data)], capture_output=True, text=True)
        assert stopped.returncode == 1 and "no server runs" in stopped.stderr
    finally:
        LocalPostgres(data).remove()


def test_upgrade_records_the_revision_and_is_idempotent(pg_cluster) -> None:
    url = pg_cluster.server.create_database("fresh_upgrade")
    try:
        assert migrate.current_revision(url) is None
        assert migrate.upgrade(url) == (None, migrate.head_revision())
        assert migrate.upgrade(url) == (migrate.head_revision(), migrate.head_revision())
        with psycopg.connect(url) as conn:
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"meetings", "segments", "meeting_heads", "meeting_closures", "meeting_deletions",
                "retention_policy", "alembic_version"} <= tables
    finally:
        pg_cluster.drop_database(url)


def test_an_unreachable_database_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot read the schema version of postgresql://u:\\*\\*\\*@127.0.0.1:9/x"):
        migrate.upgrade("postgresql://u:secret@127.0.0.1:9/x?connect_timeout=3")
