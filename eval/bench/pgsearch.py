"""`meetmem bench pgsearch`: search on PostgreSQL, keyword ranking chosen by quality and vectors by latency.

Prints ONE JSON object on stdout; progress goes to stderr. Two parts, both against a real PostgreSQL with
pgvector (`--database URL`, whose segment_search table is dropped and rebuilt; else a throwaway server
started in a temporary folder and removed after):

``quality`` (QMSum val from ``--data``/qmsum, LoCoMo dev from ``--data``/locomo): every meeting goes through
the product's own paths (`TranscriptLog.append`, `TranscriptSearch`, which embeds and caches the vectors),
then its rows and those same vectors are copied into `segment_search` (store/pg/search.py). Each query is
put to the SQLite backend's hybrid search (the reference) and to `PgSearch` with each keyword ranking:
``bm25`` (in-process BM25 rebuilt from the database), ``fts`` (Postgres `ts_rank`) and ``fts_cd``
(`ts_rank_cd`), each alone and fused with the pgvector ranking. QMSum is scored as `bench qmsum` scores it
(hit@1, P@5 against the annotated turn spans), LoCoMo as `bench locomo` does (evidence recall@5).

``scale`` (``--sizes``, default 100000,1000000 segments): a synthetic tenant of meetings of
``--meeting-size`` segments. Each segment's text is two real sentences of the corpora (QMSum and
LoCoMo turns, drawn at random), and its vector the normalised weighted sum of those sentences' real
embeddings (`v_a + w v_b`, w uniform in [0.3, 1]): real text and real embedding geometry without embedding
a million texts on two cores. Rows are bulk-loaded with COPY, then the HNSW index is built (timed). For
real questions (QMSum queries, embedded at query time: every latency includes the query embedding):

* across the tenant: exact nearest neighbours (a scan) vs HNSW at several `ef_search`, p50/p95 and
  recall@10 of HNSW against exact;
* within one meeting (the product's search): dense exact vs HNSW (iterative scan), and the whole hybrid
  search with each keyword ranking; plus the cost of rebuilding one meeting's BM25 from the database.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..harness import BenchDataError, RunClock, guarded

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.index.embedders import Embedder

KEYWORDS = ("bm25", "fts", "fts_cd")
TENANT = "bench"


def _say(enabled: bool, message: str) -> None:
    if enabled:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()


@contextmanager
def database(url: str | None, *, say: Callable[[str], None]) -> Iterator[str]:
    """The given database, or a throwaway local PostgreSQL with pgvector, removed afterwards."""
    if url:
        yield url
        return
    from meetmem.store.pg.server import LocalPostgres

    with tempfile.TemporaryDirectory(prefix="meetmem-bench-pg-") as tmp:
        server = LocalPostgres(Path(tmp) / "data", durable=False)
        url = server.start()
        say(f"started a throwaway PostgreSQL at {url}")
        try:
            yield url
        finally:
            server.remove()


def prepare_schema(url: str) -> None:
    """The search table, as its Alembic revision creates it, without its ties to the log: the synthetic rows
    of the scale part stand for segments that are not stored (a throwaway server has no log)."""
    import psycopg

    from meetmem.store.pg.migrations.versions import b20s01_search as revision

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in revision.DOWNGRADE:
            conn.execute(statement)
        for statement in revision.SEARCH_TABLE:
            conn.execute(statement)


# -- quality ----------------------------------------------------------------------------------------------------
def _copy_meeting(pg: Any, log: Any, search: Any, meeting_id: str) -> int:
    """The meeting's rows and cached vectors from the SQLite backend into `segment_search`."""
    from meetmem.store.index.search_types import vector_key
    from meetmem.store.pg.lexemes import tsvector_literal

    segments = list(log.chain(meeting_id))
    opts = search.options
    key = vector_key(search.routes.default.name, speaker=opts.embed_speaker) if search.routes else None
    vectors: dict[str, np.ndarray] = {}
    if key is not None:
        for sid, blob in log.read("SELECT segment_id, vector FROM segment_vectors WHERE model = ?", [key]):
            vectors[sid] = np.frombuffer(blob, dtype=np.float32)
    rows = []
    for s in segments:
        tokens = search.tokenizer.tokens(s.text)
        vec = vectors.get(s.segment_id)
        rows.append((s.segment_id, TENANT, meeting_id, s.chain_pos, s.start, s.end, s.speaker, " ".join(tokens),
                     tsvector_literal(tokens), key if vec is not None else None, vec))
    with pg.connection() as conn, conn.transaction():
        conn.cursor().executemany(
            "INSERT INTO segment_search (segment_id, tenant, meeting_id, doc, start_s, end_s, speaker, lexed, fts, "
            "model, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s, %s)", rows)
    return len(rows)


