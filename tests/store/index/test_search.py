"""Hybrid search kept in step with the log: fresh segments, filters, corrections, tenants."""

from __future__ import annotations

import pytest

from meetmem.store.errors import MeetingNotFound
from meetmem.store.index.errors import SearchError
from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import SearchFilters
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

MEETING = "launch"


@pytest.fixture
def meeting(log: TranscriptLog, sample_device_and_segments) -> TranscriptLog:
    device, segments = sample_device_and_segments
    log.append(MEETING, device, segments)
    return log


@pytest.fixture
def bm25_search(meeting: TranscriptLog) -> TranscriptSearch:
    return TranscriptSearch(meeting, None)


def _texts(hits) -> list[str]:
    return [h.segment.text for h in hits]


def test_hits_are_stored_segments_best_first(bm25_search: TranscriptSearch, meeting: TranscriptLog) -> None:
    hits = bm25_search.search(MEETING, "How much did the supplier quote for the tooling?", k=5)
    assert 1 <= len(hits) <= 5
    assert "$4,250" in hits[0].segment.text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    stored = meeting.get(h.segment.segment_id for h in hits)
    assert all(stored[h.segment.segment_id] == h.segment for h in hits)
    assert all(h.bm25_rank == rank for rank, h in enumerate(hits, start=1))


@pytest.mark.parametrize(("query", "fragment"), [
    ("TS-204", "TS-204"),
    ("ts-204", "TS-204"),
    ("March 12th", "March 12th"),
    ("4,250", "$4,250"),
    ("$4250", "$4,250"),
])
def test_exact_values_are_found(bm25_search: TranscriptSearch, query: str, fragment: str) -> None:
    assert fragment in bm25_search.search(MEETING, query, k=3)[0].segment.text


def test_a_fresh_segment_is_searchable_without_a_rebuild(bm25_search: TranscriptSearch,
                                                         meeting: TranscriptLog) -> None:
    assert bm25_search.search(MEETING, "zeppelin hangar") == []
    before = len(bm25_search.meeting_index(MEETING))
    meeting.append(MEETING, "glasses-1", [SegmentInput(seq=0, start=300.0, end=303.0, speaker="Eve",
                                                       text="We could ship it by zeppelin from the hangar.")])
    hits = bm25_search.search(MEETING, "zeppelin hangar")
    assert _texts(hits) == ["We could ship it by zeppelin from the hangar."]
    assert len(bm25_search.meeting_index(MEETING)) == before + 1


def test_a_segment_appended_through_another_connection_is_searchable(bm25_search: TranscriptSearch,
                                                                      meeting: TranscriptLog) -> None:
    bm25_search.search(MEETING, "aluminium")  # the index exists and is caught up
    with TranscriptLog(meeting.path) as other_process:
        other_process.append(MEETING, "phone", [SegmentInput(seq=7, start=250.0, end=252.0, speaker="Bob",
                                                             text="Also the zeppelin option is off the table.")])
    assert _texts(bm25_search.search(MEETING, "zeppelin")) == ["Also the zeppelin option is off the table."]


@pytest.mark.parametrize("texts", [
    ["We ship on March 3rd."],
    ["We ship on March 3rd.", "The tooling quote is $4,250."],
])
def test_a_word_said_in_a_tiny_meeting_is_found(log: TranscriptLog, segments_factory, texts: list[str]) -> None:
    log.append("tiny", "glasses-1", segments_factory(texts))
    hits = TranscriptSearch(log, None).search("tiny", "when do we ship", mode="bm25")
    assert _texts(hits)[:1] == ["We ship on March 3rd."]


def test_speaker_filter(bm25_search: TranscriptSearch) -> None:
    unfiltered = bm25_search.search(MEETING, "aluminium casing plastic", k=20)
    assert {h.segment.speaker for h in unfiltered} - {"Bob"}, "the query must also match other speakers"
    for speaker in ("Bob", "bob", "BOB"):
        hits = bm25_search.search(MEETING, "aluminium casing plastic", k=20, filters=SearchFilters(speaker=speaker))
        assert hits and {h.segment.speaker for h in hits} == {"Bob"}
        assert [h.segment.segment_id for h in hits] == [h.segment.segment_id for h in unfiltered
                                                        if h.segment.speaker == "Bob"]
    assert bm25_search.search(MEETING, "aluminium", filters=SearchFilters(speaker="Nobody")) == []


def test_time_range_filter_keeps_overlapping_segments(bm25_search: TranscriptSearch) -> None:
    unfiltered = bm25_search.search(MEETING, "aluminium", k=50)
    window = SearchFilters(start=40.0, end=120.0)
    hits = bm25_search.search(MEETING, "aluminium", k=50, filters=window)
    assert hits and len(hits) < len(unfiltered)
    assert all(h.segment.end >= 40.0 and h.segment.start <= 120.0 for h in hits)
    expected = [h.segment.segment_id for h in unfiltered if h.segment.end >= 40.0 and h.segment.start <= 120.0]
    assert [h.segment.segment_id for h in hits] == expected
    only_start = bm25_search.search(MEETING, "aluminium", k=50, filters=SearchFilters(start=150.0))
    assert all(h.segment.end >= 150.0 for h in only_start)
    both = SearchFilters(start=0.0, end=60.0, speaker="Chen Wei")
    assert all(h.segment.speaker == "Chen Wei" and h.segment.start <= 60.0
               for h in bm25_search.search(MEETING, "aluminium", filters=both))


