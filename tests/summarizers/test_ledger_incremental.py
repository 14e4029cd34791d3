"""The ledger of a growing meeting, read a few segments at a time, equals the ledger read all at once."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from meetmem.store.records import Segment, SegmentInput
from meetmem.summarizers.ledger import IncrementalLedger, extract_ledger

DAY = dt.date(2026, 11, 30)
# Questions answered or not within the look-ahead, todos whose "by ..." continues in the next segment,
# owner and date changes, a request and its acceptance: the rules that look ahead or back.
EXTRA = [
    ("Alice", "Who owns the supplier contract?"),
    ("Bob", "No idea, we'll have to find out."),
    ("Dana", "I'll send the deck by"),
    ("Dana", "Friday, once legal signs off."),
    ("Alice", "Bob, can you book the venue by March 3rd?"),
    ("Bob", "Sure, I'll book the venue by March 3rd."),
    ("Alice", "Actually Priya takes the venue."),
    ("Alice", "The launch review moved to Thursday, not Wednesday."),
    ("Chen Wei", "我们决定用钢制铰链。"),
    ("Chen Wei", "由小王负责在下周五之前完成测试。"),
    ("Alice", "改由小李负责。"),
]


def meeting(sample: list[SegmentInput]) -> list[Segment]:
    rows = [(s.speaker, s.text) for s in sample] + EXTRA
    return [Segment(f"s{i:03d}", "t", "m", "d", i, i * 4.0, i * 4.0 + 3.0, text, speaker, None, None, None, None,
                    "", i, "", "") for i, (speaker, text) in enumerate(rows)]


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.integers(1, 9), min_size=1, max_size=20))
def test_reading_in_steps_equals_reading_at_once(sample_segments: list[SegmentInput], steps: list[int]) -> None:
    segments = meeting(sample_segments)
    reader = IncrementalLedger()
    upto, k = 0, 0
    while upto < len(segments):
        upto = min(len(segments), upto + steps[k % len(steps)])
        k += 1
        assert reader(segments[:upto], meeting_date=DAY) == extract_ledger(segments[:upto], meeting_date=DAY)
    assert reader(segments, meeting_date=DAY) == extract_ledger(segments, meeting_date=DAY)


def test_a_changed_prefix_is_read_again(sample_segments: list[SegmentInput]) -> None:
    segments = meeting(sample_segments)
    reader = IncrementalLedger()
    reader(segments[:40], meeting_date=DAY)
    # A correction replaced segment 20 (the listing leaves the corrected one out): not the same prefix.
    corrected = segments[:20] + segments[21:]
    assert reader(corrected, meeting_date=DAY) == extract_ledger(corrected, meeting_date=DAY)
    # Another day's anchor resolves due dates differently: read again too.
    later = dt.date(2027, 1, 4)
    assert reader(corrected, meeting_date=later) == extract_ledger(corrected, meeting_date=later)
    assert reader([], meeting_date=DAY) == []