def _quality(url: str, data: Path, embedder: Embedder, *, limit: int | None, say: Callable[[str], None],
             pool_out: list[tuple[str, str | None, np.ndarray]]) -> dict[str, Any]:
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.index.search_types import vector_key
    from meetmem.store.log import TranscriptLog
    from meetmem.store.pg.search import PgSearch, PgSearchOptions, connect_pool

    from ..corpora.locomo import conversation_segments, evidence_recall, load_locomo
    from ..corpora.qmsum import MethodScores, load_qmsum, qmsum_segments

    methods = ["sqlite_hybrid", "sqlite_bm25"] + [f"pg_{kw}{suffix}" for kw in KEYWORDS for suffix in ("", "_hybrid")]
    qm_scores = {m: MethodScores() for m in methods}
    lc_recall: dict[str, list[float]] = {m: [] for m in methods}
    lc_seconds: dict[str, float] = dict.fromkeys(methods, 0.0)
    pg = connect_pool(url, role=None)
    searches = {kw: PgSearch(pg, embedder, options=PgSearchOptions(keyword=kw)) for kw in KEYWORDS}
    clock = RunClock()

    def ranked(method: str, meeting_id: str, query: str, qv: np.ndarray, sqlite: Any, k: int) -> list[str]:
        if method.startswith("sqlite_"):
            mode = "hybrid" if method.endswith("hybrid") else "bm25"
            return [h.segment.segment_id for h in sqlite.search(meeting_id, query, k=k, mode=mode, query_vector=qv)]
        kw = method.removeprefix("pg_").removesuffix("_hybrid")
        mode = "hybrid" if method.endswith("_hybrid") else "bm25"
        vectors = {vector_key(embedder.name, speaker=sqlite.options.embed_speaker): qv}
        return [h.segment_id for h in searches[kw].search(meeting_id, query, tenant=TENANT, k=k, mode=mode,
                                                          query_vectors=vectors)]

    try:
        with tempfile.TemporaryDirectory(prefix="meetmem-bench-pgq-") as tmp, \
                TranscriptLog(Path(tmp) / "q.db") as log:
            sqlite = TranscriptSearch(log, embedder)
            meetings, queries = load_qmsum(data / "qmsum", "val")
            meetings = meetings[:limit] if limit else meetings
            by_meeting: dict[str, list[Any]] = {}
            for q in queries:
                by_meeting.setdefault(q.meeting_id, []).append(q)
            n_queries = 0
            for number, meeting in enumerate(meetings, start=1):
                segments, _skipped = qmsum_segments(meeting)
                log.append(meeting.meeting_id, "qmsum", segments)
                t = time.perf_counter()
                sqlite.meeting_index(meeting.meeting_id)
                clock.add("embed", time.perf_counter() - t)
                _copy_meeting(pg, log, sqlite, meeting.meeting_id)
                turn_of = {s.segment_id: s.seq for s in log.chain(meeting.meeting_id)}
                for q in by_meeting.get(meeting.meeting_id, []):
                    qv = embedder.encode_query(q.query)
                    n_queries += 1
                    for m in methods:
                        t = time.perf_counter()
                        ids = ranked(m, meeting.meeting_id, q.query, qv, sqlite, 5)
                        qm_scores[m].seconds += time.perf_counter() - t
                        qm_scores[m].add([turn_of.get(i) for i in ids], q, 5)
                say(f"QMSum [{number}/{len(meetings)}] {meeting.meeting_id}: {len(segments)} turns")
            _collect_pool(log, sqlite, pool_out)

        with tempfile.TemporaryDirectory(prefix="meetmem-bench-pgl-") as tmp, \
                TranscriptLog(Path(tmp) / "l.db") as log:
            sqlite = TranscriptSearch(log, embedder)
            conversations = load_locomo(data / "locomo")
            conversations = conversations[:limit] if limit else conversations
            n_questions = 0
            for number, conv in enumerate(conversations, start=1):
                segments, dia_ids, _table = conversation_segments(conv)
                log.append(conv.sample_id, "locomo", segments)
                t = time.perf_counter()
                sqlite.meeting_index(conv.sample_id)
                clock.add("embed", time.perf_counter() - t)
                _copy_meeting(pg, log, sqlite, conv.sample_id)
                dia_of = {s.segment_id: dia_ids[s.seq] for s in log.chain(conv.sample_id)}
                for q in conv.questions:
                    if not q.evidence or q.category == 5:
                        continue
                    qv = embedder.encode_query(q.question)
                    n_questions += 1
                    for m in methods:
                        t = time.perf_counter()
                        ids = ranked(m, conv.sample_id, q.question, qv, sqlite, 5)
                        lc_seconds[m] += time.perf_counter() - t
                        lc_recall[m].append(evidence_recall(q.evidence, [dia_of[i] for i in ids], 5)[0])
                say(f"LoCoMo [{number}/{len(conversations)}] {conv.sample_id}: {len(segments)} turns")
            _collect_pool(log, sqlite, pool_out)
    finally:
        pg.close()
    return {
        "qmsum_val": {"queries": n_queries, "methods": {
            m: {"hit@1": s.summary(5, [])["hit@1"], "p@5": s.summary(5, [])["p@5"],
                "ms_per_query": s.summary(5, [])["ms_per_query"]} for m, s in qm_scores.items()}},
        "locomo_dev": {"questions_answerable": n_questions, "methods": {
            m: {"recall@5": round(sum(v) / len(v), 4) if v else None,
                "ms_per_query": round(1000 * lc_seconds[m] / max(1, len(v)), 1)} for m, v in lc_recall.items()}},
        "note": "ms_per_query excludes the query embedding (done once per query and shared by every method)",
        "wall_time": clock.report(),
    }


