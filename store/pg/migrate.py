"""Schema migrations of the PostgreSQL store with Alembic: a version table, revisions applied in place.

`meetmem db upgrade` (and the service at start, unless told not to) brings a database to the newest revision;
a database already there is left alone. Revisions live in `store/pg/migrations/versions/`, plain SQL each.
Alembic records the revision in its table `alembic_version`.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import StoreError
from . import EXTRA_HINT, require_psycopg

MIGRATIONS = Path(__file__).with_name("migrations")


def sqlalchemy_url(url: str) -> str:
    """The same URL for SQLAlchemy, on the psycopg 3 driver (`postgresql+psycopg://`)."""
    scheme, rest = url.split("://", 1)
    return f"postgresql+psycopg://{rest}" if scheme in ("postgresql", "postgres") else url


def _config(url: str, migrations: Path = MIGRATIONS):  # noqa: ANN202 - alembic.config.Config
    try:
        from alembic.config import Config
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise StoreError(f"schema migrations need Alembic: {EXTRA_HINT}") from exc
    config = Config()
    config.set_main_option("script_location", str(migrations))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


def head_revision(migrations: Path = MIGRATIONS) -> str:
    """The newest revision this code knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config("postgresql://localhost/none", migrations)).get_current_head()
    assert head is not None
    return head


def known_revisions(migrations: Path = MIGRATIONS) -> set[str]:
    """Every revision this code knows (a database at another one was made by a newer meetmem)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config("postgresql://localhost/none", migrations))
    return {r.revision for r in script.walk_revisions()}


def current_revision(url: str) -> str | None:
    """The revision the database is at (None: never migrated)."""
    psycopg = require_psycopg()
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            exists = conn.execute("SELECT to_regclass('alembic_version')").fetchone()[0]
            if exists is None:
                return None
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            return None if row is None else str(row[0])
    except psycopg.Error as exc:
        raise StoreError(f"cannot read the schema version of {redact(url)}: {exc}") from exc


def upgrade(url: str, revision: str = "head", *, migrations: Path = MIGRATIONS) -> tuple[str | None, str]:
    """Bring the database to `revision` (the newest by default), in place.

    `migrations` is the revisions' folder (this package's; a test points it at a copy with one more).

    Returns:
        the revision before and after.

    Raises:
        StoreError: the database cannot be reached or a revision failed (that revision is rolled back).
    """
    from alembic import command
    from sqlalchemy.exc import SQLAlchemyError

    before = current_revision(url)
    try:
        command.upgrade(_config(url, migrations), revision)
    except SQLAlchemyError as exc:
        raise StoreError(f"migrating {redact(url)} failed (the failing revision was rolled back): "
                         f"{getattr(exc, 'orig', exc)}") from exc
    after = current_revision(url)
    assert after is not None
    return before, after


def redact(url: str) -> str:
    """The URL with its password hidden, for messages and logs."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in creds else ''}@{host}"
