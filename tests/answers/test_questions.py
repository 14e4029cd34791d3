"""Routing questions by their words: time ranges on the meeting's clock, topics, speakers, why (pure)."""

from __future__ import annotations

import datetime as dt

import pytest

from meetmem.answers.questions import MeetingClock, classify, time_range

# A closed 36-minute meeting that started at 14:00 in Madrid.
CLOCK = MeetingClock(end=2160.0, started_at=dt.datetime(2027, 3, 1, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))))


@pytest.mark.parametrize(("question", "start", "end"), [
    ("what did I miss in the last 10 minutes?", 1560, 2160),
    ("catch me up on the past five minutes", 1860, 2160),
    ("what happened around minute 30?", 1650, 1950),
    ("what happened around 2:15?", 0, 285),  # MM:SS in a 36-minute meeting
    ("what was said around 2:15 pm?", 750, 1050),  # the wall clock, from started_at
    ("what was said at 14:20?", 710, 1010),  # 14 min 20 s into a 36-minute meeting
    ("what did we cover in the first five minutes?", 0, 300),
    ("what was said between minute 20 and 25?", 1200, 1500),
    ("what was said since I joined at 2:20 pm?", 1200, 2160),
    ("what happened since I joined 10 minutes ago?", 1560, 2160),
    ("what did we talk about at the end?", 1860, 2160),
    ("最后十分钟说了什么？", 1560, 2160),
    ("第三十分钟左右发生了什么？", 1650, 1950),
])
def test_time_questions_name_a_range_of_the_meetings_clock(question: str, start: float, end: float) -> None:
    request = classify(question, CLOCK)
    assert request is not None and request.route == "time", request
    assert (request.start, request.end) == (start, end)


def test_ranges_are_clipped_to_the_meeting() -> None:
    assert time_range("what did I miss in the last 90 minutes?", CLOCK)[:2] == (0.0, 2160.0)


def test_live_meeting_now_is_its_latest_segment() -> None:
    live = MeetingClock(end=600.0)
    assert time_range("what did I miss in the last 2 minutes?", live)[:2] == (480.0, 600.0)


@pytest.mark.parametrize(("question", "route", "topic", "speaker"), [
    ("what did we decide about the case?", "topic", "case", None),
    ("what was the final decision on the case?", "topic", "case", None),
    ("what's pending on pricing?", "topic", "pricing", None),
    ("what did the project manager say about the prototype?", "speaker", "prototype", "project manager"),
    ("What did Priya say about the budget?", "speaker", "budget", "Priya"),
    ("what was the marketing expert's view on the remote's shape?", "speaker", "remote shape", "marketing expert"),
    ("why did marketing want an LCD?", "why", "marketing lcd", "marketing"),
    ("how did we decide on the colour?", "why", "colour", None),
    ("为什么选择橡胶外壳？", "why", "选择橡胶外壳", None),
])
def test_routes(question: str, route: str, topic: str, speaker: str | None) -> None:
    request = classify(question, CLOCK)
    assert request is not None
    assert (request.route, request.topic, request.speaker_mention) == (route, topic, speaker)
    assert request.reason


@pytest.mark.parametrize("question", [
    "what material will the case be made of?",
    "By when does Bob owe the supplier the revised quote?",
    "what time is the launch?",  # asks for a value, not a stretch of the meeting
    "We've got five more minutes?",
    "how much does the tooling cost?",
])
def test_verbatim_questions_are_not_routed(question: str) -> None:
    assert classify(question, CLOCK) is None


def test_since_i_joined_without_a_time_says_so() -> None:
    request = classify("what was said since I joined?", CLOCK)
    assert request is not None and request.route == "time"
    assert "join time is unknown" in request.reason
    joined = MeetingClock(end=2160.0, joined_at=900.0)
    assert classify("what was said since I joined?", joined).start == 900.0
