"""Query-adaptive fusion and neighbour scores: BM25 coverage of a question, and the turn beside a match."""

from __future__ import annotations

import numpy as np
import pytest

from meetmem.store.index.bm25 import BM25Index
from meetmem.store.index.fusion import coverage
from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import SearchOptions
from meetmem.store.index.tokenize import MeetingTokenizer
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

TEXTS = [
    "Let us start with the hinge supplier.",
    "The hinge tooling quote came in at four thousand dollars.",
    "Is that a one-off cost?",
    "One-off, yes: $4,250 for the molds.",
    "Next, the launch party venue on the rooftop.",
    "We booked the rooftop for March 12th.",
]


@pytest.fixture
def meeting(log: TranscriptLog) -> TranscriptLog:
    log.append("m", "glasses-1", [SegmentInput(seq=i, start=3.0 * i, end=3.0 * i + 2, speaker="Dana", text=t)
                                  for i, t in enumerate(TEXTS)])
    return log


def _bm25(texts: list[str]) -> tuple[BM25Index, MeetingTokenizer]:
    tokenizer = MeetingTokenizer()
    index = BM25Index()
    for text in texts:
        index.add(tokenizer.tokens(text))
    return index, tokenizer


def test_holds_agrees_with_the_documents_terms() -> None:
    index, tokenizer = _bm25(TEXTS)
    vocabulary = {t for text in TEXTS for t in tokenizer.tokens(text)}
    for doc, text in enumerate(TEXTS):
        held = set(tokenizer.tokens(text))
        for term in vocabulary | {"zeppelin"}:
            assert index.holds(term, doc) == (term in held)
    assert not index.holds_term("zeppelin") and index.holds_term(tokenizer.tokens("rooftop")[0])


@pytest.mark.parametrize(("query", "low", "high"), [
    ("hinge tooling quote", 1.0, 1.0),  # every word said in one segment
    ("pivot mechanism pricing", 0.0, 0.0),  # the subject in other words
    ("rooftop pivot", 0.2, 0.8),  # half and half
])
def test_coverage_of_a_query(query: str, low: float, high: float) -> None:
    index, tokenizer = _bm25(TEXTS)
    terms = tokenizer.tokens(query)
    docs = [d for d, _ in index.top(terms, 3)]
    assert low <= coverage(index, terms, docs) <= high


def test_the_dense_weight_rises_when_bm25_misses_the_query(meeting: TranscriptLog) -> None:
    search = TranscriptSearch(meeting, None, options=SearchOptions(adaptive_dense_weight=(0.3, 0.7)))
    index = search.meeting_index("m")

    def weights(query: str) -> tuple[float, float]:
        terms = search.tokenizer.tokens(query)
        return search.fusion_weights(index, terms, index.bm25.top(terms, 50))

    assert weights("hinge tooling quote") == pytest.approx((0.7, 0.3))
    assert weights("pivot mechanism pricing") == pytest.approx((0.3, 0.7))
    fixed = TranscriptSearch(meeting, None, options=SearchOptions(bm25_weight=0.4, dense_weight=0.6,
                                                                 adaptive_dense_weight=None))
    assert fixed.fusion_weights(fixed.meeting_index("m"), ["hinge"], []) == (0.4, 0.6)


@pytest.mark.model
def test_the_turn_beside_a_match_is_found_and_a_corrected_one_is_not(meeting: TranscriptLog, embedder) -> None:
    plain = TranscriptSearch(meeting, embedder, options=SearchOptions(neighbour_weight=0.0))
    near = TranscriptSearch(meeting, embedder, options=SearchOptions(neighbour_weight=0.5))
    question = "Is that a one-off cost?"
    assert [h.segment.text for h in near.search("m", question, k=3)][:1] == [TEXTS[2]]
    texts = [h.segment.text for h in near.search("m", question, k=6)]
    assert set(texts) == set(TEXTS) and len(texts) == len(set(texts))
    assert [h.score for h in near.search("m", question, k=6)] == sorted(
        (h.score for h in near.search("m", question, k=6)), reverse=True)
    old = meeting.segments("m")[3]
    meeting.append("m", "glasses-2", [SegmentInput(seq=0, start=old.start, end=old.end, speaker="Dana",
                                                   text="One-off, yes: $4,520 for the molds.",
                                                   supersedes=old.segment_id)])
    for search in (plain, near):
        assert old.segment_id not in {h.segment.segment_id for h in search.search("m", question, k=10)}


def test_a_neighbour_gains_a_share_of_its_best_neighbours_score(meeting: TranscriptLog) -> None:
    search = TranscriptSearch(meeting, None, options=SearchOptions(neighbour_weight=0.5))
    index = search.meeting_index("m")
    ranked = [(2, 1.0, 1, None), (5, 0.4, 2, None)]
    scored = {doc: (score, b, d) for doc, score, b, d in search._with_neighbours(index, ranked, None)}
    assert scored == {2: (1.0, 1, None), 1: (0.5, None, None), 3: (0.5, None, None), 4: (0.2, None, None),
                      5: (0.4, 2, None)}
    mask = np.array([True, True, True, False, True, True])
    assert 3 not in {doc for doc, *_ in search._with_neighbours(index, ranked, mask)}
