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


def test_a_new_revision_upgrades_a_database_in_place_keeping_the_log(pg_url: str, tmp_path: Path) -> None:
    """The next release's revision (here a copy of the revisions with one more) applied to a database holding
    meetings: the rows, chains and heads are what they were, the new column is there, the version moved."""
    import shutil

    from meetmem.store.pg.log import PgTranscriptLog
    from meetmem.store.records import SegmentInput

    with PgTranscriptLog(pg_url) as log:
        log.append("m1", "g1", [SegmentInput(seq=i, start=float(i), end=i + 0.5, text=f"line {i}") for i in range(5)])
        before = (list(log.chain("m1")), log.head("m1"))
    head = migrate.head_revision()  # the next revision chains after this code's newest
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "versions" / "0002_meeting_location.py").write_text(
        '"""A later release adds where a meeting took place."""\n'
        "from alembic import op\n\n"
        f'revision = "0002"\ndown_revision = "{head}"\nbranch_labels = None\ndepends_on = None\n\n\n'
        "def upgrade() -> None:\n"
        '    op.execute("ALTER TABLE meetings ADD COLUMN location text")\n'
        '    op.execute("GRANT UPDATE (location) ON meetings TO meetmem_app")\n\n\n'
        "def downgrade() -> None:\n"
        '    op.execute("ALTER TABLE meetings DROP COLUMN location")\n')
    assert migrate.upgrade(pg_url, migrations=copy) == (head, "0002")
    with psycopg.connect(pg_url) as conn:
        columns = {r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_name = 'meetings'")}
    assert "location" in columns
    # This code knows up to its head only: it refuses a database a newer release has upgraded, naming both.
    with pytest.raises(StoreError, match=f"at schema revision 0002, this meetmem needs {head}: a newer meetmem"):
        PgTranscriptLog(pg_url)
    # The rows as they were, read as the service would on the new schema.
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET ROLE meetmem_app")
        conn.execute("SELECT set_config('app.tenant', 'local', false)")
        assert conn.execute("SELECT head_pos, head_hash FROM meeting_heads").fetchone() == before[1]
        assert [r[0] for r in conn.execute("SELECT hash FROM segments ORDER BY chain_pos")] == \
            [s.hash for s in before[0]]
        conn.execute("UPDATE meetings SET location = 'Room 4' WHERE meeting_id = 'm1'")
