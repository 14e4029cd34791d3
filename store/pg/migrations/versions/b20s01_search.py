"""Search on PostgreSQL: one derived row per segment with its lexemes, full-text vector and embedding.

Derived (rebuildable from the log, like SQLite's `segment_vectors`): keyword search runs on `fts` (Postgres
full-text search over the lexemes the product's tokenizer writes into `lexed`: stems, whole numbers and
codes, negations kept, Chinese cut by jieba), or on an in-process BM25 rebuilt from `lexed`; vectors are in
pgvector, with an HNSW index for the default model (all-MiniLM-L6-v2, 384 dimensions, "Speaker: text").

Revision ID: b20s01_search
"""

from __future__ import annotations

from alembic import op

revision = "b20s01_search"
down_revision = "0001"
branch_labels = None
depends_on = None

APP_ROLE = "meetmem_app"
_TENANT = "current_setting('app.tenant', true)"

#: The table and its indexes; a benchmark on a bare server (no log) applies these alone.
SEARCH_TABLE = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    """
    CREATE TABLE IF NOT EXISTS segment_search (
        segment_id text PRIMARY KEY,
        tenant text NOT NULL,
        meeting_id text NOT NULL,
        doc integer NOT NULL,
        start_s double precision NOT NULL,
        end_s double precision NOT NULL,
        speaker text,
        live boolean NOT NULL DEFAULT true,
        lexed text NOT NULL,
        fts tsvector NOT NULL,
        model text,
        embedding vector,
        UNIQUE (tenant, meeting_id, doc)
    )
    """,
    "CREATE INDEX IF NOT EXISTS segment_search_fts ON segment_search USING gin (fts)",
    # Rows still to embed, found without a scan of the table.
    "CREATE INDEX IF NOT EXISTS segment_search_unembedded ON segment_search (tenant, meeting_id, doc) "
    "WHERE embedding IS NULL",
    # A partial expression index: pgvector's HNSW needs a fixed dimension, and each model has its own.
    "CREATE INDEX IF NOT EXISTS segment_search_minilm_hnsw ON segment_search "
    "USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
    "WHERE model = 'minilm+speaker'",
]

#: Ties to the log: a row goes with its segment (the one way segments leave is a meeting's deletion), the
#: service's role, and row-level security per tenant. Not a foreign key: one on `segments` would make a
#: TRUNCATE of the log fail with "referenced in a foreign key" before the log's own trigger refuses it by name.
LOG_LINKS = [
    """CREATE FUNCTION meetmem_segment_search_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM segment_search WHERE segment_id IN (SELECT segment_id FROM gone);
          RETURN NULL;
        END $$""",
    "CREATE TRIGGER segments_take_search_rows AFTER DELETE ON segments REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION meetmem_segment_search_follow()",
    f"GRANT SELECT, INSERT, UPDATE, DELETE ON segment_search TO {APP_ROLE}",
    "ALTER TABLE segment_search ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE segment_search FORCE ROW LEVEL SECURITY",
    f"CREATE POLICY segment_search_tenant ON segment_search USING (tenant = {_TENANT} OR {_TENANT} = '*') "
    f"WITH CHECK (tenant = {_TENANT})",
]

UPGRADE = SEARCH_TABLE + LOG_LINKS

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS segments_take_search_rows ON segments",
    "DROP FUNCTION IF EXISTS meetmem_segment_search_follow()",
    "DROP TABLE IF EXISTS segment_search",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
