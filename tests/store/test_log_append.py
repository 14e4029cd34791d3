"""The one write path: replays add nothing, seq only goes forward, a batch is all or nothing, corrections."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from meetmem.store.errors import InvalidSegment, MeetingNotFound, SequenceError, StoreError
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput, segment_id_for

TEXTS = ["we ship on March 3rd", "the tooling quote is $4,250", "Dana owns the press release", "TS-204 it is"]


def test_first_append_creates_the_meeting_and_stores_the_batch(log: TranscriptLog, segments_factory) -> None:
    assert not log.has_meeting("m1")
    result = log.append("m1", "glasses-1", segments_factory(TEXTS))
    assert result.new == len(TEXTS) and result.duplicates == 0
    assert log.has_meeting("m1")
    stored = log.segments("m1")
    assert [s.text for s in stored] == TEXTS
    assert [s.segment_id for s in stored] == [segment_id_for("local", "m1", "glasses-1", i) for i in range(4)]
    assert [s.segment_id for s in result.added] == [s.segment_id for s in stored]


def test_replaying_a_batch_adds_nothing(log: TranscriptLog, segments_factory) -> None:
    batch = segments_factory(TEXTS)
    log.append("m1", "glasses-1", batch)
    before = list(log.chain("m1"))
    again = log.append("m1", "glasses-1", batch)
    assert again.new == 0
    assert again.duplicates == len(batch)
    assert list(log.chain("m1")) == before
    assert log.count() == len(batch)


def test_replay_across_a_reopened_database(open_log, segments_factory) -> None:
    batch = segments_factory(TEXTS)
    with open_log() as first:
        assert first.append("m1", "glasses-1", batch).new == len(batch)
        before = list(first.chain("m1"))
    with open_log() as second:
        again = second.append("m1", "glasses-1", batch)
        assert (again.new, again.duplicates) == (0, len(batch))
        assert list(second.chain("m1")) == before
        assert second.verify("m1").ok


def test_replay_mixed_with_new_segments_stores_only_the_new(log: TranscriptLog, segments_factory) -> None:
    batch = segments_factory(TEXTS)
    log.append("m1", "glasses-1", batch[:2])
    result = log.append("m1", "glasses-1", batch)
    assert (result.new, result.duplicates) == (2, 2)
    assert [s.seq for s in result.added] == [2, 3]
    assert log.count() == 4


def test_a_duplicate_inside_one_batch_is_stored_once(log: TranscriptLog, segments_factory) -> None:
    batch = segments_factory(TEXTS)
    result = log.append("m1", "glasses-1", [*batch, batch[1]])
    assert (result.new, result.duplicates) == (4, 1)
    assert log.count() == 4


def test_same_seq_with_different_content_is_refused(log: TranscriptLog, segments_factory) -> None:
    batch = segments_factory(TEXTS)
    log.append("m1", "glasses-1", batch)
    before = list(log.chain("m1"))
    for changed in (
        replace(batch[1], text="the tooling quote is $5,250"),
        replace(batch[1], start=batch[1].start + 0.5),
        replace(batch[1], speaker="B"),
    ):
        with pytest.raises(SequenceError):
            log.append("m1", "glasses-1", [changed])
    assert list(log.chain("m1")) == before


def test_same_seq_twice_in_one_batch_with_different_content_is_refused(log: TranscriptLog, segments_factory) -> None:
    batch = segments_factory(TEXTS)
    with pytest.raises(SequenceError):
        log.append("m1", "glasses-1", [*batch, replace(batch[2], text="someone else owns it")])
    assert not log.has_meeting("m1")
    assert log.count() == 0


def test_seq_going_backwards_is_refused(log: TranscriptLog, segments_factory) -> None:
    log.append("m1", "glasses-1", segments_factory(TEXTS[:2], first_seq=0))
    log.append("m1", "glasses-1", segments_factory(TEXTS[2:3], first_seq=5, start=10.0))
    before = list(log.chain("m1"))
    # seq 3 was never stored, but the device already reached seq 5.
    with pytest.raises(SequenceError, match="backwards"):
        log.append("m1", "glasses-1", segments_factory(["late arrival"], first_seq=3, start=12.0))
    assert list(log.chain("m1")) == before


def test_seq_is_per_device_and_per_meeting(log: TranscriptLog, segments_factory) -> None:
    log.append("m1", "glasses-1", segments_factory(TEXTS, first_seq=10))
    assert log.append("m1", "glasses-2", segments_factory(TEXTS, first_seq=0)).new == 4
    assert log.append("m2", "glasses-1", segments_factory(TEXTS, first_seq=0)).new == 4
    assert log.append("m1", "glasses-1", segments_factory(TEXTS, first_seq=0), tenant="acme").new == 4
    assert log.count() == 16


def _bad_last(kind: str, good: list[SegmentInput]) -> list[SegmentInput]:
    last = good[-1]
    bad = {
        "unknown supersedes": replace(last, supersedes="s_does_not_exist"),
        "nan start": replace(last, start=math.nan),
        "missing text": replace(last, text=None),  # type: ignore[arg-type]
        "conflicting duplicate seq": replace(good[0], text="changed"),
    }[kind]
    return [*good[:-1], bad] if kind != "conflicting duplicate seq" else [*good, bad]


@pytest.mark.parametrize("kind", ["unknown supersedes", "nan start", "missing text", "conflicting duplicate seq"])
def test_a_batch_whose_last_segment_is_bad_stores_nothing(open_log, segments_factory, kind: str) -> None:
    with open_log() as log:
        log.append("m1", "glasses-1", segments_factory(["already here"]))
        before = list(log.chain("m1"))
        good = segments_factory(TEXTS, first_seq=1, start=5.0)
        with pytest.raises(StoreError):
            log.append("m1", "glasses-1", _bad_last(kind, good))
        assert list(log.chain("m1")) == before
        # A failed batch leaves no half-open transaction: the good part goes in afterwards.
        assert log.append("m1", "glasses-1", good).new == len(good)
        assert log.verify("m1").ok
    with open_log() as reopened:
        assert reopened.count() == 1 + len(good)


@pytest.mark.parametrize("bad", [
    pytest.param({"start": 5.0, "end": 1.0}, id="end before start"),
    pytest.param({"start": -1.0, "end": 1.0}, id="negative start"),
    pytest.param({"text": "   "}, id="blank text"),
])
def test_append_refuses_segments_that_break_the_contract(log: TranscriptLog, bad: dict) -> None:
    segment = replace(SegmentInput(seq=0, start=0.0, end=1.0, text="fine"), **bad)
    with pytest.raises(InvalidSegment):
        log.append("m1", "glasses-1", [segment])
    assert log.count() == 0


@pytest.mark.parametrize("meeting_id", ["", "   ", "a\nb", "x" * 201])
def test_bad_meeting_ids_are_refused(log: TranscriptLog, segments_factory, meeting_id: str) -> None:
    with pytest.raises(InvalidSegment):
        log.append(meeting_id, "glasses-1", segments_factory(TEXTS))
    assert log.count() == 0


def test_unknown_meeting_and_other_tenants(log: TranscriptLog, segments_factory) -> None:
    log.append("m1", "glasses-1", segments_factory(TEXTS))
    with pytest.raises(MeetingNotFound):
        log.segments("nope")
    with pytest.raises(MeetingNotFound):
        log.segments("m1", tenant="someone-else")
    with pytest.raises(MeetingNotFound):
        log.verify("m1", tenant="someone-else")


def test_time_range_keeps_overlapping_segments(log: TranscriptLog, segments_factory) -> None:
    # Segments at [0, 1.6], [2, 3.6], [4, 5.6], [6, 7.6].
    log.append("m1", "glasses-1", segments_factory(TEXTS))
    assert [s.seq for s in log.segments("m1", start=3.0)] == [1, 2, 3]
    assert [s.seq for s in log.segments("m1", end=4.0)] == [0, 1, 2]
    assert [s.seq for s in log.segments("m1", start=3.7, end=3.9)] == []
    assert [s.seq for s in log.segments("m1", start=1.6, end=2.0)] == [0, 1]


class TestCorrections:
    def test_a_correction_hides_the_old_segment_from_listings(self, log: TranscriptLog, segments_factory) -> None:
        log.append("m1", "glasses-1", segments_factory(TEXTS))
        old = log.segments("m1")[1]
        fix = SegmentInput(seq=4, start=old.start, end=old.end, text="the tooling quote is $4,520",
                           speaker="A", supersedes=old.segment_id)
        added = log.append("m1", "glasses-1", [fix]).added[0]
        listed = log.segments("m1")
        assert old.segment_id not in {s.segment_id for s in listed}
        assert added.segment_id in {s.segment_id for s in listed}
        everything = {s.segment_id: s for s in log.segments("m1", include_superseded=True)}
        assert everything[old.segment_id].text == "the tooling quote is $4,250"
        assert everything[added.segment_id].supersedes == old.segment_id
        assert log.get([old.segment_id])[old.segment_id].text == "the tooling quote is $4,250"
        assert log.superseded_ids("m1") == {old.segment_id}
        assert log.verify("m1").ok

    def test_a_correction_may_name_a_segment_of_the_same_batch(self, log: TranscriptLog, segments_factory) -> None:
        batch = segments_factory(TEXTS[:2])
        first_id = segment_id_for("local", "m1", "glasses-1", 0)
        fix = SegmentInput(seq=2, start=0.0, end=1.0, text="we ship on March 4th", supersedes=first_id)
        assert log.append("m1", "glasses-1", [*batch, fix]).new == 3
        assert [s.text for s in log.segments("m1")] == ["we ship on March 4th", TEXTS[1]]

    def test_a_correction_may_not_name_another_meetings_segment(self, log: TranscriptLog, segments_factory) -> None:
        log.append("m1", "glasses-1", segments_factory(TEXTS))
        other = log.segments("m1")[0].segment_id
        fix = SegmentInput(seq=0, start=0.0, end=1.0, text="nope", supersedes=other)
        with pytest.raises(InvalidSegment):
            log.append("m2", "glasses-1", [fix])
        assert log.count() == len(TEXTS)
