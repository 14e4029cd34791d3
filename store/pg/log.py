"""The transcript log on PostgreSQL: `store/log.py`'s `Log` over the PostgreSQL adapter, the same guarantees.

- Append-only by the database: the schema (migrations/versions/0001) gives the service's role
  `meetmem_app` no UPDATE or DELETE on the log, its triggers refuse UPDATE, TRUNCATE and an untombstoned
  DELETE whoever asks, and a meeting leaves only through `meetmem_delete_meeting`, tombstone first.
  Every connection the adapter opens acts as `meetmem_app` (`SET ROLE`), whatever user the URL names.
- The same hash chain and the same code: the log is written once (store/log.py, lifecycle.py, dump.py,
  retention.py), so the same input (and arrival clock) gives the same heads on both engines.
- Idempotent `(device_id, seq)` and one writer per meeting at a time across every process: a write to a
  meeting takes a transaction-scoped advisory lock on it, and unique keys stand behind that.
- Tenant isolation by row-level security: each transaction sets `app.tenant` to the tenant it serves, and
  the policies show it that tenant's rows alone, whatever a query's WHERE says. Reads across tenants (the
  operator's listings, the reaper) say so with `'*'`, which reads every tenant and writes none.

The pooled connections and the conversion of the driver's errors are `store/pg/connections.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import StoreError
from ..log import Log
from . import migrate
from .connections import ALL_TENANTS, POOL_SIZE, PgDatabase


class PgTranscriptLog(Log):
    """The transcript log in one PostgreSQL database, shared by any number of processes.

    Args:
        url: `postgresql://user[:password]@host:port/database`; the user must be `meetmem_app` or a member
            of it (the owner who ran the migrations is).
        clock: the arrival time stamped on each batch (UTC, ISO 8601); the wall clock by default.
        upgrade: bring the schema to the newest revision first (needs the owner's rights); otherwise a
            database behind this code's schema is refused with the command that upgrades it.
    """

    backend = "postgres"
    database: PgDatabase

    def __init__(self, url: str, *, clock: Callable[[], str] | None = None, upgrade: bool = False,
                 pool_size: int = POOL_SIZE) -> None:
        super().__init__(PgDatabase(url, pool_size=pool_size), clock=clock)
        self.url = url
        if upgrade:
            migrate.upgrade(url)
        with self.database.session(ALL_TENANTS) as conn:
            known = conn.execute("SELECT to_regclass('alembic_version')").fetchone()[0] is not None
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone() if known else None
        current, head = (row[0] if row else None), migrate.head_revision()
        if current != head:
            self.close()  # the connection it checked with goes, not left for the garbage collector
            if current is not None and current not in migrate.known_revisions():
                raise StoreError(f"the database {self.path} is at schema revision {current}, this meetmem needs "
                                 f"{head}: a newer meetmem upgraded it; run that version (or newer)")
            raise StoreError(f"the database {self.path} is at schema revision {current or 'none'}, this meetmem "
                             f"needs {head}: run `meetmem db upgrade --database URL` as the database owner")

    def __enter__(self) -> PgTranscriptLog:
        return self

    #: The SQLite log's raw handles, which the SQLite-only stores use (here: store/pg/*.py instead).
    _SQLITE_ONLY = frozenset({"db", "read", "transaction", "_conn", "_reading"})

    def __getattr__(self, name: str) -> Any:
        if name in PgTranscriptLog._SQLITE_ONLY:
            raise StoreError(f"{name!r} is a handle of the SQLite store, which this operation needs: use the "
                             f"SQLite file (--db); on PostgreSQL the search, summaries, ledger and audio have "
                             f"their own tables")
        raise AttributeError(name)
