"""The store's tests run on both backends: a real SQLite file and a real PostgreSQL database.

`backend` is parametrized over the two; `log` (here) opens the log on it, so a test written against the
log's public methods runs twice, unchanged. What differs between the databases (reaching behind the log's
back, as an attacker with the file or the database's superuser would) goes through `Backend.tamper` and
`Backend.raw`, which speak each database's dialect.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from meetmem.store.log import TranscriptLog


class Backend:
    """Where a test's log lives, and raw access to it beside the log."""

    name: str
    #: The errors a refused UPDATE/DELETE raises on a raw connection (sqlite3's, or psycopg's).
    refused: tuple[type[BaseException], ...]

    def open(self, **options: Any) -> Any:
        raise NotImplementedError

    def tamper(self, *statements: str, params: tuple = ()) -> None:
        """Run SQL with every safeguard of the database switched off (`?` placeholders; `DROP TRIGGER name`
        statements name what the attacker removes first)."""
        raise NotImplementedError

    def raw(self, sql: str, params: tuple = (), *, tenant: str = "local") -> list[tuple]:
        """Run one statement on a raw connection with the rights the service has (SQLite: the file's;
        PostgreSQL: the role `meetmem_app`, serving `tenant`), committed; returns its rows."""
        raise NotImplementedError


class SqliteBackend(Backend):
    name = "sqlite"
    refused = (sqlite3.IntegrityError,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)

    def open(self, **options: Any) -> TranscriptLog:
        return TranscriptLog(self.path, **options)

    def tamper(self, *statements: str, params: tuple = ()) -> None:
        with closing(sqlite3.connect(self.path)) as conn:
            for sql in statements:
                conn.execute(sql, params if "?" in sql else ())
            conn.commit()

    def raw(self, sql: str, params: tuple = (), *, tenant: str = "local") -> list[tuple]:
        with closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute(sql, params).fetchall()
            conn.commit()
            return rows


class PostgresBackend(Backend):
    name = "postgres"

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.location = url
        self.refused = (psycopg.Error,)

    def open(self, **options: Any) -> Any:
        from meetmem.store.pg.log import PgTranscriptLog

        return PgTranscriptLog(self.url, **options)

    def tamper(self, *statements: str, params: tuple = ()) -> None:
        import psycopg

        # The superuser, with triggers off (session_replication_role = replica) and row security bypassed:
        # everything someone who owns the server could do behind the service's back.
        with psycopg.connect(self.url) as conn:
            conn.execute("SET session_replication_role = replica")
            for sql in statements:
                if sql.upper().startswith("DROP TRIGGER"):
                    continue
                conn.execute(sql.replace("?", "%s"), params if "?" in sql else ())

    def raw(self, sql: str, params: tuple = (), *, tenant: str = "local") -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url) as conn:
            conn.execute("SET ROLE meetmem_app")
            conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
            cur = conn.execute(sql.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The database a test's log lives in: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield SqliteBackend(tmp_path / "log.db")
    else:
        yield PostgresBackend(request.getfixturevalue("pg_url"))


@pytest.fixture
def open_log(backend: Backend) -> Iterator[Callable[..., Any]]:
    """Open (another) log on the test's database; each is closed at the end."""
    opened: list[Any] = []

    def make(**options: Any) -> Any:
        log = backend.open(**options)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


@pytest.fixture
def log(open_log: Callable[..., Any]) -> Any:
    """A fresh transcript log on each backend."""
    return open_log()
