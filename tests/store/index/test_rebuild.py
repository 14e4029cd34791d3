"""A rebuilt index equals the one kept up incrementally (the log is the truth; the index is derived)."""

from __future__ import annotations

import numpy as np
import pytest

from meetmem.store.index.search import MeetingIndex, SearchFilters, TranscriptSearch, embedded_text
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

QUERIES = [
    "When is the deadline for getting the updated pricing back to the vendor?",
    "How much was the one-time charge for the metal housing molds?",
    "aluminium casing",
    "TS-204",
    "March 12th",
    "not plastic",
    "who owns the press release",
]
MEETINGS = [("local", "launch"), ("local", "second"), ("acme", "launch")]


def _ingest_in_batches(log: TranscriptLog, search: TranscriptSearch, device: str,
                       segments: list[SegmentInput]) -> None:
    """The sample meeting arrives in uneven batches from two devices, plus a correction and other meetings;
    the index is caught up after every append, as the service does."""
    cuts = [0, 7, 8, 20, 33, len(segments)]
    for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False)):
        part = segments[a:b]
        log.append("launch", device if i % 2 == 0 else "glasses-2", part)
        search.meeting_index("launch")
        if i == 2:
            log.append("second", "glasses-1", part)
            search.meeting_index("second")
        if i == 3:
            log.append("launch", "glasses-1", part[:5], tenant="acme")
            search.meeting_index("launch", tenant="acme")
    old = log.segments("launch")[5]
    log.append("launch", "glasses-3", [SegmentInput(seq=0, start=old.start, end=old.end, speaker=old.speaker,
                                                    text=old.text.replace("$4,250", "$4,520"),
                                                    supersedes=old.segment_id)])
    search.meeting_index("launch")


def _dense_by_doc(index: MeetingIndex) -> dict[int, tuple[str, np.ndarray]]:
    """Every stored vector by document number, with the name of the dense index holding it.

    Reads the layout either way it has been: one DenseIndex in document order, or one per embedding
    model keyed by name, each holding (document number, vector) pairs.
    """
    dense = index.dense
    if not dense:
        return {}
    if isinstance(dense, dict):
        return {int(doc): (name, vector) for name, part in dense.items()
                for doc, vector in zip(part.ids(), part.vectors(), strict=True)}
    return {doc: ("", vector) for doc, vector in enumerate(dense.vectors())}


def _assert_same_index(incremental: MeetingIndex, rebuilt: MeetingIndex, tokenize, embedder) -> None:
    assert rebuilt.segment_ids == incremental.segment_ids
    assert rebuilt.superseded == incremental.superseded
    assert list(rebuilt.starts) == list(incremental.starts)
    assert list(rebuilt.ends) == list(incremental.ends)
    assert rebuilt.speakers == incremental.speakers
    assert rebuilt.last_pos == incremental.last_pos
    for optional in ("positions", "models"):  # bookkeeping some versions of the index keep
        assert getattr(rebuilt, optional, None) == getattr(incremental, optional, None)
    assert rebuilt.bm25.vocabulary_size == incremental.bm25.vocabulary_size
    for query in QUERIES:
        terms = tokenize(query)
        np.testing.assert_allclose(rebuilt.bm25.scores(terms), incremental.bm25.scores(terms), rtol=1e-12,
                                   atol=0)
    inc, reb = _dense_by_doc(incremental), _dense_by_doc(rebuilt)
    assert sorted(reb) == sorted(inc)
    if embedder is None:
        assert inc == {}
    else:
        assert sorted(inc) == list(range(len(incremental)))
        for doc, (name, vector) in inc.items():
            assert reb[doc][0] == name
            assert vector.shape == (embedder.dim,)
            # Batches of different sizes pad differently inside the model (float32 rounding), and the index
            # holds float16: equal to one float16 step.
            np.testing.assert_allclose(reb[doc][1], vector, rtol=0, atol=1e-3)


def _check_rebuild_equals_incremental(tmp_path, sample_device_and_segments, embedder) -> None:
    device, segments = sample_device_and_segments
    with TranscriptLog(tmp_path / "rebuild.db") as log:
        incremental = TranscriptSearch(log, embedder)
        _ingest_in_batches(log, incremental, device, list(segments))
        expected_total = log.count()

        rebuilt = TranscriptSearch(log, embedder)
        assert rebuilt.rebuild() == expected_total
        # Each question embedded once (the model is the slow part), then searched every way.
        vectors = {q: embedder.encode_query(q) if embedder is not None else None for q in QUERIES}
        for tenant, meeting in MEETINGS:
            _assert_same_index(incremental.meeting_index(meeting, tenant=tenant),
                               rebuilt.meeting_index(meeting, tenant=tenant), incremental.tokenizer, embedder)
            for query in QUERIES:
                for filters in (None, SearchFilters(start=60.0, end=200.0), SearchFilters(speaker="Alice")):
                    a = incremental.search(meeting, query, tenant=tenant, k=10, filters=filters,
                                           query_vector=vectors[query])
                    b = rebuilt.search(meeting, query, tenant=tenant, k=10, filters=filters,
                                       query_vector=vectors[query])
                    assert [h.segment.segment_id for h in b] == [h.segment.segment_id for h in a], query
                    np.testing.assert_allclose([h.score for h in b], [h.score for h in a], rtol=1e-4)  # float16 vectors
                    assert [(h.bm25_rank, h.dense_rank) for h in b] == [(h.bm25_rank, h.dense_rank) for h in a]


def test_rebuild_equals_incremental_bm25_only(tmp_path, sample_device_and_segments) -> None:
    _check_rebuild_equals_incremental(tmp_path, sample_device_and_segments, None)


@pytest.mark.model
def test_rebuild_equals_incremental_with_minilm(tmp_path, sample_device_and_segments, embedder) -> None:
    _check_rebuild_equals_incremental(tmp_path, sample_device_and_segments, embedder)


@pytest.mark.model
def test_rebuild_re_embeds_from_the_log(tmp_path, sample_device_and_segments, embedder) -> None:
    """The vector cache is derived too: rebuild drops it and recomputes every vector from the text."""
    device, segments = sample_device_and_segments
    with TranscriptLog(tmp_path / "cache.db") as log:
        log.append("launch", device, segments[:10])
        TranscriptSearch(log, embedder).meeting_index("launch")
        cached = log.db.execute("SELECT COUNT(*) FROM segment_vectors").fetchone()[0]
        assert cached == 10
        # Poison the cache: a rebuild must not trust it.
        log.db.conn.execute("UPDATE segment_vectors SET vector = ?", (np.zeros(embedder.dim, np.float32).tobytes(),))
        rebuilt = TranscriptSearch(log, embedder)
        rebuilt.rebuild()
        by_doc = _dense_by_doc(rebuilt.meeting_index("launch"))
        vectors = np.stack([by_doc[doc][1] for doc in range(10)])
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=2e-3)  # float16 in the index
        np.testing.assert_allclose(vectors, embedder.encode([embedded_text(s) for s in segments[:10]]), atol=1e-3)
