"""Hybrid search over a meeting's transcript on PostgreSQL: keyword ranking fused with pgvector's.

One derived row per segment (`segment_search`, Alembic revision b20s01_search) holds what search needs: the
document number (chain position), times, speaker, whether a later correction replaced it, the lexemes of the
product's tokenizer (`lexed`, beside the raw text in the log), their full-text vector (`fts`) and the
segment's embedding. Any API process or worker reads the same rows, so none holds state another lacks.

Keyword ranking (`PgSearchOptions.keyword`):

* `bm25`: rank-bm25's Okapi scores (`BM25Index`), kept in process per meeting and rebuilt from `lexed`
  on first use in any process (no re-tokenising), caught up by document number before each search. The
  default: it ranks better than Postgres' own scoring on QMSum and LoCoMo (docs/BENCHMARKS.md, issue 20),
  and a meeting's rebuild costs milliseconds.
* `fts` / `fts_cd`: Postgres full-text search over the same lexemes with a GIN index, ranked by
  `ts_rank` / `ts_rank_cd` (length-normalised). No state in process; no idf, which is why it ranks worse.

Dense ranking (`PgSearchOptions.dense`): `exact` (every vector of the meeting compared, as the SQLite
backend's flat index does) or `hnsw` (pgvector's HNSW index with iterative scans, for the default model).
Both fuse exactly as `TranscriptSearch` does (store/index/fusion.py), so the two backends rank alike.

Writing the rows (lexemes and vectors) is store/pg/search_rows.py; the queries across all of a tenant's
meetings, store/pg/search_across.py; the tsvector and tsquery forms of the lexemes, store/pg/lexemes.py.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..index.bm25 import BM25Index
from ..index.embedder_routes import EmbedderRoutes
from ..index.errors import SearchError
from ..index.fusion import adaptive_weights, coverage, fuse, with_neighbours
from ..index.query_adapters import QueryAdapters
from ..index.search_types import SearchFilters, vector_key
from ..index.tokenize import MeetingTokenizer
from .lexemes import quote_lexeme, tsquery_literal
from .search_across import PgSearchAcross
from .search_options import DenseRanking, PgSearchOptions
from .search_rows import PgSearchRows

if TYPE_CHECKING:
    import psycopg

    from ..index.embedders import Embedder

log = logging.getLogger(__name__)


#: The service's database role (store/pg migrations revision 0001).
APP_ROLE = "meetmem_app"
#: Models whose vectors have an HNSW index (a partial expression index per model: see the migration).
HNSW_INDEXED: dict[str, int] = {"minilm+speaker": 384}


@dataclass(frozen=True, slots=True)
class PgHit:
    """One result: the segment id, its document number (chain position), fused score and ranks."""

    segment_id: str
    doc: int
    score: float
    keyword_rank: int | None = None
    dense_rank: int | None = None


def idf_coverage(terms: Sequence[str], df: Mapping[str, int], n: int, held: Sequence[set[str]]) -> float:
    """`fusion.coverage` from document frequencies: the idf-weighted share of the query's distinct terms that
    the best of `held` (each a top document's lexemes) contains; an unseen term weighs as one said once."""
    distinct = set(terms)
    if not distinct or not held or n <= 0:
        return 0.0
    unseen = math.log(n + 0.5) - math.log(1.5)
    raw = {t: math.log(n - df[t] + 0.5) - math.log(df[t] + 0.5) for t in distinct if df.get(t)}
    floor = 0.25 * (sum(raw.values()) / len(raw)) if raw else 0.0
    weights = {t: (max(raw[t], floor) if raw[t] >= 0 else floor) if t in raw else unseen for t in distinct}
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return max(sum(w for t, w in weights.items() if t in doc) for doc in held) / total


@dataclass
class _MeetingBM25:
    bm25: BM25Index = field(default_factory=BM25Index)
    docs: list[int] = field(default_factory=list)  # BM25 document number -> meeting document number
    last_doc: int = -1
    lock: threading.Lock = field(default_factory=threading.Lock)


class PgSearch(PgSearchRows, PgSearchAcross):
    """Indexes segments into `segment_search` (`PgSearchRows`) and answers hybrid searches from it.

    Args:
        pool: a `psycopg_pool.ConnectionPool` on the database (pgvector's types registered: `connect_pool`).
        embedder: the dense model (or models by language), or None for keyword search alone.
        tokenizer: the lexeme tokenizer (the BM25 one).
        options: keyword and dense ranking, fusion settings.
    """

    def __init__(self, pool: Any, embedder: Embedder | EmbedderRoutes | None = None, *,
                 tokenizer: MeetingTokenizer | None = None, options: PgSearchOptions | None = None) -> None:
        self.pool = pool
        if embedder is None or isinstance(embedder, EmbedderRoutes):
            self.routes = embedder
        else:
            self.routes = EmbedderRoutes(embedder)
        self.tokenizer = tokenizer or MeetingTokenizer()
        self.options = options or PgSearchOptions()
        fusion = self.options.fusion
        self.query_adapters = QueryAdapters(speaker=fusion.embed_speaker) if fusion.query_adapter else None
        self._bm25: dict[tuple[str, str], _MeetingBM25] = {}
        self._lock = threading.Lock()

    @contextmanager
    def session(self, tenant: str) -> Iterator[psycopg.Connection]:
        """One transaction serving `tenant`: row-level security shows it that tenant's rows alone."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('app.tenant', %s, true)", (tenant,))
            yield conn

    # -- keyword rankings -------------------------------------------------------------------------------
    def forget(self, meeting_id: str, *, tenant: str) -> None:
        """Drop the meeting's in-process BM25 (after it was deleted)."""
        with self._lock:
            self._bm25.pop((tenant, meeting_id), None)

    def _meeting_bm25(self, conn: psycopg.Connection, tenant: str, meeting_id: str) -> _MeetingBM25:
        key = (tenant, meeting_id)
        with self._lock:
            state = self._bm25.get(key)
            if state is None:
                state = self._bm25[key] = _MeetingBM25()
        with state.lock:
            rows = conn.execute(
                "SELECT doc, lexed FROM segment_search WHERE tenant = %s AND meeting_id = %s AND doc > %s ORDER BY doc",
                (tenant, meeting_id, state.last_doc),
            ).fetchall()
            for doc, lexed in rows:
                state.bm25.add(lexed.split(" ") if lexed else [])
                state.docs.append(doc)
                state.last_doc = doc
        return state

    def rebuild_bm25(self, meeting_id: str, *, tenant: str) -> int:
        """Forget and rebuild one meeting's in-process BM25 from the database; returns its documents."""
        self.forget(meeting_id, tenant=tenant)
        with self.session(tenant) as conn:
            return len(self._meeting_bm25(conn, tenant, meeting_id).docs)

    def _keyword(self, conn: psycopg.Connection, tenant: str, meeting_id: str, terms: Sequence[str], pool: int,
                 where: str, params: list[Any]) -> tuple[list[tuple[int, float]], float]:
        """The keyword ranking (meeting document numbers, scores) and the query's coverage."""
        if not terms:
            return [], 0.0
        keyword = self.options.keyword
        if keyword == "bm25":
            state = self._meeting_bm25(conn, tenant, meeting_id)
            with state.lock:
                mask = self._allowed(conn, state, tenant, meeting_id, where, params)
                hits = state.bm25.top(terms, pool, mask)
                cov = coverage(state.bm25, terms, [d for d, _ in hits[:3]])
                return [(state.docs[d], s) for d, s in hits], cov
        rank = "ts_rank_cd" if keyword == "fts_cd" else "ts_rank"
        q = tsquery_literal(terms)
        rows = conn.execute(
            f"SELECT doc, {rank}(fts, q, 1) AS r, lexed FROM segment_search, CAST(%s AS tsquery) q "
            f"WHERE tenant = %s AND meeting_id = %s AND fts @@ q AND live {where} ORDER BY r DESC, doc LIMIT %s",
            [q, tenant, meeting_id, *params, pool],
        ).fetchall()
        if not rows:
            return [], 0.0
        distinct = sorted(set(terms))
        counts = conn.execute(
            "SELECT count(*), " + ", ".join(["count(*) FILTER (WHERE fts @@ CAST(%s AS tsquery))"] * len(distinct))
            + " FROM segment_search WHERE tenant = %s AND meeting_id = %s",
            [*(quote_lexeme(t) for t in distinct), tenant, meeting_id],
        ).fetchone()
        df = dict(zip(distinct, counts[1:], strict=True))
        held = [set(lexed.split(" ")) for _, _, lexed in rows[:3]]
        return [(doc, float(r)) for doc, r, _ in rows], idf_coverage(terms, df, int(counts[0]), held)

    def _allowed(self, conn: psycopg.Connection, state: _MeetingBM25, tenant: str, meeting_id: str,
                 where: str, params: list[Any]) -> np.ndarray | None:
        """Which BM25 documents are still live and pass the filters (None: all)."""
        rows = conn.execute(
            f"SELECT doc FROM segment_search WHERE tenant = %s AND meeting_id = %s AND NOT (live {where})",
            [tenant, meeting_id, *params],
        ).fetchall()
        if not rows:
            return None
        excluded = {doc for (doc,) in rows}
        return np.array([doc not in excluded for doc in state.docs], dtype=bool)

    # -- dense ranking ----------------------------------------------------------------------------------
    def _dense(self, conn: psycopg.Connection, tenant: str, meeting_id: str | None, model: str,
               vector: np.ndarray, pool: int, where: str, params: list[Any],
               method: DenseRanking | None = None) -> list[tuple[int, float]]:
        """The nearest rows of one model by cosine, best first: (document number, cosine).

        With `meeting_id` None, across every meeting of the tenant (document numbers are then meaningless;
        `dense_across` returns segment ids)."""
        return [(doc, cos) for _sid, doc, cos in
                self._dense_rows(conn, tenant, meeting_id, model, vector, pool, where, params, method)]

    def _dense_rows(self, conn: psycopg.Connection, tenant: str, meeting_id: str | None, model: str,
                    vector: np.ndarray, pool: int, where: str, params: list[Any],
                    method: DenseRanking | None = None) -> list[tuple[str, int, float]]:
        """`_dense`'s rows with their segment ids (`where` may narrow the scope further, as across meetings)."""
        from psycopg import sql

        method = method or self.options.dense
        scope = "tenant = %s" + (" AND meeting_id = %s" if meeting_id is not None else "")
        scope_params: list[Any] = [tenant] + ([meeting_id] if meeting_id is not None else [])
        vec = np.asarray(vector, dtype=np.float32)
        dim = HNSW_INDEXED.get(model)
        if method == "hnsw" and dim is not None and dim == len(vec):
            with conn.transaction():  # a savepoint in the search's transaction: SET LOCAL lasts until its end
                conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(int(self.options.ef_search))))
                conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                # The model as a literal: the planner uses a partial index only when it can prove its predicate.
                query = sql.SQL(
                    "SELECT segment_id, doc, 1 - (embedding::vector({dim}) <=> %s::vector({dim})) AS cos "
                    "FROM segment_search WHERE " + scope + " AND model = {model} AND live " + where
                    + " ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
                ).format(dim=sql.Literal(dim), model=sql.Literal(model))
                rows = conn.execute(query, [vec, *scope_params, *params, vec, pool]).fetchall()
            # relaxed_order may return near-ties slightly out of order.
            return sorted(((s, d, float(c)) for s, d, c in rows), key=lambda r: (-r[2], r[1]))
        rows = conn.execute(
            "SELECT segment_id, doc, 1 - (embedding <=> %s) AS cos FROM segment_search WHERE " + scope
            + " AND model = %s AND live " + where + " ORDER BY embedding <=> %s, doc LIMIT %s",
            [vec, *scope_params, model, *params, vec, pool],
        ).fetchall()
        return [(s, d, float(c)) for s, d, c in rows]

    def _models(self, conn: psycopg.Connection, tenant: str, meeting_id: str) -> list[str]:
        rows = conn.execute(
            "SELECT DISTINCT model FROM segment_search WHERE tenant = %s AND meeting_id = %s AND model IS NOT NULL",
            (tenant, meeting_id),
        ).fetchall()
        return sorted(m for (m,) in rows)

    def encode_query(self, query: str, models: Sequence[str]) -> dict[str, np.ndarray]:
        """The query embedded by each named model (vector keys, as stored in `model`)."""
        if self.routes is None:
            return {}
        speaker_form = self.options.fusion.embed_speaker
        by_key = {vector_key(name, speaker=speaker_form): m for name, m in self.routes.by_name().items()}
        wanted = [m for m in models if m in by_key] or [vector_key(self.routes.default.name, speaker=speaker_form)]
        vectors = {m: by_key[m].encode_query(query) for m in wanted}
        if self.query_adapters is not None:
            vectors = {m: self.query_adapters.apply(by_key[m].name, v) for m, v in vectors.items()}
        return vectors

    # -- search -----------------------------------------------------------------------------------------
    def search(self, meeting_id: str, query: str, *, tenant: str, k: int = 10,
               mode: Literal["hybrid", "bm25", "dense"] = "hybrid", filters: SearchFilters | None = None,
               query_vectors: Mapping[str, np.ndarray] | None = None) -> list[PgHit]:
        """The `k` best segments of a meeting for `query`, best first (mode `bm25` = keyword alone).

        Raises:
            SearchError: a bad `k` or mode, or `dense` without an embedding model.
        """
        if k <= 0:
            raise SearchError("k must be at least 1")
        if mode not in ("hybrid", "bm25", "dense"):
            raise SearchError(f"unknown search mode {mode!r}; use hybrid, bm25 or dense")
        if mode == "dense" and self.routes is None:
            raise SearchError("dense search needs an embedding model; none is configured")
        fusion = self.options.fusion
        pool = max(fusion.pool, k)
        where, params = _filter_sql(filters)
        terms = self.tokenizer.tokens(query)
        with self.session(tenant) as conn:
            keyword, cov = ([], 0.0) if mode == "dense" else self._keyword(
                conn, tenant, meeting_id, terms, pool, where, params)
            dense: list[list[tuple[int, float]]] = []
            if mode != "bm25" and self.routes is not None:
                models = self._models(conn, tenant, meeting_id)
                vectors = dict(query_vectors or {})
                if any(m not in vectors for m in models) or not vectors:
                    vectors.update(self.encode_query(query, [m for m in models if m not in vectors]))
                dense = [self._dense(conn, tenant, meeting_id, m, vectors[m], pool, where, params)
                         for m in models if m in vectors]
            if mode == "bm25" or not dense:
                ranked = [(d, s, r, None) for r, (d, s) in enumerate(keyword[:k], start=1)]
            elif mode == "dense" and len(dense) == 1:
                ranked = [(d, s, None, r) for r, (d, s) in enumerate(dense[0][:k], start=1)]
            else:
                weights = (adaptive_weights(fusion.adaptive_dense_weight, cov)
                           if fusion.adaptive_dense_weight is not None and mode == "hybrid"
                           else (fusion.bm25_weight, fusion.dense_weight))
                ranked = fuse(keyword if mode == "hybrid" else [], dense, weights,
                              convex=fusion.fusion == "convex", rrf_k=fusion.rrf_k)
                if mode == "hybrid" and fusion.neighbour_weight > 0 and ranked:
                    ranked = self._with_neighbours(conn, tenant, meeting_id, ranked, where, params)
                ranked = ranked[:k]
            docs = [d for d, *_ in ranked]
            ids = dict(conn.execute(
                "SELECT doc, segment_id FROM segment_search WHERE tenant = %s AND meeting_id = %s AND doc = ANY(%s)",
                (tenant, meeting_id, docs),
            ).fetchall()) if docs else {}
        return [PgHit(ids[d], d, float(s), br, dr) for d, s, br, dr in ranked if d in ids]

    def _with_neighbours(self, conn: psycopg.Connection, tenant: str, meeting_id: str, ranked: list,
                         where: str, params: list[Any]) -> list:
        """`fusion.with_neighbours` over the documents around the candidates that are live and pass the filters."""
        around = sorted({d for doc, *_ in ranked for d in (doc - 1, doc, doc + 1) if d >= 0})
        allowed = {doc for (doc,) in conn.execute(
            f"SELECT doc FROM segment_search WHERE tenant = %s AND meeting_id = %s AND doc = ANY(%s) AND live {where}",
            [tenant, meeting_id, around, *params],
        ).fetchall()}
        n = max(around) + 1
        mask = np.zeros(n, dtype=bool)
        mask[list(allowed)] = True
        return with_neighbours(ranked, n, self.options.fusion.neighbour_weight, mask)


def _filter_sql(filters: SearchFilters | None) -> tuple[str, list[Any]]:
    """SQL conditions (each starting with AND) and their parameters for a time range and speaker."""
    if filters is None:
        return "", []
    where, params = "", []
    if filters.start is not None:
        where += " AND end_s >= %s"
        params.append(filters.start)
    if filters.end is not None:
        where += " AND start_s <= %s"
        params.append(filters.end)
    if filters.speaker is not None:
        where += " AND lower(coalesce(speaker, '')) = lower(%s)"
        params.append(filters.speaker)
    return where, params


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
