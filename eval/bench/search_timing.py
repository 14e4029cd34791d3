"""Timing the store's search: building a meeting's index, and searches by mode and by component.

Used by `bench store`; each function takes a `TranscriptSearch` and the questions to ask it.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from ..harness import Clock, Stopwatch, patched, preemptions
from .store_corpus import Fact

K = 10


def timed_build(search: Any, meeting_id: str, tenant: str, progress: Any = None) -> dict[str, float]:
    """`meeting_index` of a meeting, split into log read, vectors, tokenizing and the rest (indexing)."""
    chain_sw, vec_sw, tok_sw = Stopwatch(), Stopwatch(), Stopwatch()
    t0, c0 = time.perf_counter(), time.process_time()
    with patched(search.log, "chain", chain_sw.wrap_iter(search.log.chain)), \
            patched(search, "vectors_for", vec_sw.wrap(search.vectors_for)), \
            patched(search.tokenizer, "tokens", tok_sw.wrap(search.tokenizer.tokens)):
        search.meeting_index(meeting_id, tenant=tenant, progress=progress)
    total = time.perf_counter() - t0
    return {
        "total_s": round(total, 4),
        "cpu_s": round(time.process_time() - c0, 4),
        "log_read_s": round(chain_sw.seconds, 4),
        "vectors_s": round(vec_sw.seconds, 4),
        "tokenize_s": round(tok_sw.seconds, 4),
        "index_other_s": round(total - chain_sw.seconds - vec_sw.seconds - tok_sw.seconds, 4),
    }


def measure_search(search: Any, meeting_id: str, tenant: str, questions: Sequence[Fact], dense: bool,
                   *, components: bool = True) -> dict[str, Any]:
    """Latency of search() per mode (interleaved per question), the query embedding alone, hit@10, parts."""
    modes = ["bm25", "hybrid", "dense"] if dense else ["bm25"]
    clocks = {m: Clock() for m in modes}
    hits: dict[str, int] = {m: 0 for m in modes}
    warm = questions[: min(10, len(questions))]
    for f in warm:
        for m in modes:
            search.search(meeting_id, f.question, tenant=tenant, k=K, mode=m)
    gc.collect()
    load0, nivcsw0, t0 = os.getloadavg()[0], preemptions(), time.perf_counter()
    for qi, f in enumerate(questions):
        for m in modes[qi % len(modes):] + modes[: qi % len(modes)]:
            with clocks[m]():
                result = search.search(meeting_id, f.question, tenant=tenant, k=K, mode=m)
            if any(h.segment.text == f.text for h in result):
                hits[m] += 1
    out: dict[str, Any] = {m: clocks[m].stats() for m in modes}
    out["hit_at_10"] = {m: round(hits[m] / len(questions), 3) for m in modes}
    out["involuntary_context_switches_per_search"] = round(
        (preemptions() - nivcsw0) / (len(questions) * len(modes)), 2)
    out["loadavg_1min_during"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    out["searches_s"] = round(time.perf_counter() - t0, 2)
    vectors: list[Any] = []
    if dense:
        emb = search.embedder
        qclock = Clock()
        for f in questions:
            with qclock():
                vectors.append(emb.encode_query(f.question))
        out["query_embedding"] = qclock.stats()
    if components:
        out["components"] = search_components(search, meeting_id, tenant, questions, vectors)
    return out


def _dense_indexes(index: Any) -> dict[str, Any]:
    """The meeting's dense indexes by model name (one per model, or the single index of older versions)."""
    dense = index.dense
    if dense is None:
        return {}
    if isinstance(dense, dict):
        return dense
    return {"default": dense}


def search_components(search: Any, meeting_id: str, tenant: str, questions: Sequence[Fact],
                      vectors: Sequence[Any]) -> dict[str, Any]:
    """The parts of one search, timed one by one over the same questions (the steps search() takes).

    The query vectors are the ones timed as `query_embedding` (the default model's).
    """
    from meetmem.store.index.fusion import fuse

    names = ("catch_up_meeting_index", "mask", "query_tokenize", "bm25_top", "dense_top", "fuse", "fetch_hit_rows")
    clocks = {name: Clock() for name in names}
    pool = max(search.options.pool, K)
    opts = search.options
    postings: list[int] = []
    for qi, f in enumerate(questions):
        with clocks["catch_up_meeting_index"]():
            index = search.meeting_index(meeting_id, tenant=tenant)
        with clocks["mask"]():
            mask = search.mask(index, None)
        with clocks["query_tokenize"]():
            tokens = search.tokenizer.tokens(f.question)
        with clocks["bm25_top"]():
            bm = index.bm25.top(tokens, pool, mask)
        bm25 = index.bm25
        postings.append(sum(bm25.postings(t) for t in tokens))
        rankings: list[list[tuple[int, float]]] = []
        if vectors:
            with clocks["dense_top"]():
                rankings = [dense.top(vectors[qi], pool, mask) for dense in _dense_indexes(index).values()]
        with clocks["fuse"]():
            if not rankings:
                fused = [(d, s, r, None) for r, (d, s) in enumerate(bm[:K], 1)]
            else:
                fused = fuse(bm, rankings, (opts.bm25_weight, opts.dense_weight), convex=opts.fusion == "convex",
                             rrf_k=opts.rrf_k)[:K]
        with clocks["fetch_hit_rows"]():
            search.log.get(index.segment_ids[d] for d, *_ in fused)
    out: dict[str, Any] = {name: c.stats() for name, c in clocks.items() if c.wall}
    out["bm25_postings_scored_per_query"] = {
        "mean": round(statistics.fmean(postings), 1), "max": max(postings),
    }
    out["dense_indexes"] = list(_dense_indexes(index))
    return out
