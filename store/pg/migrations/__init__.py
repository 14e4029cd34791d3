"""Alembic revisions of the PostgreSQL schema (`meetmem db upgrade` runs them; see store/pg/migrate.py)."""
