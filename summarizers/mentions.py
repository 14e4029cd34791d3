"""What a text states that people ask for: numbers, amounts, dates, times and names, each with match keys.

Pure. `mentions(normalise(text))` finds the facts a line or a transcript segment states, keyed by value
so that different wordings of one fact meet ("$40,000", "forty thousand dollars", "4万"; "周五" and
"Friday"). `validation.check_line` compares a model's line with the segments it cites through these keys.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

# -- vocabularies -----------------------------------------------------------------------------------------

_EN_SMALL = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_EN_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
            "ninety": 90}
_EN_SCALES = {"thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_EN_WORD = "|".join([*_EN_SMALL, *_EN_TENS, "hundred", *_EN_SCALES])

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
}
#: Abbreviations, and months that are also common words, count only when capitalised ("May", not "may").
_MONTHS_CAPITALISED = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9,
                       "Sept": 9, "Oct": 10, "Nov": 11, "Dec": 12, "May": 5, "March": 3}
_WEEKDAYS = {"monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
             "sunday": 7}
_WEEKDAYS_CAPITALISED = {"Mon": 1, "Tue": 2, "Tues": 2, "Wed": 3, "Thu": 4, "Thur": 4, "Thurs": 4, "Fri": 5,
                         "Sat": 6, "Sun": 7}
_ZH_WEEKDAYS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}

#: Relative days and weeks, English and Chinese, by meaning. Longer phrases first.
_RELATIVE = (
    (r"the day after tomorrow", "+2d"), (r"end of (?:the |this )?week", "eow"),
    (r"end of (?:the |this )?month", "eom"), (r"end of (?:the |this )?year", "eoy"),
    (r"end of (?:the )?day|eod", "eod"), (r"next week", "next-week"), (r"this week", "this-week"),
    (r"last week", "last-week"), (r"next month", "next-month"), (r"this month", "this-month"),
    (r"last month", "last-month"), (r"next year", "next-year"), (r"this year", "this-year"),
    (r"weekend", "weekend"), (r"tomorrow", "+1d"), (r"today", "0d"), (r"tonight", "tonight"),
    (r"yesterday", "-1d"),
)
_ZH_RELATIVE = (
    ("后天", "+2d"), ("明天|明日", "+1d"), ("今天|今日", "0d"), ("今晚", "tonight"), ("昨天", "-1d"),
    ("(?:下周|下个?星期|下个?礼拜)(?![一二三四五六日天末])", "next-week"),
    ("(?:本周|这周|这个?星期|这个?礼拜)(?![一二三四五六日天末])", "this-week"),
    ("(?:上周|上个?星期|上个?礼拜)(?![一二三四五六日天末])", "last-week"),
    ("周末", "weekend"), ("下个?月(?!底|初)", "next-month"), ("(?:本|这个)月(?!底|初)", "this-month"),
    ("上个?月(?!底|初)", "last-month"), ("月底", "eom"), ("年底", "eoy"), ("明年", "next-year"),
    ("今年", "this-year"), ("下班前", "eod"),
)

_CURRENCY_WORDS = {
    "dollar": "usd", "dollars": "usd", "bucks": "usd", "usd": "usd", "euro": "eur", "euros": "eur",
    "eur": "eur", "pound": "gbp", "pounds": "gbp", "quid": "gbp", "gbp": "gbp", "yuan": "cny", "rmb": "cny",
    "cny": "cny", "yen": "jpy", "jpy": "jpy",
}
_CURRENCY_SYMBOLS = {"$": ("usd",), "€": ("eur",), "£": ("gbp",), "¥": ("cny", "jpy")}
_ZH_CURRENCY = {"美元": "usd", "美金": "usd", "欧元": "eur", "英镑": "gbp", "日元": "jpy", "人民币": "cny"}

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_ZH_NUM = "[零〇一二两三四五六七八九十百千万亿]"

#: Surnames whose character seldom starts an everyday word (马上, 方案, 周末, 分钟 are why 马, 方, 周, 钟 are
#: not here): a name is only looked for after one of these.
_ZH_SURNAMES = "张王李赵刘陈杨黄吴徐孙胡朱郭罗梁宋郑韩唐冯曹袁邓彭吕苏卢蒋蔡贾魏薛潘杜戴汪姜姚谭廖邹熊郝崔邱孟沈林"
_ZH_TITLES = "总监|总|经理|老师|主任|主管|博士|医生|律师|先生|女士|小姐|工|姐|哥|师傅"

#: Capitalised words that commonly open an English sentence and are not names.
_OPENERS = frozenset("""
a an the one this that these those there here it its we our they their he she his her you your i my me us them
and but or so if when while after before because since although though then also still yet however
as at by for from in into of on onto to with without within about above below over under between during
until per via next last first second third final finally overall meanwhile instead otherwise once
all both each every either neither no none not nothing some several many most more much any few other
only just even already again always never now today tomorrow yesterday tonight soon later
is are was were be been will would should could can may might must shall do does did has have had
please let lets there's it's we'll we're they'll they're let's don't won't can't
agreed decided discussed decision decisions action actions todo todos task tasks owner owners deadline
deadlines budget budgets cost costs price prices plan plans team teams meeting meetings project projects
next-step next-steps summary follow-up follow followup open question questions issue issues risk risks
update updates status review reviews note notes key main topic topics goal goals target targets launch
release shipping ship testing test tests design sales marketing engineering product customer customers
client clients vendor vendors contract contracts payment payments revenue timeline schedule scope
everyone someone nobody anyone people group speaker speakers
""".split())

# -- normalisation and mentions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mention:
    """One fact a text states: the words as written, the keys it matches by, and how to check it."""

    literal: str
    keys: frozenset[str]
    kind: str  # value | name | opener


def normalise(text: str) -> str:
    """NFKC (full-width digits and punctuation to ASCII), curly quotes to straight, "百分之十五" to "十五%"."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    return re.sub(rf"百分之({_ZH_NUM}+|\d+(?:\.\d+)?)", r"\1%", text)


