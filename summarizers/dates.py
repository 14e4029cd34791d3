"""Due expressions as people say them ("March 12th", "next Tuesday", "下周五", "月底"), found and resolved.

Pure: `find_due` returns the spans of a sentence that name a date, exactly as said; `resolve_due` turns one
such expression into an ISO date given the meeting's date, or None when it cannot be pinned to one day
("next week", "soon"). The ledger keeps the words as said (`due`) beside the resolved date (`due_date`),
so a wrong resolution never hides what was said.

Conventions (the choices a reader would otherwise have to guess):
- a bare weekday ("Friday", "周五") is its next occurrence after the meeting's day (a weekday named on
  that very day means a week later: nobody sets a task due the day it is given by naming the weekday);
- "next Friday" and "下周五" are the Friday of the following Monday-to-Sunday week;
- a month and day without a year is the next occurrence on or after the meeting's day;
- "the 15th" / "15号" is the next 15th on or after the meeting's day;
- "end of the week" is that week's Friday, "end of the month" / "月底" its last day.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

_MONTHS = {name: i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name: i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["Sept"] = 9
_WEEKDAYS = {name: i for i, name in enumerate(calendar.day_name)}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "1": 0, "2": 1, "3": 2,
                "4": 3, "5": 4, "6": 5, "7": 6}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2}
_ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
                  "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
                  "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
                  "nineteenth": 19, "twentieth": 20, "thirtieth": 30}
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}

_MONTH_RE = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))
_WEEKDAY_RE = "|".join(_WEEKDAYS)
_DAY_RE = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_EN_COUNT_RE = r"(?:\d+|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ZH_NUM_RE = r"[0-9零〇一二两三四五六七八九十]{1,3}"

#: Each pattern names its kind; `resolve_due` dispatches on it. Longer, more specific patterns come first:
#: overlapping matches keep the earliest, then the longest.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("en_end_of", re.compile(r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+|next\s+)?(?:week|month)\b", re.I)),
    ("en_month_day", re.compile(
        rf"\b(?:(?:{_WEEKDAY_RE}),?\s+)?(?:{_MONTH_RE})\.?\s+(?:the\s+)?{_DAY_RE}\b(?:,?\s+\d{{4}}\b)?")),
    ("en_day_month", re.compile(rf"\b(?:the\s+)?{_DAY_RE}\s+(?:of\s+)?(?:{_MONTH_RE})\b(?:,?\s+\d{{4}}\b)?")),
    ("en_iso", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("en_relative_day", re.compile(r"\b(?:the\s+day\s+after\s+tomorrow|tomorrow|today|tonight)\b", re.I)),
    ("en_in_n", re.compile(rf"\b(?:in|within)\s+{_EN_COUNT_RE}\s+(?:days?|weeks?)(?:'\s*time)?\b", re.I)),
    ("en_weekday", re.compile(rf"\b(?:(?:next|this|coming|this\s+coming)\s+)?(?:{_WEEKDAY_RE})\b", re.I)),
    ("en_the_nth", re.compile(
        rf"\bthe\s+(?:{_DAY_RE}|{'|'.join(_ORDINAL_WORDS)})(?=\s*(?:$|[,.;!?]|\s(?:of\s+(?:this|next)\s+month)\b))",
        re.I)),
    ("en_next_week", re.compile(r"\b(?:next|this)\s+(?:week|month)\b", re.I)),
    ("zh_end_of", re.compile(r"(?:本|这个|下个?)?月底|(?:本周|这周|下周)末")),
    ("zh_month_day", re.compile(rf"(?:\d{{4}}年)?{_ZH_NUM_RE}月{_ZH_NUM_RE}[日号]")),
    ("zh_relative_day", re.compile(r"大后天|后天|明天|今天|今晚|明早|明晚")),
    ("zh_weekday", re.compile(r"(?:下下|下个?|这个?|本)?(?:周|星期|礼拜)[一二三四五六日天1-7]")),
    ("zh_in_n", re.compile(rf"{_ZH_NUM_RE}(?:天|周|个星期|个礼拜)(?:后|之后|以后|内|之内|以内)")),
    ("zh_the_nth", re.compile(rf"(?<![月\d零〇一二两三四五六七八九十]){_ZH_NUM_RE}[号日](?!子)")),
    ("zh_next_week", re.compile(r"下个?(?:周|星期|礼拜|月)(?![一二三四五六日天1-7末])")),
)


@dataclass(frozen=True, slots=True)
class DueSpan:
    """One date expression found in a text: its characters `[start, end)` and the words as said."""

    start: int
    end: int
    text: str
    kind: str


def find_due(text: str) -> list[DueSpan]:
    """Every date expression in `text`, in order, without overlaps, each exactly as said.

    Connectors around the date ("by", "before", "之前") are not part of the span: `due` is the date itself.
    """
    found: list[DueSpan] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            found.append(DueSpan(m.start(), m.end(), m.group(0), kind))
    found.sort(key=lambda s: (s.start, -(s.end - s.start)))
    kept: list[DueSpan] = []
    for span in found:
        if kept and span.start < kept[-1].end:
            continue
        kept.append(span)
    return kept


def resolve_due(expression: str, anchor: dt.date | None) -> str | None:
    """The ISO date (`YYYY-MM-DD`) that `expression` names, counted from `anchor` (the meeting's date).

    Returns None when there is no anchor, no date in the expression, or the expression names a span rather
    than a day ("next week", "下个月"). Leading "by"/"before"/"on" and trailing "之前"/"以前" are ignored.
    """
    spans = find_due(expression)
    if not spans:
        return None
    span = spans[0]
    year_given = re.search(r"\d{4}", span.text) is not None
    if anchor is None and not year_given:
        return None
    day = _resolve(span, anchor)
    return day.isoformat() if day else None


def _resolve(span: DueSpan, anchor: dt.date | None) -> dt.date | None:
    text, kind = span.text, span.kind
    if kind == "en_iso":
        return _safe_date(int(text[:4]), int(text[5:7]), int(text[8:10]))
    if kind in ("en_month_day", "en_day_month"):
        month = next(_MONTHS[m] for m in sorted(_MONTHS, key=len, reverse=True) if re.search(rf"\b{m}\b", text))
        day_m = re.search(rf"(?<!\d)({_DAY_RE})", re.sub(r"\b\d{4}\b", "", text))
        year_m = re.search(r"\b(\d{4})\b", text)
        if day_m is None:
            return None
        day = int(re.sub(r"\D", "", day_m.group(1)))
        return _month_day(month, day, anchor, int(year_m.group(1)) if year_m else None)
    if kind == "zh_month_day":
        year_m = re.match(r"(\d{4})年", text)
        rest = text[5:] if year_m else text
        month_s, day_s = re.match(rf"({_ZH_NUM_RE})月({_ZH_NUM_RE})", rest).groups()  # type: ignore[union-attr]
        month, day = _zh_number(month_s), _zh_number(day_s)
        if month is None or day is None:
            return None
        return _month_day(month, day, anchor, int(year_m.group(1)) if year_m else None)
    assert anchor is not None
    lower = text.lower()
    if kind == "en_relative_day":
        offset = 2 if "after" in lower else 1 if "tomorrow" in lower else 0
        return anchor + dt.timedelta(days=offset)
    if kind == "zh_relative_day":
        offset = {"大后天": 3, "后天": 2, "明天": 1, "明早": 1, "明晚": 1}.get(text, 0)
        return anchor + dt.timedelta(days=offset)
    if kind == "en_in_n":
        m = re.search(rf"(?:in|within)\s+({_EN_COUNT_RE})\s+(day|week)", lower)
        if m is None:
            return None
        n = int(m.group(1)) if m.group(1).isdigit() else _EN_NUMBERS.get(m.group(1))
        if n is None:
            return None
        return anchor + dt.timedelta(days=n * (7 if m.group(2) == "week" else 1))
    if kind == "zh_in_n":
        m = re.match(rf"({_ZH_NUM_RE})(天|周|个星期|个礼拜)", text)
        n = _zh_number(m.group(1)) if m else None
        if m is None or n is None:
            return None
        return anchor + dt.timedelta(days=n * (1 if m.group(2) == "天" else 7))
    if kind == "en_weekday":
        weekday = next(_WEEKDAYS[w] for w in _WEEKDAYS if w.lower() in lower)
        if lower.startswith("next"):
            return _week_monday(anchor, 1) + dt.timedelta(days=weekday)
        return _next_weekday(anchor, weekday, same_day_ok=lower.startswith("this"))
    if kind == "zh_weekday":
        weekday = _ZH_WEEKDAYS[text[-1]]
        if text.startswith("下下"):
            return _week_monday(anchor, 2) + dt.timedelta(days=weekday)
        if text.startswith("下"):
            return _week_monday(anchor, 1) + dt.timedelta(days=weekday)
        if text.startswith(("这", "本")):
            return _week_monday(anchor, 0) + dt.timedelta(days=weekday)
        return _next_weekday(anchor, weekday, same_day_ok=False)
    if kind == "en_end_of":
        later = 1 if "next" in lower else 0
        if "week" in lower:
            return _week_monday(anchor, later) + dt.timedelta(days=4)
        return _month_end(anchor, later)
    if kind == "zh_end_of":
        if text.endswith("周末"):
            later = 1 if text.startswith("下") else 0
            return _week_monday(anchor, later) + dt.timedelta(days=4)
        return _month_end(anchor, 1 if text.startswith("下") else 0)
    if kind in ("en_the_nth", "zh_the_nth"):
        digits = re.sub(r"\D", "", text)
        if digits:
            day = int(digits)
        else:
            word = re.sub(r"^the\s+", "", lower)
            day = _ORDINAL_WORDS.get(word) or _zh_number(text[:-1]) or 0
        return _next_day_of_month(anchor, day)
    return None  # en_next_week, zh_next_week: a span, not a day


def _safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _month_day(month: int, day: int, anchor: dt.date | None, year: int | None) -> dt.date | None:
    if year is not None:
        return _safe_date(year, month, day)
    assert anchor is not None
    this_year = _safe_date(anchor.year, month, day)
    if this_year is not None and this_year >= anchor:
        return this_year
    return _safe_date(anchor.year + 1, month, day)


def _week_monday(anchor: dt.date, weeks_later: int) -> dt.date:
    return anchor - dt.timedelta(days=anchor.weekday()) + dt.timedelta(weeks=weeks_later)


def _next_weekday(anchor: dt.date, weekday: int, *, same_day_ok: bool) -> dt.date:
    ahead = (weekday - anchor.weekday()) % 7
    if ahead == 0 and not same_day_ok:
        ahead = 7
    return anchor + dt.timedelta(days=ahead)


def _month_end(anchor: dt.date, months_later: int) -> dt.date:
    month_index = anchor.month - 1 + months_later
    year, month = anchor.year + month_index // 12, month_index % 12 + 1
    return dt.date(year, month, calendar.monthrange(year, month)[1])


def _next_day_of_month(anchor: dt.date, day: int) -> dt.date | None:
    if not 1 <= day <= 31:
        return None
    year, month = anchor.year, anchor.month
    for _ in range(12):
        found = _safe_date(year, month, day)
        if found is not None and found >= anchor:
            return found
        month += 1
        if month == 13:
            year, month = year + 1, 1
    return None


def _zh_number(text: str) -> int | None:
    """An integer written in digits or Chinese numerals up to 99 ("12", "十二", "二十", "三十一")."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _ZH_DIGITS and ch != "十" for ch in text):
        return None
    if "十" not in text:
        return _ZH_DIGITS[text] if len(text) == 1 else None
    tens_s, _, ones_s = text.partition("十")
    tens = _ZH_DIGITS.get(tens_s, 0) if tens_s else 1
    ones = _ZH_DIGITS.get(ones_s, 0) if ones_s else 0
    return tens * 10 + ones
