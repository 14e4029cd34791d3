"""The needle meeting generator: hours of multi-speaker talk with planted facts and questions about them.

`generate` writes a seeded meeting of any length (ten minutes to an 8-hour day), in English or Chinese.
Speakers with names talk through topics that change every 5 to 15 minutes; 30 to 50 times an hour someone
states a fact of one of the `NEEDLE_KINDS` (an owner with a task and a due date, an amount, a quantity, an
event's date and time, a code name or a contact's name, a saying quoted word for word, a ruled-out
supplier, a correction of an earlier value). Each needle carries 1-2 questions worded unlike the meeting
and the value a right answer must contain. Distractors state a similar fact about something else.

Every value is said once (a correction repeats the old value it corrects, on purpose): each is claimed
in `_Claims` by its meaning (a date once, whatever its form) and by its text (no value inside another
value or inside another planted sentence), so an answer found anywhere else in the meeting is wrong.
The value spaces (month and day, 5-minute clock times, amounts and counts with varied digits, names and
code names built from syllables or characters) are large enough for 50 needles an hour for 8 hours.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .noise import add_noise
from .records import NEEDLE_KINDS, Needle, NeedleMeeting, NeedleQuestion
from .rewording import reword
from .talk import EN_BACKCHANNEL, SPEAKERS, ZH_BACKCHANNEL, ami_lines, background_line, topics
from .vocab import VOCAB

#: Share of needles that get a distractor: a similar fact about something else, said elsewhere.
DISTRACTOR_SHARE = 0.3
_MAX_TRIES = 400
#: Share of questions that also name the subject in other words (`needle_rewording`).
REWORD_SHARE = 0.5
_REWORDABLE = ("subject", "obj", "org", "role")


class _Claims:
    """The values said so far, by meaning (`keys`) and as text, and the planted sentences they are in."""

    def __init__(self) -> None:
        self.keys: set[tuple[Any, ...]] = set()
        self.surfaces: list[str] = []
        self.blob = ""

    def fresh(self, make: Callable[[], tuple[tuple[Any, ...], str]], taken: set[tuple[Any, ...]]) -> str:
        """A value from `make` whose meaning is not claimed yet (nor in `taken`, this build's own draws)."""
        for _ in range(_MAX_TRIES):
            key, surface = make()
            if key not in self.keys and key not in taken:
                taken.add(key)
                return surface
        raise RuntimeError(f"ran out of distinct values of kind {key[0]!r}: the meeting is too long for this "
                           f"needle rate")

    def fits(self, texts: tuple[str, ...], surfaces: tuple[str, ...]) -> bool:
        """Whether new planted `texts` carrying unique `surfaces` leave every claimed value said once."""
        folded = [t.casefold() for t in texts]
        return (not any(s.casefold() in self.blob for s in surfaces)
                and not any(old in t for old in self.surfaces for t in folded))

    def commit(self, texts: tuple[str, ...], surfaces: tuple[str, ...], keys: set[tuple[Any, ...]]) -> None:
        self.keys |= keys
        self.surfaces.extend(s.casefold() for s in surfaces)
        self.blob += "\n".join(t.casefold() for t in texts) + "\n"


@dataclass(frozen=True, slots=True)
class _Planted:
    """A planted statement before it has a place in the meeting: its text, values and questions."""

    kind: str
    text: str
    values: dict[str, str]
    questions: tuple[NeedleQuestion, ...]
    surfaces: tuple[str, ...]  # the values that must be said nowhere else
    earlier: str | None = None  # a correction: what was said before (the corrected segment's text)


# ------------------------------------------------------------------------------------------------------
# Value spaces. Each maker returns (meaning, text as said); `_Claims.fresh` keeps the meanings unique.
# ------------------------------------------------------------------------------------------------------
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_EN_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")


_ZH_DIGITS = "零一二三四五六七八九"


def zh_number(n: int) -> str:
    """`n` (0 < n < 10**8) in Chinese numerals as said: 25000 -> 两万五千, 12 -> 十二, 1050 -> 一千零五十."""
    if not 0 < n < 10**8:
        raise ValueError(f"zh_number handles 1 to 99999999, got {n}")
    high, low = divmod(n, 10_000)
    if not high:
        return _zh_below_10k(low)
    text = ("两" if high == 2 else _zh_below_10k(high)) + "万"
    if low:
        text += ("零" if low < 1000 else "") + _zh_below_10k(low, inner=True)
    return text


def _zh_below_10k(n: int, inner: bool = False) -> str:
    parts: list[str] = []
    gap = False
    for unit, name in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // unit % 10
        if not digit:
            gap = bool(parts)
            continue
        if gap:
            parts.append("零")
            gap = False
        leading = not parts
        word = "两" if digit == 2 and leading and unit >= 100 else _ZH_DIGITS[digit]
        parts.append(("" if digit == 1 and unit == 10 and leading and not inner else word) + name)
    return "".join(parts)


def _date(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    month = rng.randint(1, 12)
    day = rng.randint(1, _MONTH_DAYS[month - 1])
    if lang == "zh":
        text = f"{month}月{day}日" if rng.random() < 0.5 else f"{zh_number(month)}月{zh_number(day)}号"
    else:
        suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
        text = f"{_EN_MONTHS[month - 1]} {day}{suffix}"
    return ("date", month, day), text


def _clock(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    hour, minute = rng.randint(8, 18), rng.randrange(0, 60, 5)
    if lang != "zh":
        return ("time", hour, minute), f"{(hour - 1) % 12 + 1}:{minute:02d} {'am' if hour < 12 else 'pm'}"
    period = "上午" if hour < 12 else "中午" if hour == 12 else "下午"
    h = hour if hour <= 12 else hour - 12
    spoken = "两" if h == 2 else zh_number(h)
    tail = {0: "点整", 15: "点一刻", 30: "点半"}.get(minute) or f"点{'零' if minute < 10 else ''}{zh_number(minute)}分"
    return ("time", hour, minute), f"{period}{spoken}{tail}"


def _amount(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    digits = rng.choice((4, 4, 5, 5, 5, 6))
    if lang == "zh" and rng.random() < 0.6:  # said in words, two or three significant figures
        figures = rng.choice((2, 3))
        value = rng.randint(10 ** (figures - 1) + 1, 10 ** figures - 1) * 10 ** (digits - figures)
        return ("amount", value), f"{zh_number(value)}元"
    value = rng.randint(10 ** (digits - 1), 10 ** digits - 1) // 5 * 5
    return ("amount", value), (f"{value}元" if lang == "zh" else f"${value:,}")


def _count(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    value = rng.choice((rng.randint(12, 99) * 10, rng.randint(101, 9999), rng.randint(11, 90) * 1000 +
                        rng.randint(1, 9) * 100))
    if lang == "zh":
        return ("count", value), (zh_number(value) if rng.random() < 0.5 else str(value))
    return ("count", value), f"{value:,}"


def _codename(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    v = VOCAB[lang]
    if lang == "zh":
        name = rng.choice(v["code_first"]) + rng.choice(v["code_second"])
    else:
        name = "".join(rng.choice(v["syllables"]) for _ in range(rng.choice((2, 3)))).capitalize()
        if len(name) < 5:
            name += rng.choice(("ra", "on", "ix", "el", "is"))
    return ("name", name.casefold()), name


def _person(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    v = VOCAB[lang]
    name = rng.choice(v["surnames"]) + rng.choice(v["given"]) if lang == "zh" else \
        f"{rng.choice(v['given'])} {rng.choice(v['surnames'])}"
    return ("name", name.casefold()), name


def _vendor(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    v = VOCAB[lang]
    if lang == "zh":
        first, second = rng.sample(v["vendor_chars"], 2)
        name = first + second + rng.choice(v["vendor_suffixes"])
    else:
        name = "".join(rng.choice(v["syllables"]) for _ in range(2)).capitalize()
        if len(name) < 5:
            name += rng.choice(("ex", "on", "ia", "al"))
    return ("name", name.casefold()), name


def _quote(rng: random.Random, lang: str) -> tuple[tuple[Any, ...], str]:
    v = VOCAB[lang]
    if rng.random() < 0.6:
        (a, b), (c, d) = rng.choice(v["quote_first"]), rng.choice(v["quote_second"])
        text = f"{a}不{b}，{c}不{d}" if lang == "zh" else f"no {a} without {c}"
    else:
        a, b = rng.choice(v["quote_rather"]), rng.choice(v["quote_than"])
        text = f"宁可{a}，也不{b}" if lang == "zh" else f"a {a} {b[1]} beats a {b[0]} one"
    return ("quote", text), text


# ------------------------------------------------------------------------------------------------------
# Needle builders. Each draws its subject and values, fills a template, and writes questions from other
# templates: the question names the subject but not the sentence's other words.
# ------------------------------------------------------------------------------------------------------
def _subject(rng: random.Random, claims: _Claims, taken: set[tuple[Any, ...]], lang: str, pool: str) -> str:
    v = VOCAB[lang]
    joiner = "" if lang == "zh" else " "

    def make() -> tuple[tuple[Any, ...], str]:
        if pool == "contact":
            org, role = rng.choice(v["orgs"]), rng.choice(v["contact_roles"])
            return ("subject", pool, org, role), f"{org}\t{role}"
        text = rng.choice(v["parts"]) + joiner + rng.choice(v[pool])
        return ("subject", pool, text), text

    return claims.fresh(make, taken)


def _questions(rng: random.Random, forms: tuple[tuple[str, str], ...], fill: dict[str, str],
               lang: str) -> tuple[NeedleQuestion, ...]:
    """One or two of `forms` ((question template, name of the expected value)), filled from `fill`; about
    `REWORD_SHARE` of them name the subject in other words (`needle_rewording`), never the expected value."""
    chosen = rng.sample(forms, 2 if len(forms) > 1 and rng.random() < 0.5 else 1)
    out = []
    for q, want in chosen:
        said = q.format(**fill)
        if rng.random() < REWORD_SHARE:
            other = {**fill, **{key: reword(fill[key], lang) for key in _REWORDABLE if key in fill}}
            asked = q.format(**other)
            if asked != said:
                out.append(NeedleQuestion(asked, fill[want], True))
                continue
        out.append(NeedleQuestion(said, fill[want]))
    return tuple(out)


def _build(kind: str, lang: str, rng: random.Random, claims: _Claims, speaker: str,
           others: tuple[str, ...]) -> _Planted:
    """A planted statement of `kind` said by `speaker`, its values claimed, or RuntimeError when the value
    spaces are used up."""
    v = VOCAB[lang]
    for _ in range(_MAX_TRIES):
        t = v["templates"].get(kind, {})
        taken: set[tuple[Any, ...]] = set()
        earlier = None
        fill: dict[str, str] = {"speaker": speaker}
        if kind == "todo":
            fill |= {"owner": rng.choice(others), "verb": rng.choice(v["verbs"]),
                     "obj": _subject(rng, claims, taken, lang, "docs"), "due": claims.fresh(lambda: _date(rng, lang),
                                                                                          taken)}
            fill["task"] = t["task"].format(**fill)
            values, surfaces = {"owner": fill["owner"], "task": fill["task"], "due": fill["due"]}, (fill["due"],)
        elif kind == "money":
            fill |= {"subject": _subject(rng, claims, taken, lang, "money"),
                     "amount": claims.fresh(lambda: _amount(rng, lang), taken)}
            values, surfaces = {"subject": fill["subject"], "amount": fill["amount"]}, (fill["amount"],)
        elif kind == "quantity":
            fill |= {"subject": _subject(rng, claims, taken, lang, "batches"), "unit": rng.choice(v["units"]),
                     "quantity": claims.fresh(lambda: _count(rng, lang), taken)}
            values, surfaces = {"subject": fill["subject"], "quantity": fill["quantity"]}, (fill["quantity"],)
        elif kind == "datetime":
            fill |= {"subject": _subject(rng, claims, taken, lang, "events"),
                     "date": claims.fresh(lambda: _date(rng, lang), taken),
                     "time": claims.fresh(lambda: _clock(rng, lang), taken)}
            values = {"subject": fill["subject"], "date": fill["date"], "time": fill["time"]}
            surfaces = (fill["date"], fill["time"])
        elif kind == "name" and rng.random() < 0.6:
            fill |= {"subject": _subject(rng, claims, taken, lang, "projects"),
                     "name": claims.fresh(lambda: _codename(rng, lang), taken)}
            values, surfaces = {"subject": fill["subject"], "name": fill["name"]}, (fill["name"],)
        elif kind == "name":
            t = v["templates"]["contact"]
            fill["org"], fill["role"] = _subject(rng, claims, taken, lang, "contact").split("\t")
            fill["name"] = claims.fresh(lambda: _person(rng, lang), taken)
            values = {"org": fill["org"], "role": fill["role"], "name": fill["name"]}
            surfaces = (fill["name"],)
        elif kind == "quote":
            fill |= {"subject": _subject(rng, claims, taken, lang, "issues"),
                     "quote": claims.fresh(lambda: _quote(rng, lang), taken)}
            values, surfaces = {"subject": fill["subject"], "quote": fill["quote"]}, (fill["quote"],)
        elif kind == "negation":
            fill |= {"subject": _subject(rng, claims, taken, lang, "roles"),
                     "vendor": claims.fresh(lambda: _vendor(rng, lang), taken)}
            values, surfaces = {"subject": fill["subject"], "vendor": fill["vendor"]}, (fill["vendor"],)
        elif kind == "correction":
            what = rng.choice(("date", "money", "quantity", "time"))
            t = v["templates"][f"correction_{what}"]
            pool = {"date": "events", "money": "money", "quantity": "batches", "time": "events"}[what]
            make = {"date": _date, "money": _amount, "quantity": _count, "time": _clock}[what]
            fill |= {"subject": _subject(rng, claims, taken, lang, pool),
                     "old": claims.fresh(lambda make=make: make(rng, lang), taken),
                     "new": claims.fresh(lambda make=make: make(rng, lang), taken)}
            earlier = rng.choice(t["earlier"]).format(**fill)
            values, surfaces = {"subject": fill["subject"], "old": fill["old"], "new": fill["new"]}, (
                fill["old"], fill["new"])
        else:
            raise ValueError(f"unknown needle kind {kind!r}")
        text = rng.choice(t["said"]).format(**fill)
        if rng.random() < 0.25:  # said with some lead-in talk
            keep = lang == "zh" or text.startswith(("I ", *(x for x in fill.values() if x)))
            text = rng.choice(v["leads"]) + (text if keep else text[0].lower() + text[1:])
        texts = (text,) if earlier is None else (earlier, text)
        if claims.fits(texts, surfaces):
            claims.commit(texts, surfaces, taken)
            return _Planted(kind, text, values, _questions(rng, t["asked"], fill, lang), surfaces, earlier)
    raise RuntimeError(f"could not plant a distinct {kind} needle: the meeting is too long for this needle rate")


# ------------------------------------------------------------------------------------------------------
# The meeting: a schedule of planted statements, walked in time with background talk between them.
# ------------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Event:
    time: float
    order: int
    role: str  # "needle", "earlier" (a correction's corrected statement) or "distractor"
    kind: str
    ref: int  # the needle's number (a correction's earlier statement and its correction share it)


def _schedule(rng: random.Random, total: float, needles_per_hour: int, hours: float) -> list[_Event]:
    count = max(1, round(hours * needles_per_hour))
    kinds: list[str] = []
    while len(kinds) < count:  # every kind once in each run of len(NEEDLE_KINDS) needles
        block = list(NEEDLE_KINDS)
        rng.shuffle(block)
        kinds.extend(block)
    slot = total / count
    events: list[_Event] = []
    for i, kind in enumerate(kinds[:count]):
        at = (i + rng.uniform(0.1, 0.9)) * slot
        events.append(_Event(at, len(events), "needle", kind, i))
        if kind == "correction":
            events.append(_Event(at - rng.uniform(0.2, 0.8) * min(at, 1800.0), len(events), "earlier", kind, i))
        if rng.random() < DISTRACTOR_SHARE:
            other = kind if kind != "correction" else rng.choice(("money", "datetime", "quantity"))
            events.append(_Event(rng.uniform(0.0, total), len(events), "distractor", other, i))
    events.sort(key=lambda e: (e.time, e.order))
    return events


def generate(hours: float, *, lang: str = "en", seed: int = 7, needles_per_hour: int = 40, noise: float = 0.0,
             background: Path | None = None) -> NeedleMeeting:
    """A seeded needle meeting of about `hours` hours; the same arguments always give the same meeting.

    Args:
        hours: length of the meeting (10 minutes to a working day, and longer if the values last).
        lang: "en" or "zh"; every segment's `lang` and every question are in it.
        seed: the seed; `noise` draws from its own stream, so a noisy meeting is the clean one, disturbed.
        needles_per_hour: planted facts an hour (30 to 50 is the issue's range), every kind in turn.
        noise: ASR-like noise rate in [0, 1] on every segment's text, never on a needle's values.
        background: a folder of AMI meetings (its `dev/*.json`): their dialogue acts replace the generated
            background talk (English only).
    """
    if lang not in VOCAB:
        raise ValueError(f"lang must be one of {sorted(VOCAB)}, got {lang!r}")
    if not hours > 0:
        raise ValueError(f"hours must be positive, got {hours}")
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise is a rate in [0, 1], got {noise}")
    if needles_per_hour < 1:
        raise ValueError(f"needles_per_hour must be at least 1, got {needles_per_hour}")
    if background is not None and lang != "en":
        raise ValueError("AMI background talk is English; use background=None for other languages")
    rng = random.Random(f"meetmem-needles:{lang}:{seed}:{hours}:{needles_per_hour}")
    noise_rng = random.Random(f"meetmem-needles-noise:{lang}:{seed}:{hours}:{needles_per_hour}:{noise}")
    ami = ami_lines(background) if background is not None else []
    ami_at = rng.randrange(len(ami)) if ami else 0
    speakers = tuple(rng.sample(SPEAKERS[lang], rng.randint(4, 6)))
    total = hours * 3600.0
    claims = _Claims()
    events = _schedule(rng, total, needles_per_hour, hours)
    pending: dict[int, _Planted] = {}
    rows: list[dict[str, Any]] = []
    planted: list[tuple[int, _Planted, int | None]] = []  # (segment index, statement, corrected index)
    distractors: list[int] = []
    earlier_at: dict[int, int] = {}
    protected: dict[int, tuple[str, ...]] = {}
    block_log: list[list[Any]] = []
    clock, previous = 1.0, None
    while clock < total or events:
        topic = rng.choice([t for t in topics(lang) if t is not previous])
        previous, block_start = topic, clock
        block_end = clock + rng.uniform(300.0, 900.0)
        while clock < block_end and (clock < total or events):
            speaker = rng.choice(speakers)
            index = len(rows)
            if events and clock >= events[0].time:
                event = events.pop(0)
                others = tuple(s for s in speakers if s != speaker)
                if event.role == "needle" and event.kind == "correction":
                    statement = pending.pop(event.ref)
                    planted.append((index, statement, earlier_at[event.ref]))
                elif event.role == "earlier":
                    statement = _build(event.kind, lang, rng, claims, speaker, others)
                    pending[event.ref] = statement
                    earlier_at[event.ref] = index
                    assert statement.earlier is not None
                    rows.append(_row(clock, speaker, statement.earlier, lang, rng))
                    protected[index] = (statement.values["subject"], statement.values["old"])
                    clock = rows[-1]["end"] + rng.uniform(0.1, 0.6)
                    continue
                else:
                    statement = _build(event.kind, lang, rng, claims, speaker, others)
                    if event.role == "needle":
                        planted.append((index, statement, None))
                    else:
                        distractors.append(index)
                text = statement.text
                protected[index] = tuple(statement.values.values())
            elif ami:
                letter, text = ami[ami_at % len(ami)]
                ami_at += 1
                speaker = speakers[(ord(letter[:1] or "A") - ord("A")) % len(speakers)]
            else:
                text = background_line(rng, lang, topic, tuple(s for s in speakers if s != speaker))
            rows.append(_row(clock, speaker, text, lang, rng))
            gap = rng.uniform(0.1, 0.6) if rng.random() > 0.03 else rng.uniform(2.0, 6.0)
            clock = rows[-1]["end"] + gap
        block_log.append([topic.name, round(block_start, 2), round(clock, 2)])
    _clear_background(rows, protected, claims, rng, lang)
    if noise > 0.0:
        for i, row in enumerate(rows):
            row["text"] = add_noise(row["text"], noise, noise_rng, lang, protected.get(i, ()))
    needles = []
    for index, statement, corrects in planted:
        if not all(value in rows[index]["text"] for value in statement.values.values()):
            raise RuntimeError(f"a needle's values were lost from segment {index}")  # a bug, never expected
        needles.append(Needle(statement.kind, lang, index, rows[index]["text"], dict(statement.values),
                              statement.questions, corrects))
    notes = {"generator": "meetmem.eval.needles", "needles_per_hour": needles_per_hour, "noise": noise,
             "background": "ami" if ami else "templates", "speakers": list(speakers), "topics": block_log}
    return NeedleMeeting(lang, seed, hours, tuple(rows), tuple(needles), tuple(distractors), notes)


def _row(clock: float, speaker: str, text: str, lang: str, rng: random.Random) -> dict[str, Any]:
    """A segment at `clock`, as long as it takes to say `text` (about 0.27 s a word, 0.2 s a character)."""
    said = len(re.sub(r"[\s，。？！：、\"“”,.?!:]", "", text)) * 0.2 if lang == "zh" else len(text.split()) * 0.27
    start = round(clock, 2)
    return {"start": start, "end": round(start + said + 0.2 + rng.random() * 0.4, 2), "speaker": speaker,
            "text": text, "lang": lang}


def _clear_background(rows: list[dict[str, Any]], protected: dict[int, tuple[str, ...]], claims: _Claims,
                      rng: random.Random, lang: str) -> None:
    """Background that happens to contain a planted value (AMI talk can say anything) becomes a
    backchannel, so every value stays said only where it was planted."""
    if not claims.surfaces:
        return
    values = sorted(set(claims.surfaces), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(v) for v in values), re.IGNORECASE)
    for i, row in enumerate(rows):
        if i not in protected and pattern.search(row["text"]):
            row["text"] = rng.choice(ZH_BACKCHANNEL if lang == "zh" else EN_BACKCHANNEL)
