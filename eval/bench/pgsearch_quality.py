"""`meetmem bench pgsearch`'s quality part: QMSum val and LoCoMo dev through the SQLite reference and `PgSearch`
with each keyword ranking (in-process BM25, `ts_rank`, `ts_rank_cd`), alone and fused with pgvector."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..harness import RunClock
from .pgsearch import KEYWORDS, TENANT

if TYPE_CHECKING:
    from meetmem.store.index.embedders import Embedder


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


def quality(url: str, data: Path, embedder: Embedder, *, limit: int | None, say: Callable[[str], None],
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


def embed_pool(data: Path, embedder: Embedder, size: int, say: Callable[[str], None]
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
