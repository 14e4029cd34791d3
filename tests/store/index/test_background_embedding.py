"""A server's searches never embed: new segments join BM25 at once and the background indexer embeds them.

An ask on a live meeting used to wait for the indexer's catch-up and then embed every segment posted since
the last pass itself (asks 5x slower while segments arrived). With `background_embedding` a search adds the
new rows to BM25 only (so an acknowledged segment is still found at once) and `meeting_index(embed=True)`,
the indexer's call, embeds them later; the question's own embedding never queues behind passage batches.
"""

from __future__ import annotations

from typing import Any

import pytest

from meetmem.store.index.embedders import LazyEmbedder
from meetmem.store.index.search import TranscriptSearch
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

MEETING = "live"


class CountingEmbedder:
    """The real model, counting the passages it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.passages = 0

    def encode(self, texts: Any, *, batch_size: int = 64) -> Any:
        self.passages += len(texts)
        return self.inner.encode(texts, batch_size=batch_size)

    def encode_query(self, text: str) -> Any:
        return self.inner.encode_query(text)


@pytest.mark.model
def test_a_search_adds_new_rows_to_bm25_and_leaves_their_embedding_to_the_indexer(
        log: TranscriptLog, sample_device_and_segments: Any, embedder: Any) -> None:
    device, segments = sample_device_and_segments
    log.append(MEETING, device, segments)
    counting = CountingEmbedder(embedder)
    search = TranscriptSearch(log, counting)
    search.background_embedding = True
    search.meeting_index(MEETING, embed=True)  # the indexer's warm-up embeds what is there
    warmed = counting.passages
    assert warmed == len(segments)
    log.append(MEETING, "glasses-2", [SegmentInput(seq=0, start=900.0, end=903.0, speaker="Eve",
                                                   text="We could ship it by zeppelin from the hangar.")])
    hits = search.search(MEETING, "zeppelin hangar", k=3)  # hybrid, as an ask searches
    assert hits[0].segment.text == "We could ship it by zeppelin from the hangar." and hits[0].dense_rank is None
    index = search.meeting_index(MEETING)
    assert counting.passages == warmed and len(index.unembedded) == 1  # the question embedded nothing new
    search.meeting_index(MEETING, embed=True)  # the indexer's pass
    assert counting.passages == warmed + 1 and index.unembedded == []
    hits = search.search(MEETING, "transport by airship", k=len(segments) + 1, mode="dense")
    assert "zeppelin" in hits[0].segment.text  # and now its vector is in the dense index


def test_without_background_embedding_a_search_embeds_what_it_finds_new(log: TranscriptLog) -> None:
    class Fixed:
        name, dim = "fixed-test", 4
        passages = 0

        def encode(self, texts: Any, *, batch_size: int = 64) -> Any:
            import numpy as np

            Fixed.passages += len(texts)
            return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

        def encode_query(self, text: str) -> Any:
            import numpy as np

            return np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)

    log.append(MEETING, "d", [SegmentInput(seq=0, start=0.0, end=1.0, text="the zeppelin option")])
    search = TranscriptSearch(log, Fixed())  # the CLI: no background indexer, so the search embeds
    search.search(MEETING, "zeppelin")
    assert Fixed.passages == 1 and search.meeting_index(MEETING).unembedded == []


def test_a_question_gets_a_model_copy_while_passages_hold_the_others() -> None:
    pool = LazyEmbedder("minilm", instances=2)
    assert pool._passages.acquire(timeout=1)  # one passage batch running
    try:
        assert not pool._passages.acquire(blocking=False)  # a second must wait: one copy stays for questions
    finally:
        pool._passages.release()
