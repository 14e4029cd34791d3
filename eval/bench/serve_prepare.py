"""`meetmem bench serve`'s preparation: hours of generated meetings, appended and embedded once in a SQLite
database the server then opens (kept between runs: `--work-db`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..harness import say_if
from .serve_process import ServeBenchError
from .store import ingest
from .store_corpus import Corpus, generate_corpus

#: The preloaded meetings are an hour each (the last one shorter).
MEETING_S = 3600.0


def meeting_of(seconds: float, seed: int) -> Corpus:
    """A generated meeting cut to `seconds` of talk (store_corpus's pace is ~5 s a segment)."""
    corpus = generate_corpus(max(10, int(seconds / 3.5)), seed)
    keep = sum(1 for end in corpus.ends if end <= seconds) or 1
    return Corpus(corpus.texts[:keep], corpus.speakers[:keep], corpus.starts[:keep], corpus.ends[:keep],
                  [f for f in corpus.facts if f.index < keep], corpus.codes)


def preloaded_meetings(hours: float, seed: int) -> list[tuple[str, Corpus]]:
    """`hours` of meetings, one hour each (the last one shorter); ids name the seed and the length."""
    out = []
    left, number = hours * 3600.0, 1
    while left > 1.0:
        seconds = min(MEETING_S, left)
        out.append((f"preload-s{seed}-{number:02d}-{round(seconds / 60)}min", meeting_of(seconds, seed + number)))
        left -= seconds
        number += 1
    return out


def prepare(ctx: Any, path: Path, meetings: list[tuple[str, Corpus]], tenant: str) -> dict[str, Any]:
    """Append and embed the meetings the database does not hold yet; returns what it did."""
    from meetmem.cli.progress import StderrProgress
    from meetmem.store.index.embedder_routes import embedder_routes
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog

    settings = ctx.settings
    out: dict[str, Any] = {"appended_meetings": 0, "append_s": 0.0, "index_s": 0.0}
    transcript_log = TranscriptLog(path)
    try:
        for meeting_id, corpus in meetings:
            if transcript_log.has_meeting(meeting_id, tenant=tenant):
                count, _ = transcript_log.meeting_stats(meeting_id, tenant=tenant)
                if count != len(corpus):
                    raise ServeBenchError(
                        f"{path} holds {count} segments of {meeting_id}, expected {len(corpus)}: an interrupted "
                        "preparation? delete the --work-db file and run again")
                continue
            seconds, _, _ = ingest(transcript_log, meeting_id, tenant, corpus, batch=50, devices=5)
            out["appended_meetings"] += 1
            out["append_s"] += seconds
        ids = [meeting_id for meeting_id, _ in meetings]
        out["vectors_missing_before"] = missing_vectors(transcript_log, ids, tenant, settings.embedder)
        if out["vectors_missing_before"]:
            # Only when needed: even reading cached vectors loads the model (it asks the embedder its dimension).
            routes = embedder_routes(settings.embedder, settings.embedder_zh, threads=settings.threads,
                                     on_load=lambda name: say_if(not ctx.quiet,
                                                                 f"loading the {name} embedding model ..."))
            search = TranscriptSearch(transcript_log, routes)
            t0 = time.perf_counter()
            for meeting_id in ids:
                progress = StderrProgress(f"embedding {meeting_id}", interval=10.0, enabled=not ctx.quiet)
                search.meeting_index(meeting_id, tenant=tenant, progress=progress)
            out["index_s"] = time.perf_counter() - t0
        out["vectors_in_db"] = (transcript_log.read("SELECT COUNT(*) FROM segment_vectors")[0][0]
                                if _has_vectors_table(transcript_log) else 0)
        out["segments_in_db"] = transcript_log.count()
        out["meetings_in_db"] = len(transcript_log.meetings())
        transcript_log.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        transcript_log.close()
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}


def _has_vectors_table(transcript_log: Any) -> bool:
    return bool(transcript_log.read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'segment_vectors'"))


def missing_vectors(transcript_log: Any, meeting_ids: list[str], tenant: str, model: str) -> int:
    """How many segments of the meetings have no cached vector of `model` (0 for `--embedder none`)."""
    from meetmem.store.index.search_types import vector_key

    if model == "none":
        return 0
    if not _has_vectors_table(transcript_log):
        return transcript_log.count()
    marks = ",".join("?" * len(meeting_ids))
    return transcript_log.read(
        f"SELECT COUNT(*) FROM segments s WHERE s.tenant = ? AND s.meeting_id IN ({marks}) AND NOT EXISTS "
        "(SELECT 1 FROM segment_vectors v WHERE v.segment_id = s.segment_id AND v.model = ?)",
        (tenant, *meeting_ids, vector_key(model)),
    )[0][0]
