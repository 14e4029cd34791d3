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

#: The statements, in order; tests and benchmarks that start a bare server apply the same list.
UPGRADE = [
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

DOWNGRADE = [
    "DROP TABLE IF EXISTS segment_search",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
