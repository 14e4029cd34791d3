"""PostgreSQL's derived search rows: one per segment, what any API process or worker reads to search.

One row per segment (`segment_search`, Alembic revision b20s01_search) holds the document number (chain
position), times, speaker, whether a later correction replaced it, the lexemes of the product's tokenizer
(`lexed`), their full-text vector (`fts`, GIN-indexed) and the segment's embedding (pgvector). Writing the rows
is store/pg/search_rows.py; the queries across all of a tenant's meetings (the nearest vectors, exact or by
HNSW, and the best full-text matches) are store/pg/search_across.py.

A meeting's own questions rank in process, exactly as on SQLite (`PgTranscriptSearch`,
store/pg/meeting_search.py): the in-process BM25 ranked better than Postgres' `ts_rank`/`ts_rank_cd` on QMSum
and LoCoMo (docs/BENCHMARKS.md, issue 20, where the comparison's recipe is kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..index.embedder_routes import EmbedderRoutes
from ..index.search_types import SearchOptions
from ..index.tokenize import MeetingTokenizer
from .search_across import DenseRanking, PgSearchAcross
from .search_rows import PgSearchRows

if TYPE_CHECKING:
    import psycopg

    from ..index.embedders import Embedder


#: The service's database role (store/pg migrations revision 0001).
APP_ROLE = "meetmem_app"
#: Models whose vectors have an HNSW index (a partial expression index per model: see the migration).
HNSW_INDEXED: dict[str, int] = {"minilm+speaker": 384}


class PgSearch(PgSearchRows, PgSearchAcross):
    """Writes segments into `segment_search` (`PgSearchRows`) and ranks them across meetings (`PgSearchAcross`).

    Args:
        pool: a `psycopg_pool.ConnectionPool` on the database (pgvector's types registered: `connect_pool`).
        embedder: the dense model (or models by language), or None for lexical rows alone.
        tokenizer: the lexeme tokenizer (the BM25 one).
        options: the search's options (how a segment is embedded, the candidate pool).
        dense: `exact` (every vector compared) or `hnsw` (pgvector's HNSW index with iterative scans, for the
            models in `HNSW_INDEXED`).
        ef_search: HNSW's candidate list (200: recall@10 0.94 at 1M segments, 100: 0.87; docs/BENCHMARKS.md,
            issue 20).
    """

    def __init__(self, pool: Any, embedder: Embedder | EmbedderRoutes | None = None, *,
                 tokenizer: MeetingTokenizer | None = None, options: SearchOptions | None = None,
                 dense: DenseRanking = "exact", ef_search: int = 200) -> None:
        self.pool = pool
        if embedder is None or isinstance(embedder, EmbedderRoutes):
            self.routes = embedder
        else:
            self.routes = EmbedderRoutes(embedder)
        self.tokenizer = tokenizer or MeetingTokenizer()
        self.options = options or SearchOptions()
        self.dense = dense
        self.ef_search = ef_search

    @contextmanager
    def session(self, tenant: str) -> Iterator[psycopg.Connection]:
        """One transaction serving `tenant`: row-level security shows it that tenant's rows alone."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('app.tenant', %s, true)", (tenant,))
            yield conn

    def _dense_rows(self, conn: psycopg.Connection, tenant: str, model: str, vector: np.ndarray, pool: int,
                    where: str, params: list[Any], method: DenseRanking | None = None) -> list[tuple[str, float]]:
        """The tenant's nearest rows of one model by cosine, best first: (segment id, cosine); `where` (SQL
        starting with AND) may narrow the scope."""
        from psycopg import sql

        method = method or self.dense
        vec = np.asarray(vector, dtype=np.float32)
        dim = HNSW_INDEXED.get(model)
        if method == "hnsw" and dim is not None and dim == len(vec):
            with conn.transaction():  # a savepoint in the search's transaction: SET LOCAL lasts until its end
                conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(int(self.ef_search))))
                conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                # The model as a literal: the planner uses a partial index only when it can prove its predicate.
                query = sql.SQL(
                    "SELECT segment_id, doc, 1 - (embedding::vector({dim}) <=> %s::vector({dim})) AS cos "
                    "FROM segment_search WHERE tenant = %s AND model = {model} AND live " + where
                    + " ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
                ).format(dim=sql.Literal(dim), model=sql.Literal(model))
                rows = conn.execute(query, [vec, tenant, *params, vec, pool]).fetchall()
            # relaxed_order may return near-ties slightly out of order.
            return [(s, c) for s, _, c in sorted(((s, d, float(c)) for s, d, c in rows), key=lambda r: (-r[2], r[1]))]
        rows = conn.execute(
            "SELECT segment_id, 1 - (embedding <=> %s) AS cos FROM segment_search WHERE tenant = %s"
            " AND model = %s AND live " + where + " ORDER BY embedding <=> %s, doc LIMIT %s",
            [vec, tenant, model, *params, vec, pool],
        ).fetchall()
        return [(s, float(c)) for s, c in rows]


def connect_pool(conninfo: str, *, min_size: int = 1, max_size: int = 4, role: str | None = APP_ROLE) -> Any:
    """A connection pool on `conninfo` with pgvector's types registered on every connection, each acting as
    `role` when the database has it (None: as the URL's user, for tools that own the tables)."""
    try:
        from pgvector.psycopg import register_vector
        from psycopg import sql
        from psycopg_pool import ConnectionPool
    except ImportError as exc:
        from ..index.errors import MissingDependency

        raise MissingDependency("psycopg-pool") from exc

    def configure(conn: Any) -> None:
        register_vector(conn)
        # The service's role, as the log's connections take it (row-level security and grants bind it).
        if role is not None:
            acts = conn.execute("SELECT current_user = %s OR NOT EXISTS (SELECT FROM pg_roles WHERE rolname = %s)",
                                (role, role)).fetchone()[0]
            if not acts:
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        conn.commit()

    return ConnectionPool(conninfo, min_size=min_size, max_size=max_size, configure=configure, open=True,
                          kwargs={"autocommit": True})