def _collect_pool(log: Any, search: Any, out: list[tuple[str, str | None, np.ndarray]]) -> None:
    """Every embedded segment's (text, speaker, vector): the sentences the scale part draws from."""
    from meetmem.store.index.search_types import vector_key

    key = vector_key(search.routes.default.name, speaker=search.options.embed_speaker)
    for text, speaker, blob in log.read(
            "SELECT s.text, s.speaker, v.vector FROM segments s JOIN segment_vectors v USING (segment_id) "
            "WHERE v.model = ?", [key]):
        out.append((text, speaker, np.frombuffer(blob, dtype=np.float32).copy()))


def _embed_pool(data: Path, embedder: Embedder, size: int, say: Callable[[str], None]
                ) -> list[tuple[str, str | None, np.ndarray]]:
    """`size` real turns of QMSum and LoCoMo embedded as the search embeds them (when quality did not run)."""
    from ..corpora.locomo import load_locomo
    from ..corpora.qmsum import clean_turn, load_qmsum

    turns: list[tuple[str, str | None]] = []
    for meeting in load_qmsum(data / "qmsum", "val")[0]:
        turns += [(clean_turn(t.get("content") or ""), t.get("speaker")) for t in meeting.turns]
    for conv in load_locomo(data / "locomo"):
        turns += [(t.text, t.speaker) for s in conv.sessions for t in s.turns]
    turns = [(t, s) for t, s in turns if t]
    random.Random(7).shuffle(turns)
    turns = turns[:size]
    say(f"embedding {len(turns)} real turns for the synthetic corpus ...")
    vectors = embedder.encode([f"{s}: {t}" if s else t for t, s in turns])
    return [(t, s, v) for (t, s), v in zip(turns, vectors, strict=True)]


