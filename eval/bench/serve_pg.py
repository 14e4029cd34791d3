"""The PostgreSQL deployment `meetmem bench serve --backend postgres` measures: a real PostgreSQL with pgvector
(the `postgres` extra's bundled server, `meetmem.store.pg.server`), its schema made by `meetmem db upgrade`, the
preloaded meetings copied in by `meetmem migrate` and indexed for search (lexical rows and vectors), and a
fresh database per run copied from that prepared one.

With `--work-db PATH` the cluster lives in `PATH.pg/` and keeps the prepared database (a template) between
runs, as the SQLite file is kept: the first run builds it, later runs copy it in a fraction of a second.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .serve_process import ServeBenchError, tree_cpu_s

log = logging.getLogger(__name__)


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("meetmem")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "meetmem.cli"]


def run_cli(*args: str, timeout: float = 900) -> dict[str, Any]:
    """A real `meetmem` command with `--json`; its JSON answer, or ServeBenchError with its stderr."""
    done = subprocess.run([*_cli(), *args, "--json"], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        raise ServeBenchError(f"meetmem {' '.join(args[:2])} failed (exit {done.returncode}): "
                              f"{done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout.splitlines()[-1])


class PgDeployment:
    """The bench's PostgreSQL cluster in `data_dir` (started by `start`, stopped by `stop`)."""

    def __init__(self, data_dir: Path) -> None:
        try:
            from meetmem.store.pg.server import LocalPostgres

            self.server = LocalPostgres(data_dir)
        except Exception as exc:  # StoreError naming the extra to install, or a failed initdb
            raise ServeBenchError(f"no PostgreSQL to run on: {exc}") from exc
        self.data_dir = Path(data_dir)

    def start(self) -> str:
        from meetmem.store.errors import StoreError

        try:
            return self.server.start()
        except StoreError as exc:
            raise ServeBenchError(f"PostgreSQL did not start: {exc}") from exc

    def stop(self) -> None:
        from meetmem.store.errors import StoreError

        try:
            self.server.stop()
        except StoreError as exc:
            log.warning("PostgreSQL did not stop cleanly: %s", exc)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.server.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def cpu_s(self) -> float:
        """CPU seconds of the postmaster and every backend it has run so far."""
        pid = self.postmaster_pid()
        return tree_cpu_s(pid) if pid is not None else 0.0

    def _admin(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.server.url(), autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def has_database(self, name: str) -> bool:
        return bool(self._admin("SELECT 1 FROM pg_database WHERE datname = %s", (name,)))

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def database_bytes(self, name: str) -> int:
        return int(self._admin("SELECT pg_database_size(%s)", (name,))[0][0])

    def prepared(self, name: str, sqlite_db: Path, meeting_ids: list[str], tenant: str, *,
                 index: Callable[[str], dict[str, Any]], note: Callable[[str], None]) -> dict[str, Any]:
        """The prepared database `name`: kept from an earlier run, or built now from the SQLite file.

        Built under another name and renamed at the end, so an interrupted preparation is never taken for a
        finished one.
        """
        if self.has_database(name):
            # Kept from a run of an older meetmem: brought up to this one's schema in place (a no-op when
            # current), as `meetmem db upgrade` does for any deployment.
            url = self.server.url(name)
            return {"built_now": False, "database": name,
                    "db_upgrade": run_cli("db", "upgrade", "--database", url)["after"]}
        building = f"{name}_building"
        self.drop_database(building)
        url = self.server.create_database(building)
        out: dict[str, Any] = {"built_now": True, "database": name}
        t0 = time.perf_counter()
        note(f"meetmem db upgrade on {building} ...")
        out["db_upgrade"] = run_cli("db", "upgrade", "--database", url)["after"]
        note(f"meetmem migrate --from {sqlite_db} ...")
        copied = run_cli("migrate", "--from", f"sqlite:///{sqlite_db}", "--to", url, "--quiet")
        out["migrated_segments"] = copied.get("segments")
        out["migrate_s"] = round(time.perf_counter() - t0, 1)
        t1 = time.perf_counter()
        out["search_rows"] = index(url)
        out["index_s"] = round(time.perf_counter() - t1, 1)
        self._admin(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        return out

    def run_database(self, template: str, name: str) -> str:
        """A fresh database copied from the prepared one; its owner's URL."""
        self.drop_database(name)
        return self.server.create_database(name, template=template)

    def workers_seen(self, url: str) -> int:
        """Workers that have beaten in the queue's table in the last minute (0 before the first)."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            return int(conn.execute("SELECT count(*) FROM procrastinate_workers "
                                    "WHERE last_heartbeat > now() - interval '60 seconds'").fetchone()[0])

    def jobs(self, url: str) -> dict[str, int]:
        """The job queue by status (what the workers had to do during the run)."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1").fetchall()
        return {status: int(n) for status, n in rows}


def index_search_rows(url: str, meeting_ids: list[str], tenant: str, routes: Any) -> dict[str, int]:
    """Lexical rows and vectors for every preloaded segment (what `meetmem worker` would make)."""
    from meetmem.store.pg.search import PgSearch, connect_pool

    pool = connect_pool(url, max_size=2)
    try:
        search = PgSearch(pool, routes)
        added = embedded = 0
        for meeting_id in meeting_ids:
            added += search.catch_up(tenant, meeting_id)
            embedded += search.embed_pending(tenant, meeting_id)
    finally:
        pool.close()
    return {"rows": added, "embedded": embedded}
