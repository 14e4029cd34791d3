"""The PostgreSQL adapter of `store/database.py`: a small pool of connections, each acting as the service's role.

A transaction (`session`) runs on a pooled connection and serves one tenant: it sets `app.tenant`, which
row-level security reads; `lock=meeting_id` takes the meeting's advisory lock, so one writer at a time holds
it across every process; `snapshot=True` reads on one REPEATABLE READ snapshot. The stores' SQL, written with
`?` placeholders, is given psycopg's `%s` here. A pooled connection the server dropped (PostgreSQL
restarted, an operator ended it) is replaced before anything is done on it, and the other idle ones are
dropped with it. The driver's errors are converted here, at the boundary: a lost or unreachable server is
`DatabaseUnavailable` (the API answers 503 with the reason), a refused UPDATE or DELETE of the log is
`ImmutableLog`, a unique key another writer took first is `WriteConflict`, any other is a `StoreError`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..database import ALL_TENANTS, POSTGRES, WriteConflict
from ..errors import DatabaseUnavailable, ImmutableLog, StoreError
from ..tombstones import Tombstone
from . import migrate, require_psycopg

APP_ROLE = "meetmem_app"
POOL_SIZE = 8
__all__ = ["ALL_TENANTS", "APP_ROLE", "POOL_SIZE", "PgDatabase", "unavailable_reason"]


def unavailable_reason(exc: BaseException) -> str:
    """A connection failure in a line a person can read, without the server's address: "connection refused",
    "the database system is starting up", "server closed the connection unexpectedly"."""
    text = " ".join(str(exc).split())
    for known in ("Connection refused", "the database system is starting up", "the database system is shutting down",
                  "the database system is not yet accepting connections", "the database system is in recovery mode",
                  "server closed the connection unexpectedly", "terminating connection due to administrator command",
                  "too many clients already", "timeout expired", "No route to host", "Connection timed out"):
        if known.lower() in text.lower():
            return known[0].lower() + known[1:]
    return text.rsplit("failed: ", 1)[-1][:200] or type(exc).__name__


def _dialect(sql: str) -> str:
    # The stores write `?`; psycopg reads `%s` (SQL already in psycopg's form passes as it is).
    return sql.replace("?", "%s") if "?" in sql else sql


class PgSession:
    """A psycopg connection inside one transaction that takes the stores' `?` placeholders."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = (), **options: Any) -> Any:
        return self.raw.execute(_dialect(sql), params, **options)

    def executemany(self, sql: str, rows: Any) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(_dialect(sql), rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class PgDatabase:
    """Pooled connections to one PostgreSQL database (see the module's text).

    Args:
        url: `postgresql://user[:password]@host:port/database`; the user must be `meetmem_app` or a member
            of it.
        pool_size: idle connections kept open between transactions (more at once open one each and close it
            after).
    """

    dialect = POSTGRES

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        self.url = url
        self.path = migrate.redact(url)
        self._psycopg = require_psycopg()
        self._pool: list[Any] = []
        self._pool_lock = threading.Lock()
        self._pool_size = pool_size
        self._closed = False

    def _connect(self) -> Any:
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(self.url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"cannot open the database {self.path}: {exc}",
                                      reason=unavailable_reason(exc)) from exc
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        try:
            if conn.execute("SELECT current_user").fetchone()[0] != APP_ROLE:
                conn.execute(f"SET ROLE {APP_ROLE}")
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"the user of {self.path} cannot act as {APP_ROLE}: connect as {APP_ROLE} or a member "
                             f"of it (GRANT {APP_ROLE} TO your_user): {exc}") from exc
        return conn

    @contextmanager
    def _session(self, tenant: str, *, isolation: str | None = None) -> Iterator[Any]:
        """One transaction on a pooled connection, serving `tenant` (row-level security sees only it).

        A pooled connection the server dropped (PostgreSQL restarted) fails at its first statement, before
        anything is done: it is replaced by a new one and the transaction begun again, and the other idle
        connections, from the same lost server, are dropped too. So a restart of PostgreSQL costs the requests
        made while it was down, not the first few after it is back.
        """
        if self._closed:
            raise StoreError(f"the log of {self.path} is closed")
        psycopg = self._psycopg
        with self._pool_lock:
            conn = self._pool.pop() if self._pool else None
        pooled = conn is not None and not conn.closed
        if not pooled:
            conn = self._connect()
        while True:
            transaction = conn.transaction()
            try:
                transaction.__enter__()
            except psycopg.OperationalError as exc:
                conn.close()
                if not pooled:
                    raise DatabaseUnavailable(f"the database {self.path} failed: {exc}",
                                              reason=unavailable_reason(exc)) from exc
                self._drop_idle()
                conn, pooled = self._connect(), False
                continue
            break
        try:
            try:
                if isolation is not None:
                    conn.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
                conn.execute("SELECT set_config('app.tenant', %s, true)", (tenant,))
                yield conn
            except BaseException as exc:
                if not transaction.__exit__(type(exc), exc, exc.__traceback__):
                    raise
            else:
                transaction.__exit__(None, None, None)
        except psycopg.errors.RestrictViolation as exc:
            raise ImmutableLog(str(exc.diag.message_primary or exc)) from exc
        except psycopg.OperationalError as exc:
            self._drop_idle()
            raise DatabaseUnavailable(f"the database {self.path} failed: {exc}",
                                      reason=unavailable_reason(exc)) from exc
        except psycopg.Error as exc:
            raise StoreError(f"the database {self.path} refused: {exc}") from exc
        finally:
            idle = psycopg.pq.TransactionStatus.IDLE
            with self._pool_lock:
                keep = (not self._closed and not conn.closed and conn.info.transaction_status == idle
                        and len(self._pool) < self._pool_size)
                if keep:
                    self._pool.append(conn)
            if not keep:
                conn.close()

    @property
    def idle(self) -> int:
        """How many connections wait in the pool."""
        with self._pool_lock:
            return len(self._pool)

    def _drop_idle(self) -> None:
        """Close the idle pooled connections (after one failed: they reach the same server, likely lost too)."""
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    @contextmanager
    def session(self, tenant: str, *, lock: str | None = None, snapshot: bool = False) -> Iterator[PgSession]:
        """One transaction (`store/database.py`), serving `tenant`; a unique key another writer took first is
        `WriteConflict`."""
        psycopg = self._psycopg
        try:
            with self._session(tenant, isolation="REPEATABLE READ" if snapshot else None) as raw:
                if lock is not None:
                    # One writer per meeting at a time, across processes; released at commit or rollback.
                    raw.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{tenant}\x1f{lock}",))
                yield PgSession(raw)
        except StoreError as exc:
            conflict = isinstance(exc.__cause__, psycopg.errors.IntegrityError)
            if conflict and not isinstance(exc, ImmutableLog | WriteConflict):
                raise WriteConflict(str(exc)) from exc.__cause__
            raise

    def rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str) -> list[tuple[Any, ...]]:
        """One read of committed data, serving `tenant`."""
        with self._session(tenant) as conn:
            return conn.execute(_dialect(sql), params).fetchall()

    # -- what only PostgreSQL does -----------------------------------------------------------------------
    @staticmethod
    def remove_meeting(conn: PgSession, tombstone: Tombstone, key: Any) -> list[str]:
        """Inside a session: the schema's `meetmem_delete_meeting` writes the tombstone and removes the meeting
        with everything derived from it (the service's role may not DELETE itself). The audio's bytes are rows
        here (store/pg/audio.py), so no files are left to remove after the commit: returns []."""
        t = tombstone
        conn.execute("SELECT meetmem_delete_meeting(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash,
                      t.key_id, t.sig, t.version))
        return []

    @staticmethod
    def import_tombstone(conn: PgSession, tombstone: Tombstone) -> None:
        """Inside a session: keep another database's tombstone as signed, through the schema's
        `meetmem_import_tombstone` (the service's role cannot write tombstones itself)."""
        t = tombstone
        conn.execute("SELECT meetmem_import_tombstone(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash,
                      t.key_id, t.sig, t.version))

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()