def _n(value: Decimal | int | float) -> str:
    """The key of a number: its value, written without exponent or trailing zeros."""
    d = Decimal(str(value)).normalize()
    return "n:" + format(d, "f")


def _t(hour: int, minute: int) -> str:
    """The key of a clock time, hours taken modulo 12 (am/pm is seldom said twice)."""
    return f"t:{hour % 12}:{minute:02d}"


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def _zh_number(text: str) -> int | None:
    """The value of a Chinese numeral ("两万三千" 23000, "一万五" 15000, "十二" 12, "二〇二四" 2024)."""
    if not text:
        return None
    if all(c in _ZH_DIGITS for c in text):
        return int("".join(str(_ZH_DIGITS[c]) for c in text))
    total = section = number = 0
    last_unit = 0
    for i, c in enumerate(text):
        if c in _ZH_DIGITS:
            number = _ZH_DIGITS[c]
        elif c in _ZH_UNITS:
            unit = _ZH_UNITS[c]
            section += (number or 1) * unit
            number, last_unit = 0, unit
        elif c in _ZH_BIG_UNITS:
            unit = _ZH_BIG_UNITS[c]
            total += (section + number or 1) * unit
            section = number = 0
            last_unit = unit
        else:
            return None
        if i == len(text) - 1 and c in _ZH_DIGITS and last_unit >= 100 and text[i - 1] in (*_ZH_UNITS, *_ZH_BIG_UNITS):
            number *= last_unit // 10  # colloquial "一万五" = 15000, "三千五" = 3500
    return total + section + number


def _en_groups(words: Sequence[str]) -> list[int]:
    """English number words as the numbers they say: "forty two" [42]; "twelve fifty" [12, 50]."""
    groups: list[int] = []
    total = current = 0
    prev: str | None = None
    for word in words:
        starts_new = False
        if word in _EN_SMALL:
            value = _EN_SMALL[word]
            if prev is None or prev == "hundred" or prev in _EN_SCALES:
                pass
            elif prev in _EN_TENS and value < 10 and current % 10 == 0:
                pass
            else:
                starts_new = True
        elif word in _EN_TENS:
            value = _EN_TENS[word]
            starts_new = not (prev is None or prev == "hundred" or prev in _EN_SCALES)
        else:
            value = 0
        if starts_new:
            groups.append(total + current)
            total = current = 0
        if word in _EN_SMALL or word in _EN_TENS:
            current += value
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _EN_SCALES:
            total += (current or 1) * _EN_SCALES[word]
            current = 0
        prev = word
    groups.append(total + current)
    return groups