def test_k_limits_the_hits(bm25_search: TranscriptSearch) -> None:
    assert len(bm25_search.search(MEETING, "the aluminium casing budget supplier", k=3)) == 3
    with pytest.raises(SearchError):
        bm25_search.search(MEETING, "aluminium", k=0)
    with pytest.raises(SearchError):
        bm25_search.search(MEETING, "aluminium", mode="dense")


def test_a_corrected_segment_is_no_longer_returned(bm25_search: TranscriptSearch, meeting: TranscriptLog) -> None:
    old = bm25_search.search(MEETING, "$4,250 tooling")[0].segment
    assert "$4,250" in old.text
    fix = SegmentInput(seq=999, start=old.start, end=old.end, speaker=old.speaker, supersedes=old.segment_id,
                       text="Aluminium is more expensive, though. The supplier quoted $5,120 for the tooling.")
    added = meeting.append(MEETING, old.device_id, [fix]).added[0]
    hits = bm25_search.search(MEETING, "$4,250 tooling", k=50)
    assert old.segment_id not in {h.segment.segment_id for h in hits}
    assert bm25_search.search(MEETING, "$5,120")[0].segment.segment_id == added.segment_id
    # A fresh index built from the log agrees.
    assert old.segment_id not in {h.segment.segment_id
                                  for h in TranscriptSearch(meeting, None).search(MEETING, "$4,250 tooling", k=50)}


def test_unknown_meeting_and_other_tenants(meeting: TranscriptLog, sample_device_and_segments) -> None:
    search = TranscriptSearch(meeting, None)
    with pytest.raises(MeetingNotFound):
        search.search("nope", "aluminium")
    with pytest.raises(MeetingNotFound):
        search.search(MEETING, "aluminium", tenant="acme")
    acme_texts = ["acme aluminium plan", "acme budget review", "acme hiring", "acme office move"]
    meeting.append(MEETING, "acme-glasses", [SegmentInput(seq=i, start=float(i), end=i + 1.0, text=text)
                                             for i, text in enumerate(acme_texts)], tenant="acme")
    assert all(h.segment.tenant == "local" for h in search.search(MEETING, "aluminium", k=50))
    acme = search.search(MEETING, "aluminium", tenant="acme", k=50)
    assert [(h.segment.tenant, h.segment.text) for h in acme] == [("acme", "acme aluminium plan")]


def test_chinese_meeting_is_searchable(log: TranscriptLog, segments_factory) -> None:
    texts = ["我们决定用铝合金外壳，不用塑料。", "供应商报价四千二百五十美元。", "陈伟下周五之前把新报价发给供应商。",
             "传感器板的型号是TS-204。", "发布会定在四月二号。"]
    log.append("zh", "glasses-1", segments_factory(texts))
    search = TranscriptSearch(log, None)
    assert search.search("zh", "铝合金外壳")[0].segment.text == texts[0]
    assert search.search("zh", "型号TS-204")[0].segment.text == texts[3]
    assert search.search("zh", "谁发新报价？")[0].segment.text == texts[2]


@pytest.mark.model
class TestHybrid:
    def test_dense_finds_a_paraphrase(self, meeting: TranscriptLog, embedder) -> None:
        search = TranscriptSearch(meeting, embedder)
        question = "Which metal did they pick for the frame?"
        dense = search.search(MEETING, question, mode="dense", k=5)
        assert len(dense) == 5 and all(h.dense_rank is not None and h.bm25_rank is None for h in dense)
        assert [h.score for h in dense] == sorted((h.score for h in dense), reverse=True)
        assert any("luminium" in h.segment.text for h in dense[:3]), _texts(dense)

    def test_hybrid_fuses_both_rankings(self, meeting: TranscriptLog, embedder) -> None:
        search = TranscriptSearch(meeting, embedder)
        hits = search.search(MEETING, "How much did the supplier quote for the tooling?", k=10)
        assert "$4,250" in hits[0].segment.text
        assert hits[0].bm25_rank is not None and hits[0].dense_rank is not None
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_filters_apply_to_the_dense_side_too(self, meeting: TranscriptLog, embedder) -> None:
        search = TranscriptSearch(meeting, embedder)
        for mode in ("dense", "hybrid"):
            hits = search.search(MEETING, "casing material", k=10, mode=mode,
                                 filters=SearchFilters(start=100.0, speaker="Alice"))
            assert hits and all(h.segment.speaker == "Alice" and h.segment.end >= 100.0 for h in hits)

    def test_fresh_segment_is_embedded_and_found_by_meaning(self, meeting: TranscriptLog, embedder) -> None:
        search = TranscriptSearch(meeting, embedder)
        search.search(MEETING, "warm up")
        meeting.append(MEETING, "glasses-1", [SegmentInput(seq=0, start=300.0, end=303.0, speaker="Eve",
                                                           text="My cat knocked the prototype off the desk.")])
        hits = search.search(MEETING, "an animal pushed the device off the table", mode="dense", k=3)
        assert hits[0].segment.text == "My cat knocked the prototype off the desk."
