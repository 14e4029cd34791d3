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
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..harness import BenchDataError, guarded, say_if

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext

KEYWORDS = ("bm25", "fts", "fts_cd")
TENANT = "bench"


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


def _questions(data: Path, n: int) -> list[str]:
    from ..corpora.qmsum import load_qmsum

    qs = [q.query for q in load_qmsum(data / "qmsum", "val")[1]]
    random.Random(3).shuffle(qs)
    return qs[:n]


def run_bench(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..harness import bench_embedder
    from .pgsearch_quality import embed_pool, quality
    from .pgsearch_scale import scale

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
    say = lambda line: say_if(verbose, line)  # noqa: E731
    embedder = bench_embedder("minilm", ctx, verbose)
    if embedder is None:
        raise BenchDataError("the benchmark needs the minilm embedding model")
    result: dict[str, Any] = {"benchmark": "pgsearch", "date": time.strftime("%Y-%m-%d"),
                              "embedder": embedder.name, "meeting_size": args.meeting_size}
    pool: list[tuple[str, str | None, np.ndarray]] = []
    with database(getattr(args, "database_url", None), say=say) as url:
        prepare_schema(url)
        if "quality" in parts:
            result["quality"] = quality(url, data, embedder, limit=args.limit, say=say, pool_out=pool)
        if "scale" in parts and sizes:
            if not pool:
                pool = embed_pool(data, embedder, args.pool, say)
            prepare_schema(url)
            result["scale"] = {
                "synthetic": f"{len(pool)} real QMSum/LoCoMo turns with their real minilm vectors; each segment two "
                             "of them (text joined, vector v_a + w v_b normalised, w in [0.3, 1])",
                "sizes": scale(url, sizes, pool, embedder, _questions(data, args.queries),
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