def _en_number_keys(phrase: str) -> frozenset[str] | None:
    words = [w for w in re.split(r"[\s-]+", phrase.lower()) if w and w != "and"]
    if words == ["one"]:
        return None  # "no one", "the one we chose": seldom a number
    groups = _en_groups(words)
    if len(groups) == 1:
        return frozenset({_n(groups[0])})
    keys = {_n(int("".join(str(g) for g in groups)))}
    if len(groups) == 2 and all(g < 100 for g in groups):
        first, second = groups
        keys |= {_n(first * 100 + second), _n(Decimal(first) + Decimal(second) / 100)}
        if first <= 24 and second < 60:
            keys.add(_t(first, second))
    return frozenset(keys)


_MULTIPLIERS = {"k": 1000, "thousand": 1000, "m": 1_000_000, "mm": 1_000_000, "million": 1_000_000,
                "bn": 1_000_000_000, "billion": 1_000_000_000, "hundred": 100, "万": 10_000, "亿": 100_000_000,
                "千": 1000, "百": 100}

_NUM_RE = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_ZH_NUM_OR_DIGITS = rf"(?:(?<!\d)\d{{1,2}}|{_ZH_NUM}{{1,3}})"
_A = r"(?<![A-Za-z0-9])"  # an ASCII word starts here (\b would not split "Alice说")
_Z = r"(?![A-Za-z0-9])"


def _value_of(token: str) -> int | None:
    return int(token) if token.isdigit() else _zh_number(token)