# -- scale ------------------------------------------------------------------------------------------------------
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


def _scale(url: str, sizes: Sequence[int], pool: Sequence[tuple[str, str | None, np.ndarray]], embedder: Embedder,
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


def _questions(data: Path, n: int) -> list[str]:
    from ..corpora.qmsum import load_qmsum

    qs = [q.query for q in load_qmsum(data / "qmsum", "val")[1]]
    random.Random(3).shuffle(qs)
    return qs[:n]


def run_bench(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..harness import bench_embedder

    data = Path(args.data)
    if not (data / "qmsum").is_dir() or not (data / "locomo").is_dir():
        raise BenchDataError(f"{data} lacks qmsum/ and locomo/ (the shared corpora folder)")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()] if args.sizes else []
    if any(s < args.meeting_size or s % args.meeting_size for s in sizes):
        raise BenchDataError(f"--sizes must be multiples of --meeting-size ({args.meeting_size})")
    parts = set(args.parts.split(","))
    unknown = parts - {"quality", "scale"}
    if unknown:
        raise BenchDataError(f"unknown part(s) {', '.join(sorted(unknown))}: use quality, scale")
    verbose = not args.quiet
    say = lambda line: _say(verbose, line)  # noqa: E731
    embedder = bench_embedder("minilm", ctx, verbose)
    if embedder is None:
        raise BenchDataError("the benchmark needs the minilm embedding model")
    result: dict[str, Any] = {"benchmark": "pgsearch", "date": time.strftime("%Y-%m-%d"),
                              "embedder": embedder.name, "meeting_size": args.meeting_size}
    pool: list[tuple[str, str | None, np.ndarray]] = []
    with database(getattr(args, "database_url", None), say=say) as url:
        prepare_schema(url)
        if "quality" in parts:
            result["quality"] = _quality(url, data, embedder, limit=args.limit, say=say, pool_out=pool)
        if "scale" in parts and sizes:
            if not pool:
                pool = _embed_pool(data, embedder, args.pool, say)
            prepare_schema(url)
            result["scale"] = {
                "synthetic": f"{len(pool)} real QMSum/LoCoMo turns with their real minilm vectors; each segment two "
                             "of them (text joined, vector v_a + w v_b normalised, w in [0.3, 1])",
                "sizes": _scale(url, sizes, pool, embedder, _questions(data, args.queries),
                                meeting_size=args.meeting_size, exact_queries=args.exact_queries,
                                ef_values=[int(e) for e in args.ef.split(",")], say=say),
                "latency_includes_query_embedding": True,
            }
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "pgsearch", parents=[common], help="search on PostgreSQL: keyword ranking quality, pgvector latency at scale",
        description="Search on PostgreSQL + pgvector. quality: QMSum val and LoCoMo dev through the SQLite "
                    "reference and PgSearch with in-process BM25, ts_rank and ts_rank_cd (hit@1, P@5, recall@5). "
                    "scale: synthetic tenants of real sentences and vectors, COPY-loaded; search p95 and recall@10 "
                    "of HNSW vs exact, query embedding included. One JSON object on stdout.")
    p.add_argument("--data", required=True, help="the corpora folder holding qmsum/ and locomo/")
    p.add_argument("--parts", default="quality,scale", help="quality, scale or both (default: both)")
    p.add_argument("--sizes", default="100000,1000000", help="segment counts for the scale part")
    p.add_argument("--meeting-size", type=int, default=1000, help="segments per synthetic meeting")
    p.add_argument("--queries", type=int, default=200, help="questions timed at each size")
    p.add_argument("--exact-queries", type=int, default=50, help="of those, how many also run an exact scan")
    p.add_argument("--ef", default="40,100,200", help="HNSW ef_search values across the tenant")
    p.add_argument("--pool", type=int, default=20000, help="real turns to embed when quality did not run")
    p.add_argument("--limit", type=int, help="only the first N meetings of each corpus (quick checks)")
    p.set_defaults(func=guarded(run_bench))
