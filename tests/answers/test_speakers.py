"""Who is who: speaker labels named by participants and by self-introductions (English and Chinese)."""

from __future__ import annotations

import pytest

from meetmem.answers.speakers import build_directory, introductions
from meetmem.store.records import Segment


def _seg(i: int, speaker: str, text: str, meeting: str = "m") -> Segment:
    return Segment(segment_id=f"s{meeting}{i}", tenant="t", meeting_id=meeting, device_id="d", seq=i,
                   start=float(i), end=float(i) + 1, text=text, speaker=speaker, lang=None, raw_text=None,
                   confidence=None, supersedes=None, received_at="", chain_pos=i, prev_hash="", hash="")


@pytest.mark.parametrize(("text", "said"), [
    ("I'm Laura and I'm the project manager.", ["Laura", "project manager"]),
    ("Hi, I'm David and I'm supposed to be an industrial designer.", ["David", "industrial designer"]),
    ("And I'm Andrew and I'm uh our marketing", ["Andrew", "marketing"]),
    ("I am the Marketing Expert", ["Marketing Expert"]),
    ("my my role in the project is um uh the industrial designer,", ["industrial designer"]),
    ("and I'm your Project Manager for today", ["Project Manager"]),
    ("My name is Priya Natarajan.", ["Priya Natarajan"]),
    ("我是产品经理", ["产品经理"]),
    ("我叫李娜。", ["李娜"]),
    ("I'm sure that we can do it", []),
    ("I'm going to present the marketing report", []),
    ("I'm not sure about the designer", []),
    ("As the marketing expert, I looked at what users want.", ["marketing expert"]),
    ("so speaking as project manager, my view is we wait", ["project manager"]),
    ("as a result I think we wait", []),
    ("as the designer said, it is too heavy", []),
])
def test_introductions(text: str, said: list[str]) -> None:
    assert [name for _, name, _ in introductions([_seg(0, "A", text)])] == said


def test_mentions_resolve_to_labels() -> None:
    segments = [_seg(0, "B", "I'm Laura and I'm the project manager."),
                _seg(1, "A", "I am the Industrial Designer."),
                _seg(2, "D", "I'm the Marketing Expert"),
                _seg(3, "C", "I'm the user interface designer")]
    directory = build_directory(segments)
    assert directory.resolve("the project manager".removeprefix("the "))[0] == "B"
    assert directory.resolve("PM")[0] == "B"
    assert directory.resolve("Laura")[0] == "B"
    assert directory.resolve("marketing")[0] == "D"
    assert directory.resolve("industrial designer")[0] == "A"
    assert directory.resolve("interface designer")[0] == "C"
    assert directory.resolve("speaker C")[0] == "C"
    assert directory.resolve("the accountant") is None


def test_a_role_stated_in_passing_resolves_the_ui_designer() -> None:
    segments = [_seg(0, "A", "Okay, let's start."), _seg(1, "C", "As the user interface designer, I looked at the "
                                                                 "buttons."), _seg(2, "B", "Sounds good.")]
    directory = build_directory(segments)
    assert directory.resolve("user interface designer")[0] == "C"
    assert directory.resolve("UI")[0] == "C"


def test_participants_and_earlier_meetings_name_speakers() -> None:
    today = [_seg(0, "C", "let's look at the prototype", "m2"), _seg(1, "B", "the trends say fruit", "m2")]
    directory = build_directory(today, ["C: Priya (project manager)"],
                                related=[_seg(0, "B", "I'm the Marketing Expert", "m1")])
    assert directory.resolve("Priya")[0] == "C"
    assert directory.resolve("project manager")[0] == "C"
    label, why = directory.resolve("marketing")
    assert label == "B" and "m1" in why