def _pattern_handlers() -> list[tuple[re.Pattern[str] | None, Any]]:
    """The value patterns, most specific first; a match claims its span, so "3月" is a month, not a 3."""

    def iso(m: re.Match[str]) -> list[frozenset[str]]:
        return [frozenset({_n(int(m[1]))}), frozenset({f"month:{int(m[2])}"}), frozenset({_n(int(m[3]))})]

    def clock(m: re.Match[str]) -> list[frozenset[str]]:
        return [frozenset({_t(int(m[1]), int(m[2]))})]

    def ampm(m: re.Match[str]) -> list[frozenset[str]]:
        return [frozenset({_t(int(m[1]), 0), _n(int(m[1]))})]

    def zh_clock(m: re.Match[str]) -> list[frozenset[str]] | None:
        hour = _value_of(m[1])
        if hour is None or hour > 24:
            return None
        if m[2] is None:
            return None if m[1] == "一" else [frozenset({_t(hour, 0)})]
        if m[2] == "半":
            return [frozenset({_t(hour, 30)})]
        minute = _value_of(m[2])
        if minute is None or minute >= 60:
            return None
        decimal = m[2] if m[2].isdigit() else str(minute) if minute < 10 else None
        keys = {_t(hour, minute)} | ({_n(Decimal(f"{hour}.{decimal}"))} if decimal else set())
        return [frozenset(keys)]  # "三点五" is 3.5 as often as it is 3:05

    def zh_month(m: re.Match[str]) -> list[frozenset[str]] | None:
        month = _value_of(m[1])
        return [frozenset({f"month:{month}"})] if month and 1 <= month <= 12 else None

    def zh_day(m: re.Match[str]) -> list[frozenset[str]] | None:
        day = _value_of(m[1])
        return [frozenset({_n(day)})] if day and 1 <= day <= 31 else None

    def zh_weekday(m: re.Match[str]) -> list[frozenset[str]]:
        return [frozenset({f"wd:{_ZH_WEEKDAYS[m[1]]}"})]

    def quarter(m: re.Match[str]) -> list[frozenset[str]]:
        return [frozenset({f"q:{_value_of(m[1])}"})]

    def en_month(m: re.Match[str]) -> list[frozenset[str]] | None:
        word = m[0].rstrip(".")
        if word in _MONTHS_CAPITALISED:
            month = _MONTHS_CAPITALISED[word]
        elif word.lower() in _MONTHS and word.lower() not in ("may", "march"):
            month = _MONTHS[word.lower()]
        else:
            return None  # "we may", "mar": not a month
        return [frozenset({f"month:{month}"})]

    def en_weekday(m: re.Match[str]) -> list[frozenset[str]]:
        word = m[0].rstrip(".")
        return [frozenset({f"wd:{_WEEKDAYS_CAPITALISED.get(word) or _WEEKDAYS[word.lower()]}"})]

    def multiplied(m: re.Match[str]) -> list[frozenset[str]] | None:
        value = _decimal(m[1])
        if value is None:
            return None
        keys = {_n(value * _MULTIPLIERS[m[2].lower()])}
        if m[2].lower() == "m":
            keys.add(_n(value))  # "5m" may be metres
        return [frozenset(keys)]

    def digits(m: re.Match[str]) -> list[frozenset[str]] | None:
        value = _decimal(m[0])
        return None if value is None else [frozenset({_n(value)})]

    def en_words(m: re.Match[str]) -> list[frozenset[str]] | None:
        keys = _en_number_keys(m[0])
        return None if keys is None else [keys]

    def zh_numeral(m: re.Match[str]) -> list[frozenset[str]] | None:
        if m[0] == "一" or m[0] == "万" or m[0] == "亿":
            return None  # 一下, 一起, 统一, 万一: seldom a number on its own
        value = _zh_number(m[0])
        return None if value is None else [frozenset({_n(value)})]

    def relative(key: str) -> Any:
        return lambda m: [frozenset({f"rel:{key}"})]

    def currency_symbol(m: re.Match[str]) -> list[frozenset[str]]:
        return [frozenset(f"cur:{c}" for c in _CURRENCY_SYMBOLS[m[0]])]

    def currency_word(m: re.Match[str]) -> list[frozenset[str]]:
        word = m[0].lower()
        code = _CURRENCY_WORDS.get(word) or _ZH_CURRENCY.get(word) or "cny"
        return [frozenset({f"cur:{code}"})]

    en_months = "|".join(sorted([*_MONTHS, *_MONTHS_CAPITALISED], key=len, reverse=True))
    en_weekdays = "|".join(_WEEKDAYS)
    en_weekdays_cap = "|".join(sorted(_WEEKDAYS_CAPITALISED, key=len, reverse=True))
    ampm_re = r"(?:a\.m\.|p\.m\.|am|pm)"
    handlers: list[tuple[re.Pattern[str] | None, Any]] = [
        (re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"), iso),
        (re.compile(rf"(?<!\d)([01]?\d|2[0-4]):([0-5]\d)(?:\s*{ampm_re})?{_Z}", re.I), clock),
        (re.compile(rf"(?<!\d)(1[0-2]|0?\d)\s*{ampm_re}{_Z}", re.I), ampm),
        (re.compile(rf"({_ZH_NUM_OR_DIGITS})\s*[点點](?:\s*(半|{_ZH_NUM_OR_DIGITS})\s*分?)?"), zh_clock),
        (re.compile(rf"({_ZH_NUM_OR_DIGITS})\s*月份?"), zh_month),
        (re.compile(rf"({_ZH_NUM_OR_DIGITS})\s*[日号號]"), zh_day),
        (re.compile(r"(?:周|星期|礼拜)([一二三四五六日天])"), zh_weekday),
        (re.compile(r"第?([1-4一二三四])季度"), quarter),
        (re.compile(rf"{_A}[Qq]([1-4]){_Z}"), quarter),
    ]
    handlers += [(re.compile(pattern), relative(key)) for pattern, key in _ZH_RELATIVE]
    handlers += [(re.compile(rf"{_A}(?:{pattern}){_Z}", re.I), relative(key)) for pattern, key in _RELATIVE]
    handlers += [
        (re.compile(rf"{_A}(?:{en_months}){_Z}\.?", re.I), en_month),
        (re.compile(rf"{_A}(?:{en_weekdays}){_Z}", re.I), en_weekday),
        (re.compile(rf"{_A}(?:{en_weekdays_cap}){_Z}\.?"), en_weekday),
        (re.compile(rf"(?<![\d.])({_NUM_RE})\s*(k|mm|m|bn|hundred|thousand|million|billion|万|亿)(?![A-Za-z])", re.I),
         multiplied),
        (re.compile(rf"(?<![\d.])(?:{_NUM_RE})(?:st|nd|rd|th)?(?![\d])"), digits),
        (re.compile(rf"{_A}(?:{_EN_WORD})(?:[\s-]+(?:and[\s-]+)?(?:{_EN_WORD}))*{_Z}", re.I), en_words),
        (None, None),  # Chinese names are looked for here: "张三" is a name before "三" is a number
        (re.compile(rf"{_ZH_NUM}+"), zh_numeral),
        (re.compile(r"[$€£¥]"), currency_symbol),
        (re.compile("|".join(_ZH_CURRENCY)), currency_word),
        (re.compile(rf"(?<=[\d{_ZH_NUM[1:-1]}])\s*[元块塊]"), currency_word),
        (re.compile(rf"{_A}(?:{'|'.join(_CURRENCY_WORDS)}){_Z}", re.I), currency_word),
    ]
    return handlers


_HANDLERS = _pattern_handlers()
_EN_CAPITALISED_RE = re.compile(r"(?<![A-Za-z0-9'])[A-Z][A-Za-z]*(?:['-][A-Za-z]+)*")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;。！？：；\n])[\s\"'“”(\[*\-•]*$")
_ZH_NAME_RE = re.compile(rf"[小老]([{_ZH_SURNAMES}])|([{_ZH_SURNAMES}])(?:{_ZH_TITLES})|([{_ZH_SURNAMES}])")
#: A surname character right after one of these is a measure word or inside a word (三张, 这张, 紧张, 主张).
_NOT_BEFORE_SURNAME = frozenset("零〇一二两三四五六七八九十几这那每整纸紧主扩夸开慌")
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def mentions(text: str) -> list[Mention]:
    """The facts `text` states (already normalised), each once, in no particular order."""
    claimed: list[tuple[int, int]] = []
    found: list[Mention] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in claimed)

    for pattern, handler in _HANDLERS:
        if pattern is None:
            found.extend(_zh_names(text, free, claimed))
            continue
        for m in pattern.finditer(text):
            if m.end() == m.start() or not free(m.start(), m.end()):
                continue
            keys = handler(m)
            if not keys:
                continue
            claimed.append((m.start(), m.end()))
            found.extend(Mention(m[0].strip(), k, "value") for k in keys)
    for m in _EN_CAPITALISED_RE.finditer(text):
        if not free(m.start(), m.end()) or m[0] == "I" or m[0].startswith("I'"):
            continue
        word = re.sub(r"'s$", "", m[0])
        opener = bool(_SENTENCE_START_RE.search(text[: m.start()]))
        if opener and word.lower() in _OPENERS:
            continue
        found.append(Mention(word, frozenset({"w:" + word.lower()}), "opener" if opener else "name"))
    return found


def _zh_names(text: str, free: Any, claimed: list[tuple[int, int]]) -> list[Mention]:
    """Chinese names after a common surname: "小王", "王总", or the surname and the next character ("张三")."""
    found: list[Mention] = []
    position = 0
    while (m := _ZH_NAME_RE.search(text, position)) is not None:
        position = m.end()
        if not free(m.start(), m.end()):
            continue
        literal = m[0]
        if m[3] is not None:
            # a bare surname: the name is it and the next character ("张三"), if that is a CJK character
            before = text[m.start() - 1] if m.start() > 0 else ""
            if before and before in _NOT_BEFORE_SURNAME:
                continue  # 三张票, 紧张: here 张 is a measure word or part of a word
            if m.end() < len(text) and _CJK_RE.match(text[m.end()]):
                literal = text[m.start(): m.end() + 1]
                position = m.end() + 1
        claimed.append((m.start(), m.start() + len(literal)))
        found.append(Mention(literal, frozenset(), "name"))
    return found
