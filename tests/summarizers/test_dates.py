"""Due expressions: found as said in a sentence, resolved against the meeting's date (English and Chinese)."""

from __future__ import annotations

import datetime as dt

import pytest

from meetmem.summarizers.dates import find_due, resolve_due

MONDAY = dt.date(2026, 11, 30)  # the meeting's date in these tables: a Monday

RESOLVED = [
    ("March 12th", "2027-03-12"),
    ("December 3rd", "2026-12-03"),
    ("the 3rd of December", "2026-12-03"),
    ("December 3rd, 2027", "2027-12-03"),
    ("2026-12-24", "2026-12-24"),
    ("Friday", "2026-12-04"),
    ("Monday", "2026-12-07"),  # the weekday named on that very day: a week later
    ("this Friday", "2026-12-04"),
    ("next Tuesday", "2026-12-08"),
    ("tomorrow", "2026-12-01"),
    ("the day after tomorrow", "2026-12-02"),
    ("end of the month", "2026-11-30"),
    ("end of next week", "2026-12-11"),
    ("by the 15th", "2026-12-15"),
    ("on the fifteenth", "2026-12-15"),
    ("in two weeks", "2026-12-14"),
    ("within 3 days", "2026-12-03"),
    ("下周五", "2026-12-11"),
    ("周五", "2026-12-04"),
    ("这周三", "2026-12-02"),
    ("星期四", "2026-12-03"),
    ("3月12日", "2027-03-12"),
    ("三月十二号", "2027-03-12"),
    ("12月3号", "2026-12-03"),
    ("明天", "2026-12-01"),
    ("后天", "2026-12-02"),
    ("月底", "2026-11-30"),
    ("下个月底", "2026-12-31"),
    ("周三之前", "2026-12-02"),
    ("15号", "2026-12-15"),
    ("两周后", "2026-12-14"),
    ("三天内", "2026-12-03"),
]


@pytest.mark.parametrize(("expression", "iso"), RESOLVED, ids=[e for e, _ in RESOLVED])
def test_resolves(expression: str, iso: str) -> None:
    assert resolve_due(expression, MONDAY) == iso


@pytest.mark.parametrize("expression", ["next week", "soon", "later", "下周", "下个月", "回头", "", "ASAP"])
def test_spans_and_vague_words_do_not_resolve(expression: str) -> None:
    assert resolve_due(expression, MONDAY) is None


def test_without_a_meeting_date_only_a_dated_expression_resolves() -> None:
    assert resolve_due("Friday", None) is None
    assert resolve_due("December 3rd, 2027", None) == "2027-12-03"


FOUND = [
    ("Priya will send the deck by Friday.", ["Friday"]),
    ("The review is March 3rd and the launch the 3rd of April.", ["March 3rd", "the 3rd of April"]),
    ("Let's meet next Tuesday, or in two weeks at the latest.", ["next Tuesday", "in two weeks"]),
    ("I'll have it done by the end of the month.", ["the end of the month"]),
    ("小王下周五之前把报告发给大家。", ["下周五"]),
    ("评审定在3月12日，月底前上线。", ["3月12日", "月底"]),
    ("明天开会，两周后交付。", ["明天", "两周后"]),
]


@pytest.mark.parametrize(("sentence", "spans"), FOUND, ids=[s for s, _ in FOUND])
def test_finds_dates_as_said(sentence: str, spans: list[str]) -> None:
    found = find_due(sentence)
    assert [s.text for s in found] == spans
    for span in found:
        assert sentence[span.start:span.end] == span.text


@pytest.mark.parametrize("sentence", [
    "I may check that later.",
    "The first thing is the battery.",
    "We need a second opinion.",
    "Give me a minute.",
    "这个方案第一版还不错。",
    "我们有三个选项。",
])
def test_no_dates_in_ordinary_talk(sentence: str) -> None:
    assert find_due(sentence) == []
