"""`meetmem bench store`: ingest and search speed of the transcript store at 1k, 10k and 100k segments.

For each size N, one meeting of N generated segments (seeded, deterministic) is written through the one write
path, `TranscriptLog.append`, in batches of 50 from a few devices, as glasses would post them. Then:

* ingest: the log-append rate, the BM25 catch-up rate (a `TranscriptSearch` without embedder reading the new
  rows from the log, tokenizing and indexing them) and both combined; no embedding.
* embedding: the configured embedder computes every segment vector through `TranscriptSearch` (which caches
  them in `segment_vectors`); vectors are real embeddings of each segment's text. With `--distinct-texts`
  the corpus is drawn from that many distinct utterances and identical texts share one embedding (stated
  in the output as `vector_reuse`).
* index build: a fresh `TranscriptSearch` over the existing database (BM25 rebuild plus loading the cached
  vectors), split into its parts.
* search: latency of `search()` in bm25, dense and hybrid mode over generated questions (the query's embedding
  included: no `query_vector` is passed), the query embedding alone, the parts of a search timed one by one,
  hit@10 against the segment each question was made from, and the latencies again once the meeting holds one
  correction (`supersedes`).
* memory: peak RSS (VmHWM) of the process for that size (the peak is reset between sizes when Linux allows).

Prints its figures on stdout (one JSON object with --json); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, MODEL, QUIET, TENANT, flags
from meetmem.cli.output import emit_figures

from ..harness import SharedVectorEmbedder, checkout, db_bytes, machine_info, proc_status, rate, reset_peak_rss
from .search_timing import K, measure_search, timed_build
from .store_corpus import Corpus, generate_corpus, pick_questions

DEFAULT_SIZES = (1000, 10_000, 100_000)
DEFAULT_QUERIES = 250
DEFAULT_SEED = 20250304
TARGET_INGEST_PER_S = 2000.0
TARGET_HYBRID_P95_MS = 25.0
TARGET_HYBRID_SIZE = 100_000


# ------------------------------------------------------------------------------------------------------
# One size.
# ------------------------------------------------------------------------------------------------------


def _note(ctx: Any, message: str) -> None:
    if not ctx.quiet:
        from meetmem.cli.progress import note

        note(message)


def ingest(log: Any, meeting_id: str, tenant: str, corpus: Corpus, *, batch: int, devices: int) -> tuple[float, int]:
    """Append the corpus in consecutive blocks of `batch` segments, block i from device i % devices."""
    from meetmem.store.records import SegmentInput

    seqs = [0] * devices
    rng = random.Random(f"confidence:{len(corpus)}")
    elapsed = 0.0
    cpu = 0.0
    calls = 0
    for block, lo in enumerate(range(0, len(corpus), batch)):
        dev = block % devices
        items = []
        for i in range(lo, min(lo + batch, len(corpus))):
            items.append(SegmentInput(
                seq=seqs[dev], start=corpus.starts[i], end=corpus.ends[i], text=corpus.texts[i],
                speaker=corpus.speakers[i], lang="en", confidence=round(rng.uniform(0.78, 0.99), 3),
            ))
            seqs[dev] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        result = log.append(meeting_id, f"glasses-{dev + 1:02d}", items, tenant=tenant)
        elapsed += time.perf_counter() - t0
        cpu += time.process_time() - c0
        calls += 1
        if result.new != len(items):
            raise RuntimeError(f"append stored {result.new} of {len(items)} segments (meeting {meeting_id} reused?)")
    return elapsed, cpu, calls


def run_size(ctx: Any, args: argparse.Namespace, size: int, embedder: Any, workdir: Path | None,
             db_path: Path | None, run_stamp: str) -> dict[str, Any]:
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.records import SegmentInput

    gc.collect()
    peak_reset = reset_peak_rss()
    mem_before = proc_status()
    tenant = ctx.tenant
    path = db_path if db_path is not None else workdir / f"store-{size}.db"  # type: ignore[operator]
    meeting_id = f"bench-store-{size}-seed{args.seed}-{run_stamp}"
    result: dict[str, Any] = {"segments": size, "meeting_id": meeting_id,
                              "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}

    t0 = time.perf_counter()
    corpus = generate_corpus(size, args.seed, args.distinct_texts)
    questions = pick_questions(corpus, args.queries, args.seed)
    result["corpus"] = {
        "generate_s": round(time.perf_counter() - t0, 3),
        "distinct_texts": len(set(corpus.texts)),
        "fact_segments": len(corpus.facts),
        "product_codes": corpus.codes,
        "mean_words": round(statistics.fmean(len(t.split()) for t in corpus.texts), 1),
        "meeting_hours": round(corpus.ends[-1] / 3600.0, 1),
    }
    _note(ctx, f"[{size}] corpus ready ({result['corpus']['distinct_texts']} distinct texts); appending ...")

    from meetmem.store.index.tokenize import MeetingTokenizer, stem

    MeetingTokenizer().tokens("warm up the stemmer import")  # a server has loaded its libraries already
    stem.cache_clear()  # ... but has not seen this meeting's words: no size profits from the one before

    log = TranscriptLog(path)
    try:
        # -- ingest: log append, then BM25 catch-up (no embedding) -----------------------------------------
        gc.collect()
        append_s, append_cpu, calls = ingest(log, meeting_id, tenant, corpus, batch=args.batch, devices=args.devices)
        _note(ctx, f"[{size}] appended in {append_s:.2f}s; BM25 catch-up ...")
        bm25_search = TranscriptSearch(log, None)
        bm25_build = timed_build(bm25_search, meeting_id, tenant)
        index = bm25_search.meeting_index(meeting_id, tenant=tenant)
        vocab = index.bm25.vocabulary_size
        if len(index) != size:
            raise RuntimeError(f"BM25 index holds {len(index)} segments, expected {size}")
        bm25_questions_only = None
        if embedder is None:
            bm25_questions_only = measure_search(bm25_search, meeting_id, tenant, questions, dense=False)
        del index, bm25_search
        combined = append_s + bm25_build["total_s"]
        result["ingest"] = {
            "append_calls": calls,
            "batch_size": args.batch,
            "devices": args.devices,
            "log_append_s": round(append_s, 4),
            "log_append_segments_per_s": rate(size, append_s),
            "log_append_cpu_s": round(append_cpu, 4),
            "bm25_index_s": bm25_build["total_s"],
            "bm25_index_segments_per_s": rate(size, bm25_build["total_s"]),
            "bm25_index_cpu_s": bm25_build["cpu_s"],
            "bm25_index_breakdown_s": {k: v for k, v in bm25_build.items()
                                       if k not in ("total_s", "cpu_s", "vectors_s")},
            "combined_s": round(combined, 4),
            "combined_segments_per_s": rate(size, combined),
            "bm25_vocabulary": vocab,
            "db_bytes_after_ingest": db_bytes(path),
        }
        _note(ctx, f"[{size}] ingest {result['ingest']['combined_segments_per_s']} seg/s combined")

        if embedder is None:
            result["embedding"] = None
            result["index_build"] = None
            result["search"] = bm25_questions_only
        else:
            # -- embedding through TranscriptSearch (vectors cached in segment_vectors) -------------------
            from meetmem.cli.progress import StderrProgress

            shared = SharedVectorEmbedder(embedder)
            embed_search = TranscriptSearch(log, shared)
            gc.collect()
            build = timed_build(embed_search, meeting_id, tenant,
                                progress=StderrProgress(f"[{size}] embedding", interval=10.0, enabled=not ctx.quiet))
            del embed_search
            reuse = shared.texts_embedded < shared.texts_requested
            result["embedding"] = {
                "model": embedder.name,
                "dim": embedder.dim,
                "segments": shared.texts_requested,
                "texts_embedded": shared.texts_embedded,
                "vector_reuse": "identical texts share one embedding (each computed by the model from that text)"
                if reuse else None,
                "model_s": round(shared.model_seconds, 3),
                "model_texts_per_s": rate(shared.texts_embedded, shared.model_seconds),
                "vectors_step_s": build["vectors_s"],
                "embedding_build_cpu_s": build["cpu_s"],
                "vectors_step_segments_per_s": rate(size, build["vectors_s"]),
                "vector_cache_write_s": round(build["vectors_s"] - shared.model_seconds, 3),
                "db_bytes_after_vectors": db_bytes(path),
            }
            shared.forget()
            _note(ctx, f"[{size}] embedded {shared.texts_embedded} texts in {shared.model_seconds:.1f}s; "
                  "fresh index build ...")

            # -- fresh index over the existing database: BM25 rebuild + cached vectors ----------------------
            gc.collect()
            peak_ingest_embed = proc_status().get("VmHWM")
            reset_peak_rss()
            rss_before_build = proc_status().get("VmRSS")
            t0 = time.perf_counter()
            search = TranscriptSearch(log, embedder)
            construct_s = time.perf_counter() - t0
            build = timed_build(search, meeting_id, tenant)
            result["index_build"] = {
                "total_s": round(construct_s + build["total_s"], 4),
                "cpu_s": build["cpu_s"],
                "construct_s": round(construct_s, 4),
                "log_read_s": build["log_read_s"],
                "vectors_load_s": build["vectors_s"],
                "tokenize_s": build["tokenize_s"],
                "index_other_s": build["index_other_s"],
                "segments_per_s": rate(size, construct_s + build["total_s"]),
            }
            rss_after_build = proc_status().get("VmRSS")
            _note(ctx, f"[{size}] index built in {result['index_build']['total_s']:.2f}s; "
                  f"searching {len(questions)} questions ...")

            # -- search latency ----------------------------------------------------------------------------
            result["search"] = measure_search(search, meeting_id, tenant, questions, dense=True)

            # -- the same after one correction (a superseded segment makes every search build a mask) -------
            victim = corpus.facts[len(corpus.facts) // 2].index if corpus.facts else size // 2
            victim_id = search.meeting_index(meeting_id, tenant=tenant).segment_ids[victim]
            fix = SegmentInput(seq=0, start=corpus.starts[victim], end=corpus.ends[victim],
                               text=corpus.texts[victim] + " Sorry, correction to that.",
                               speaker=corpus.speakers[victim], lang="en", supersedes=victim_id)
            log.append(meeting_id, "corrections", [fix], tenant=tenant)
            search.meeting_index(meeting_id, tenant=tenant)
            after = measure_search(search, meeting_id, tenant, questions, dense=True)
            result["search_after_one_correction"] = {
                "note": "the meeting then holds one superseded segment",
                **{m: after[m] for m in ("bm25", "dense", "hybrid", "hit_at_10",
                                         "involuntary_context_switches_per_search", "loadavg_1min_during")},
                "components": {k: after["components"][k] for k in ("mask", "bm25_top", "dense_top")},
            }
            peak_serving = proc_status().get("VmHWM")
            del search
        gc.collect()
        result["memory"] = {
            "peak_reset_between_phases": peak_reset,
            "rss_at_size_start_mb": mem_before.get("VmRSS"),
        }
        if embedder is None:
            result["memory"]["peak_rss_mb"] = proc_status().get("VmHWM")
        else:
            result["memory"].update({
                "peak_rss_ingest_and_embedding_mb": peak_ingest_embed,
                "rss_before_index_build_mb": rss_before_build,
                "rss_after_index_build_mb": rss_after_build,
                "peak_rss_index_build_and_search_mb": peak_serving,
            })
        result["memory"]["rss_at_size_end_mb"] = proc_status().get("VmRSS")
        result["db_bytes"] = db_bytes(path)
    finally:
        log.close()
    return result


# ------------------------------------------------------------------------------------------------------
# The command.
# ------------------------------------------------------------------------------------------------------


def _sizes(value: str) -> list[int]:
    try:
        sizes = [int(v.replace("_", "")) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes comma-separated integers, not {value!r}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError("--sizes needs at least one positive size")
    return sizes


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def run(args: argparse.Namespace, ctx: Any) -> int:
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    info = machine_info()
    head, modified = checkout(["store", "eval/bench/store.py"], untracked=False)
    code = {"git_head": head, "modified_store_files": modified}
    embedder = None
    load_s = None
    if ctx.settings.embedder != "none":
        from meetmem.store.index.embedders import load_embedder

        _note(ctx, f"loading the {ctx.settings.embedder} embedding model ...")
        t0 = time.perf_counter()
        embedder = load_embedder(ctx.settings.embedder, threads=ctx.settings.threads)
        load_s = round(time.perf_counter() - t0, 2)
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        info["torch_threads"] = None
    try:
        import faiss

        info["faiss_omp_threads"] = faiss.omp_get_max_threads()
    except (ImportError, AttributeError):
        info["faiss_omp_threads"] = None
    info["env_threads"] = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "MEETMEM_THREADS")}
    explicit_db = Path(args.db) if args.db else None
    run_stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    results = []
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-store-") as tmp:
        for size in args.sizes:
            t0 = time.perf_counter()
            r = run_size(ctx, args, size, embedder, Path(tmp), explicit_db, run_stamp)
            r["wall_s"] = round(time.perf_counter() - t0, 2)
            results.append(r)
            _note(ctx, f"[{size}] done in {r['wall_s']:.1f}s")
    info["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    targets: dict[str, Any] = {
        "ingest_combined_segments_per_s_min": TARGET_INGEST_PER_S,
        "hybrid_p95_ms_max_at_100k": TARGET_HYBRID_P95_MS,
        "ingest_met": {str(r["segments"]): (r["ingest"]["combined_segments_per_s"] or 0) >= TARGET_INGEST_PER_S
                       for r in results},
    }
    big = [r for r in results if r["segments"] == TARGET_HYBRID_SIZE and r.get("search", {}).get("hybrid")]
    targets["hybrid_p95_met_at_100k"] = (
        big[0]["search"]["hybrid"]["p95_ms"] <= TARGET_HYBRID_P95_MS if big else None
    )
    report = {
        "benchmark": "store",
        "machine": info,
        "code": code,
        "config": {
            "sizes": args.sizes,
            "queries": args.queries,
            "k": K,
            "seed": args.seed,
            "batch": args.batch,
            "devices": args.devices,
            "distinct_texts_cap": args.distinct_texts,
            "embedder": ctx.settings.embedder,
            "embedder_threads": ctx.settings.threads,
            "embedder_load_s": load_s,
            "db": str(explicit_db) if explicit_db else "temporary (one file per size, deleted after the run)",
            "tenant": ctx.tenant,
            "timing": "wall clock (time.perf_counter); cpu_* = process CPU time of all threads "
                      "(time.process_time); percentiles are nearest-rank",
            "stem_cache": "cleared before each size (tokenizer libraries imported beforehand)",
        },
        "targets": targets,
        "results": results,
        "wall_s": round(time.perf_counter() - wall0, 1),
        "process_cpu_s": round(time.process_time() - cpu0, 1),
    }
    emit_figures(report, as_json=args.json)
    sys.stdout.flush()
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "store", parents=flags(TENANT, MODEL, JSON, QUIET, own_db=True), help="ingest and search speed of the store",
        description="Ingest, embedding, index-build and search speed of the transcript store on a generated "
                    "meeting of each size. Prints the figures on stdout (one JSON object with --json); progress "
                    "on stderr. Uses a "
                    "temporary database unless --db is given (then each size adds a new meeting to it).",
    )
    p.add_argument("--db", default=None, metavar="PATH",
                   help="keep the meetings in this database file, each size a new meeting (default: a temporary "
                        "file per size, deleted after the run)")
    p.add_argument("--sizes", type=_sizes, default=list(DEFAULT_SIZES), metavar="N[,N...]",
                   help="meeting sizes in segments (default: 1000,10000,100000)")
    p.add_argument("--queries", type=_positive, default=DEFAULT_QUERIES, metavar="N",
                   help=f"questions searched per size (default: {DEFAULT_QUERIES})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the generated meetings and questions")
    p.add_argument("--batch", type=_positive, default=50, help="segments per append call (default: 50)")
    p.add_argument("--devices", type=_positive, default=4, help="devices posting to the meeting (default: 4)")
    p.add_argument("--distinct-texts", type=_positive, default=None, metavar="N",
                   help="draw each meeting from at most N distinct utterances; identical texts then share one "
                        "(real) embedding, which bounds the embedding time of large sizes (default: no cap)")
    p.set_defaults(func=run)

