"""The period a cross-meeting question names ("last week", "yesterday", "in March"), in days (pure)."""

from __future__ import annotations

import datetime as dt

import pytest

from meetmem.answers.across import period

TODAY = dt.date(2027, 3, 10)  # a Wednesday


@pytest.mark.parametrize(("question", "first", "last"), [
    ("what did we decide about pricing last week?", dt.date(2027, 3, 1), dt.date(2027, 3, 7)),
    ("what was said this week about the launch?", dt.date(2027, 3, 8), dt.date(2027, 3, 14)),
    ("anything pending from yesterday?", dt.date(2027, 3, 9), dt.date(2027, 3, 9)),
    ("what did we agree in January?", dt.date(2027, 1, 1), dt.date(2027, 1, 31)),
    ("what did we agree in November?", dt.date(2026, 11, 1), dt.date(2026, 11, 30)),
    ("what was decided last month?", dt.date(2027, 2, 1), dt.date(2027, 2, 28)),
    ("上周关于价格定了什么？", dt.date(2027, 3, 1), dt.date(2027, 3, 7)),
])
def test_periods(question: str, first: dt.date, last: dt.date) -> None:
    found = period(question, TODAY)
    assert found is not None and found[:2] == (first, last)


def test_no_period() -> None:
    assert period("what did we decide about pricing?", TODAY) is None
