"""Name suggestions go only to the labels nobody named: a label that is a name already keeps it."""

from __future__ import annotations

from meetmem.answers.speaker_names import ANONYMOUS_LABEL_RE, suggest
from meetmem.store.records import Segment


def _seg(i: int, speaker: str, text: str) -> Segment:
    return Segment(segment_id=f"s{i}", tenant="t", meeting_id="m", device_id="d", seq=i, start=6.0 * i,
                   end=6.0 * i + 4, text=text, speaker=speaker, lang=None, raw_text=None, confidence=None,
                   supersedes=None, received_at="", chain_pos=i, prev_hash="", hash="")


def test_a_label_that_is_a_name_gets_no_suggestion() -> None:
    lines = [("Alice", "Thanks. Dana, what do you think about the hinge?"),
             ("Bob", "The hinge needs a second supplier."),
             ("Chen Wei", "Hi, I'm Priya from finance."),
             ("S4", "Thanks. Tom, what do you think?"),
             ("S5", "I will send the quote by Friday.")]
    found = suggest([_seg(i, s, t) for i, (s, t) in enumerate(lines)])
    assert "Bob" not in found and "Chen Wei" not in found  # "Dana, ..." before Bob speaks: Bob stays Bob
    assert found["S5"].name == "Tom"  # the edge's anonymous label still gets one


def test_the_anonymous_labels() -> None:
    for label in ("S1", "S12", "wearer", "SPEAKER_00", "speaker 2", "spk3", "unknown", "guest"):
        assert ANONYMOUS_LABEL_RE.match(label), label
    for label in ("Bob", "Chen Wei", "Sam", "S1x", "Speaker"):
        assert not ANONYMOUS_LABEL_RE.match(label), label
