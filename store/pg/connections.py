"""The PostgreSQL log's connections: a small pool, each connection acting as the service's role.

A transaction (`_session`) runs on a pooled connection and serves one tenant: it sets `app.tenant`, which
row-level security reads. A pooled connection the server dropped (PostgreSQL restarted, an operator ended it)
is replaced before anything is done on it, and the other idle ones are dropped with it. The driver's errors
are converted here, at the boundary: a lost or unreachable server is `DatabaseUnavailable` (the API answers
503 with the reason), a refused UPDATE or DELETE of the log is `ImmutableLog`, any other is a `StoreError`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import DatabaseUnavailable, ImmutableLog, StoreError
from . import migrate, require_psycopg

APP_ROLE = "meetmem_app"
#: The tenant setting that reads every tenant (and, by the policies, writes none).
ALL_TENANTS = "*"
POOL_SIZE = 8


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


class PgConnections:
    """Pooled connections to one PostgreSQL database, the base of `PgTranscriptLog`.

    Args:
        url: `postgresql://user[:password]@host:port/database`; the user must be `meetmem_app` or a member
            of it.
        pool_size: idle connections kept open between transactions (more at once open one each and close it
            after).
    """

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

    def _drop_idle(self) -> None:
        """Close the idle pooled connections (after one failed: they reach the same server, likely lost too)."""
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    def _rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str) -> list[tuple[Any, ...]]:
        with self._session(tenant) as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()
