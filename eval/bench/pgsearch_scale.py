"""`meetmem bench pgsearch`'s scale part: synthetic tenants of real sentences and their real vectors, COPY-loaded;
search p95 and recall@10 of HNSW against exact, across the tenant and within a meeting, query embedding included."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .pgsearch import KEYWORDS, TENANT

if TYPE_CHECKING:
    from meetmem.store.index.embedders import Embedder


def _load_rows(url: str, pool: Sequence[tuple[str, str | None, np.ndarray]], first: int, count: int,
               meeting_size: int, seed: int, say: Callable[[str], None]) -> float:
    """COPY `count` synthetic segments (numbers `first`..) into `segment_search`; returns seconds."""
    import psycopg
    from pgvector.psycopg import register_vector

    from meetmem.store.index.tokenize import MeetingTokenizer
    from meetmem.store.pg.lexemes import tsvector_literal

    tokenizer = MeetingTokenizer()
    tokens = [tokenizer.tokens(text) for text, _s, _v in pool]
    vectors = np.stack([v for _t, _s, v in pool]).astype(np.float32)
    rng = np.random.default_rng(seed + first)
    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        cur = conn.cursor()
        # Binary COPY (a vector's text form costs 0.5 ms a row to format) into an unlogged staging table, whose
        # tsvector text is then cast in one INSERT ... SELECT (psycopg has no binary tsvector dumper).
        cur.execute("CREATE UNLOGGED TABLE IF NOT EXISTS segment_search_load (segment_id text, tenant text, "
                    "meeting_id text, doc integer, start_s double precision, end_s double precision, speaker text, "
                    "lexed text, fts text, model text, embedding vector)")
        step = 50_000
        for lo in range(first, first + count, step):
            hi = min(first + count, lo + step)
            n = hi - lo
            a = rng.integers(0, len(pool), n)
            b = rng.integers(0, len(pool), n)
            # Always two sentences: one alone would repeat a pool vector exactly (1M segments from ~20k
            # sentences), and exact ties make a nearest-neighbour recall by id meaningless.
            two = np.ones(n, dtype=bool)
            w = rng.uniform(0.3, 1.0, n)
            vecs = vectors[a] + np.where(two, w, 0.0)[:, None].astype(np.float32) * vectors[b]
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            cur.execute("TRUNCATE segment_search_load")
            with cur.copy("COPY segment_search_load FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text", "text", "text", "int4", "float8", "float8", "text", "text", "text", "text",
                                "vector"])
                for j in range(n):
                    i = lo + j
                    toks = tokens[a[j]] + tokens[b[j]] if two[j] else tokens[a[j]]
                    doc = i % meeting_size
                    copy.write_row((f"s{i}", TENANT, f"m{i // meeting_size}", doc, 6.0 * doc, 6.0 * doc + 6,
                                    pool[a[j]][1], " ".join(toks), tsvector_literal(toks), "minilm+speaker", vecs[j]))
            cur.execute("INSERT INTO segment_search (segment_id, tenant, meeting_id, doc, start_s, end_s, speaker, "
                        "lexed, "
                        "fts, model, embedding) SELECT segment_id, tenant, meeting_id, doc, start_s, end_s, speaker, "
                        "lexed, fts::tsvector, model, embedding FROM segment_search_load")
            say(f"  loaded {hi:,} segments ({time.perf_counter() - t0:.0f} s)")
        cur.execute("DROP TABLE segment_search_load")
    return time.perf_counter() - t0


def _pcts(values: Sequence[float], search_only: Sequence[float] | None = None) -> dict[str, float]:
    """p50 and p95 in ms (of the whole: query embedding + search), and of the search alone when given."""
    def p(xs: Sequence[float], q: float) -> float:
        ordered = sorted(xs)
        return round(1000 * (statistics.median(ordered) if q == 0.5 else
                             ordered[min(len(ordered) - 1, int(q * len(ordered)))]), 2)

    out = {"p50_ms": p(values, 0.5), "p95_ms": p(values, 0.95), "n": len(values)}
    if search_only:
        out |= {"search_p50_ms": p(search_only, 0.5), "search_p95_ms": p(search_only, 0.95)}
    return out


class _Timer:
    """Per-query seconds: `embed` around the query embedding, then `search`; totals are their sums."""

    def __init__(self) -> None:
        self.total: list[float] = []
        self.search: list[float] = []
        self._t = 0.0
        self._e = 0.0

    def start(self) -> None:
        self._t = time.perf_counter()

    def embedded(self) -> None:
        self._e = time.perf_counter()

    def stop(self) -> None:
        end = time.perf_counter()
        self.total.append(end - self._t)
        self.search.append(end - self._e)

    def figures(self) -> dict[str, float]:
        return _pcts(self.total, self.search)


def scale(url: str, sizes: Sequence[int], pool: Sequence[tuple[str, str | None, np.ndarray]], embedder: Embedder,
           questions: Sequence[str], *, meeting_size: int, exact_queries: int, ef_values: Sequence[int],
           say: Callable[[str], None]) -> dict[str, Any]:
    import psycopg

    from meetmem.store.pg.search import PgSearch, PgSearchOptions, connect_pool

    out: dict[str, Any] = {}
    loaded = 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX IF EXISTS segment_search_minilm_hnsw")
        conn.execute("DROP INDEX IF EXISTS segment_search_fts")
    for size in sorted(sizes):
        say(f"scale: loading up to {size:,} segments ...")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP INDEX IF EXISTS segment_search_minilm_hnsw")
            conn.execute("DROP INDEX IF EXISTS segment_search_fts")
        added = size - loaded
        copy_s = _load_rows(url, pool, loaded, added, meeting_size, 11, say)
        loaded = size
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET maintenance_work_mem = '3GB'")
            conn.execute("SET max_parallel_maintenance_workers = 2")
            t = time.perf_counter()
            conn.execute("CREATE INDEX segment_search_fts ON segment_search USING gin (fts)")
            gin_s = time.perf_counter() - t
            say(f"  GIN index in {gin_s:.0f} s; building HNSW ...")
            t = time.perf_counter()
            conn.execute("CREATE INDEX segment_search_minilm_hnsw ON segment_search "
                         "USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                         "WHERE model = 'minilm+speaker'")
            hnsw_s = time.perf_counter() - t
            conn.execute("ANALYZE segment_search")
            table_mb = conn.execute("SELECT pg_total_relation_size('segment_search') / 1048576.0").fetchone()[0]
            hnsw_mb = conn.execute("SELECT pg_relation_size('segment_search_minilm_hnsw') / 1048576.0").fetchone()[0]
        say(f"  HNSW index in {hnsw_s:.0f} s; measuring ...")
        out[str(size)] = {
            "segments": size, "meetings": size // meeting_size,
            "copy_s": round(copy_s, 1), "copy_rows_per_s": round(added / max(copy_s, 1e-9)),
            "gin_build_s": round(gin_s, 1), "hnsw_build_s": round(hnsw_s, 1),
            "table_mb_total": round(float(table_mb)), "hnsw_index_mb": round(float(hnsw_mb)),
            **_measure(url, embedder, questions, size // meeting_size, exact_queries=exact_queries,
                       ef_values=ef_values, pg_search=(PgSearch, PgSearchOptions, connect_pool)),
        }
        say(json.dumps(out[str(size)]))
    return out


def _measure(url: str, embedder: Embedder, questions: Sequence[str], meetings: int, *, exact_queries: int,
             ef_values: Sequence[int], pg_search: tuple[Any, Any, Any]) -> dict[str, Any]:
    PgSearch, PgSearchOptions, connect_pool = pg_search  # noqa: N806 (classes passed in)
    rng = random.Random(5)
    pool = connect_pool(url, max_size=2, role=None)
    result: dict[str, Any] = {}
    key = "minilm+speaker"

    def embed(q: str, timer: _Timer) -> np.ndarray:
        timer.start()
        qv = embedder.encode_query(q)
        timer.embedded()
        return qv

    try:
        exact = PgSearch(pool, embedder, options=PgSearchOptions(dense="exact"))
        # Across the tenant: a scan of every vector vs HNSW.
        timer, truth, tenth = _Timer(), [], []
        for q in questions[:exact_queries]:
            qv = embed(q, timer)
            found = exact.dense_across(TENANT, qv, model=key, k=10, method="exact")
            timer.stop()
            truth.append([sid for sid, _ in found])
            tenth.append(found[-1][1] if found else 1.0)
        across: dict[str, Any] = {"exact": timer.figures()}
        for ef in ef_values:
            hnsw = PgSearch(pool, embedder, options=PgSearchOptions(dense="hnsw", ef_search=ef))
            timer, rec, rec_dist = _Timer(), [], []
            for i, q in enumerate(questions):
                qv = embed(q, timer)
                found = hnsw.dense_across(TENANT, qv, model=key, k=10)
                timer.stop()
                if i < len(truth):
                    rec.append(len({sid for sid, _ in found} & set(truth[i])) / 10)
                    # Tie-aware: a hit as near as the exact 10th counts (equal vectors have equal cosines).
                    rec_dist.append(min(10, sum(1 for _sid, cos in found if cos >= tenth[i] - 1e-6)) / 10)
            across[f"hnsw_ef{ef}"] = {**timer.figures(), "recall@10_vs_exact": round(sum(rec) / len(rec), 4),
                                      "recall@10_by_distance": round(sum(rec_dist) / len(rec_dist), 4)}
        result["dense_across_tenant"] = across

        # Within one meeting: what a question to one meeting does.
        picks = [(q, f"m{rng.randrange(meetings)}") for q in questions]
        within: dict[str, Any] = {}
        timer, truth_m = _Timer(), []
        for q, m in picks:
            qv = embed(q, timer)
            truth_m.append([h.segment_id for h in exact.search(m, q, tenant=TENANT, k=10, mode="dense",
                                                                query_vectors={key: qv})])
            timer.stop()
        within["dense_exact"] = timer.figures()
        hnsw = PgSearch(pool, embedder, options=PgSearchOptions(dense="hnsw", ef_search=100))
        timer, rec = _Timer(), []
        for (q, m), want in zip(picks, truth_m, strict=True):
            qv = embed(q, timer)
            got = [h.segment_id for h in hnsw.search(m, q, tenant=TENANT, k=10, mode="dense", query_vectors={key: qv})]
            timer.stop()
            rec.append(len(set(got) & set(want)) / max(1, len(want)))
        within["dense_hnsw_ef100"] = {**timer.figures(), "recall@10_vs_exact": round(sum(rec) / len(rec), 4)}
        for kw in KEYWORDS:
            s = PgSearch(pool, embedder, options=PgSearchOptions(keyword=kw))
            timer, rebuild = _Timer(), []
            for q, m in picks:
                if kw == "bm25":
                    t = time.perf_counter()
                    s.rebuild_bm25(m, tenant=TENANT)
                    rebuild.append(time.perf_counter() - t)
                qv = embed(q, timer)
                s.search(m, q, tenant=TENANT, k=10, query_vectors={key: qv})
                timer.stop()
            within[f"hybrid_{kw}_exact"] = timer.figures()
            if rebuild:
                within["bm25_meeting_rebuild"] = _pcts(rebuild)
        result["within_meeting"] = within
        with pool.connection() as conn:
            plan = conn.execute(
                "EXPLAIN SELECT segment_id FROM segment_search WHERE tenant = 'bench' AND model = 'minilm+speaker' "
                "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 10",
                (embedder.encode_query(questions[0]),)).fetchall()
        result["across_plan_uses_hnsw"] = any("segment_search_minilm_hnsw" in row[0] for row in plan)
    finally:
        pool.close()
    return result
