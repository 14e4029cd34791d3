"""The one surface the stores speak to a database through: SQLite and PostgreSQL are adapters of it.

A store is written once, over `Database`:

- `session(tenant, lock=..., snapshot=...)`: one transaction, all or nothing, serving one tenant (on
  PostgreSQL, row-level security then shows that tenant's rows alone; `ALL_TENANTS` reads every tenant and
  writes none). `lock=meeting_id` makes it the meeting's only writer until it ends (across processes);
  `snapshot=True` reads everything on one consistent snapshot. The connection it yields (`Session`) takes
  SQL with `?` placeholders on either engine.
- `rows(sql, params, tenant=...)`: one read of committed data.
- `dialect`: the few words of SQL the engines spell differently (the insertion-order column, byte-order
  collation, whether text can hold NUL).

Where the engines truly differ, the adapter does the work itself and says so: how a meeting's rows leave
(SQLite: a tombstone guarded by a function the writing process registers, then DELETEs; PostgreSQL: the
schema's `meetmem_delete_meeting`), how another database's tombstone is kept, and how the schema is made
or checked on open. The adapters are `store/sqlite_database.py` and `store/pg/connections.py`.

Errors come out converted: a refused change of history is `ImmutableLog`, a unique key or other constraint
that another writer got to first is `WriteConflict`, a lost server is `DatabaseUnavailable`, anything else a
`StoreError` naming the database (never its password).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import StoreError
from .tombstones import Tombstone

#: The tenant setting of a session that reads every tenant (and, on PostgreSQL, writes none).
ALL_TENANTS = "*"


class WriteConflict(StoreError):
    """A unique key or constraint refused a write that another writer made first (retry the whole write)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the stores' shared SQL needs to know of an engine.

    Attributes:
        backend: "sqlite" or "postgres".
        ordinal: the column that orders a table's rows as they were inserted (SQLite's `rowid`; the
            PostgreSQL schema gives each such table an identity column `ord`).
        byte_order: appended to a text column in ORDER BY to sort by bytes, whatever the locale.
        stores_nul: whether a text column can hold a NUL character.
        ignores_replays: whether the log's table drops a row whose key it holds already without an error
            (SQLite's trigger does, so a write counts what it inserted; PostgreSQL's unique keys raise).
    """

    backend: str
    ordinal: str
    byte_order: str
    stores_nul: bool
    ignores_replays: bool


SQLITE = Dialect(backend="sqlite", ordinal="rowid", byte_order="", stores_nul=True, ignores_replays=True)
POSTGRES = Dialect(backend="postgres", ordinal="ord", byte_order=' COLLATE "C"', stores_nul=False,
                   ignores_replays=False)


class Session(Protocol):
    """A connection inside one transaction: SQL with `?` placeholders on either engine."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...


class Database(Protocol):
    """One database, shared by threads (and, for PostgreSQL, processes); see the module's text."""

    dialect: Dialect
    #: Where the database is, fit to show a person (a file path, or a URL without its password).
    path: Any

    def session(self, tenant: str, *, lock: str | None = None,
                snapshot: bool = False) -> AbstractContextManager[Session]: ...
    def rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str) -> list[tuple[Any, ...]]: ...
    def remove_meeting(self, conn: Session, tombstone: Tombstone, key: Any) -> list[str]: ...
    def import_tombstone(self, conn: Session, tombstone: Tombstone) -> None: ...
    def close(self) -> None: ...


def marks(count: int) -> str:
    """`?, ?, ...`: `count` placeholders."""
    return ", ".join("?" * count)


def chunks(values: Sequence[Any], size: int = 500) -> Iterable[Sequence[Any]]:
    """`values` in slices short enough for one `IN (...)` list on either engine."""
    for start in range(0, len(values), size):
        yield values[start:start + size]
