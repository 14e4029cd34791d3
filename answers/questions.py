"""Which kind of question this is, read from its words alone: time, topic, speaker or why (pure).

The questions people ask most about a meeting are not for an exact sentence:
- **time**: "what did I miss in the last 10 minutes?", "what happened around minute 30?", "around 2:15?",
  "what was said since I joined at 10:20?" name a stretch of the meeting's clock. A segment that merely
  mentions "minutes" is not an answer; the range is.
- **topic**: "what did we decide about the case?", "what's pending on pricing?" ask for ledger items about
  one subject, not the whole list.
- **speaker**: "what did the project manager / Priya say about the prototype?" filters by who spoke.
- **why**: "why did marketing want an LCD?" asks for the reasons said around a choice.

`classify` returns a `RouteRequest` (the route, why it was chosen, and what it needs: a time range, a
topic, a speaker as the question names them) or None for a plain verbatim question. It resolves the
range against the meeting's clock it is given; resolving a speaker's name to a transcript label is the
caller's (`speakers.SpeakerDirectory`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Literal

RouteName = Literal["time", "topic", "speaker", "why"]

#: "around minute 30" looks this far either side (seconds).
AROUND_S = 150.0
#: "at the start / the end of the meeting" covers this much.
EDGE_S = 300.0

_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
                 "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "few": 3, "couple": 2,
                 "half": 0.5}
_ZH_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
               "十五": 15, "二十": 20, "三十": 30, "四十": 40, "半": 0.5}
_COUNT = r"(\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty" \
         r"|thirty|forty|forty-five|fifty|sixty|few|couple(?: of)?|half(?: an)?)"
_UNIT = r"(minutes?|mins?|hours?|hrs?|seconds?|secs?)"
_ZH_COUNT = r"(\d+|[一二两三四五六七八九十半]+)"

_LAST_RE = re.compile(rf"\b(?:last|past|previous|final)\s+{_COUNT}\s*{_UNIT}", re.I)
_FIRST_RE = re.compile(rf"\b(?:first|opening)\s+{_COUNT}\s*{_UNIT}", re.I)
_AGO_RE = re.compile(rf"\b{_COUNT}\s*{_UNIT}\s+ago\b", re.I)
_MINUTE_N_RE = re.compile(r"\b(?:around|about|at|near|by|in)\s+(?:the\s+)?(?:minute|min)\s+(\d+)\b"
                          r"|\b(?:around|about|at|near)\s+(?:the\s+)?(\d+)(?:st|nd|rd|th)?[- ]minute(?:\s+mark)?\b"
                          r"|\b(\d+)\s+minutes?\s+in(?:to (?:the|this) meeting)?\b", re.I)
_BETWEEN_MIN_RE = re.compile(r"\bbetween\s+(?:minutes?\s+)?(\d+)\s+(?:and|to)\s+(?:minute\s+)?(\d+)(?:\s+minutes?)?\b"
                             r"|\bfrom\s+minute\s+(\d+)\s+to\s+(?:minute\s+)?(\d+)\b", re.I)
_CLOCK = r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)?"
_AROUND_CLOCK_RE = re.compile(rf"\b(?:around|about|at|near|by|after|before)\s+{_CLOCK}(?!\d)", re.I)
_BARE_HOUR_RE = re.compile(r"\b(?:around|about|at|near)\s+(\d{1,2})\s*(a\.?m\.?|p\.?m\.?|o'clock)", re.I)
_SINCE_RE = re.compile(r"\bsince\s+(?:i|we)\s+(?:joined|came in|arrived|got here|stepped (?:in|back)|came back|"
                       r"returned|rejoined)\b|\bafter\s+(?:i|we)\s+(?:joined|came in|arrived|got here)\b"
                       r"|我(?:加入|进来|到)(?:之后|以后|后)", re.I)
_SINCE_WHEN_RE = re.compile(rf"\b(?:at|around|about)\s+{_CLOCK}(?!\d)|\b(?:at|around)\s+minute\s+(\d+)\b"
                            rf"|\b{_COUNT}\s*{_UNIT}\s+(?:ago|in)\b", re.I)
_START_RE = re.compile(r"\b(?:at|in|during)\s+the\s+(?:very\s+)?(?:start|beginning|opening)\b|\bopened with\b"
                       r"|开头|一开始|开始的时候", re.I)
_END_RE = re.compile(r"\b(?:at|in|during|towards?|near)\s+the\s+(?:very\s+)?end\b|\bwrap(?:ped)?[- ]up\b"
                     r"|\bended with\b|结尾|最后几分钟|快结束", re.I)
_ZH_LAST_RE = re.compile(rf"(?:最后|最近|过去|前面)的?{_ZH_COUNT}分钟")
_ZH_FIRST_RE = re.compile(rf"(?:最开始|开头|前){_ZH_COUNT}分钟")
_ZH_MINUTE_RE = re.compile(r"第\s*(\d+|[一二两三四五六七八九十]+)\s*分钟")
# What a time question asks for: what happened, what was said or missed (not "what time is the launch").
_HAPPENED_RE = re.compile(r"\b(?:happen\w*|miss\w*|said|say|talk\w*|discuss\w*|cover\w*|went on|going on|"
                          r"decid\w*|agreed|catch me up|recap|summar\w*|what was|what were|what did|anything)\b"
                          r"|说了|讲了|讨论|错过|发生", re.I)

_WHY_RE = re.compile(r"^\s*(?:and\s+|so\s+|but\s+)?(?:why|how come)\b|\bwhat (?:was|were|is|are) the (?:reasons?|"
                     r"rationale|argument|motivation)\b|\bwhat(?:'s| is) the reason\b|\bfor what reason\b"
                     r"|\bhow did (?:we|they|you|\w+) (?:decide|arrive|end up|come to|settle)\b|\bwhy\b.*\?\s*$"
                     r"|为什么|为何|什么原因|理由是", re.I)
_DECIDE_RE = re.compile(r"\b(?:decid\w*|decisions?|agree\w*|settled?|conclu\w+|chose|chosen|choice|go(?:ing)? with|"
                        r"pick\w*|final(?:ly)?|verdict)\b|决定|定了|结论|共识", re.I)
_PENDING_RE = re.compile(r"\b(?:pending|outstanding|open|to-?dos?|action items?|tasks?|next steps|follow[- ]ups?|"
                         r"left to do|still to do|owes?|assigned|who (?:is|'s) (?:doing|handling|on))\b"
                         r"|待办|任务|负责|跟进", re.I)
_OPEN_Q_RE = re.compile(r"\b(?:open questions?|unresolved|undecided|still open|unclear)\b|待定|悬而未决", re.I)
_ABOUT_RE = re.compile(r"\b(?:about|on|regarding|concerning|for|re|with respect to|in terms of|as for|of)\s+(.+)"
                       r"|关于(.+)|(.+?)(?:的|方面)(?:决定|任务|问题)", re.I)
_SPEECH_RE = re.compile(r"\b(?:what|anything)\s+(?:did|does|has|had|do|was|is)\s+(.+?)\s+"
                        r"(?:say|said|says|saying|mention\w*|think|thought|propos\w*|suggest\w*|recommend\w*|"
                        r"present\w*|report\w*|argu\w*|want\w*|tell us|talk\w* about|bring up|raise|contribute|"
                        r"put forward|put forth|pitch\w*|come up with)\b"
                        # "What options did the UI designer put forward?": an object before the speaker, with a
                        # verb of putting ideas forward only ("what book did Caroline recommend?" asks a value).
                        r"|\b(?:what|which)(?:\s+(?!did\b|does\b|has\b|had\b|do\b)[\w-]+){1,2}?\s+"
                        r"(?:did|does|has|had|do)\s+(.+?)\s+(?:put forward|put forth|propos\w*|suggest\w*|"
                        r"present\w*|pitch\w*|come up with|bring up|raise)\b"
                        r"|\bwhat\s+(?:was|were|is)\s+(.+?)(?:'s|s')\s+(?:view|opinion|take|point|position|"
                        r"proposal|suggestion|idea|input|presentation|update|report)\b"
                        r"|\bwhat\s+(.+?)\s+(?:said|says|thought|thinks|proposed|suggested|wanted)\b"
                        r"|(.{1,12}?)(?:说了什么|怎么说|提到了什么|的意见|的看法)", re.I)
_VALUE_QUESTION_RE = re.compile(r"^\s*(?:by\s+|until\s+)?(?:when|how much|how many|how long|who|whom|which|where|"
                                r"what (?:time|date|day|price|amount|number))\b|什么时候|多少|几点|谁|哪", re.I)
_LEAD_RE = re.compile(r"^\s*(?:and\s+|so\s+|but\s+|ok(?:ay)?,?\s+)?", re.I)
_FILLER_TOPIC = frozenset(
    "the a an this that these those we us our i me my you your they their it its is are was were be been did do "
    "does what which who whom when where why how about on regarding for of in to and or any anything final "
    "decision decisions decide decided agree agreed pending outstanding open question questions todo todos task "
    "tasks action items item next steps say said says think thought want wanted mention mentioned meeting "
    "so there has have had come how come reason reasons what's who's view opinion take position idea input " 
    "proposal suggestion choose chose pick picked prefer end up ended settle".split()
)


@dataclass(frozen=True, slots=True)
class MeetingClock:
    """The meeting's clock as a question needs it.

    Args:
        end: where the meeting's last segment ends (seconds): "now" for a live meeting, its end when closed.
        started_at: the wall-clock start (aware) when known, so "around 2:15 pm" is a position.
        joined_at: where the asker's own device started, when known ("since I joined").
    """

    end: float
    started_at: dt.datetime | None = None
    joined_at: float | None = None


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """A routed question: the route, the reason it was taken, and what the route needs."""

    route: RouteName
    reason: str
    start: float | None = None
    end: float | None = None
    topic: str = ""
    speaker_mention: str | None = None
    focus: tuple[str, ...] = field(default_factory=tuple)


def _count(word: str) -> float:
    word = word.lower().strip()
    word = re.sub(r"\s+(?:of|an)$", "", word)
    if word in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[word])
    try:
        return float(word)
    except ValueError:
        return 0.0


def _zh_count(text: str) -> float:
    if text.isdigit():
        return float(text)
    if text in _ZH_NUMBERS:
        return float(_ZH_NUMBERS[text])
    if len(text) == 2 and text[1] == "十":  # 二十, 三十
        return float(_ZH_NUMBERS.get(text[0], 0) * 10)
    if len(text) >= 2 and text[0] == "十":
        return 10.0 + _ZH_NUMBERS.get(text[1:], 0)
    if len(text) == 3 and text[1] == "十":
        return _ZH_NUMBERS.get(text[0], 0) * 10.0 + _ZH_NUMBERS.get(text[2], 0)
    return 0.0


def _seconds(count: float, unit: str) -> float:
    unit = unit.lower()
    if unit.startswith("h"):
        return count * 3600
    if unit.startswith("s"):
        return count
    return count * 60


def _clock_position(match: re.Match[str], first: int, clock: MeetingClock) -> tuple[float, str] | None:
    """A clock time in a question as a position in the meeting, with how it was read.

    "2:15" in a 36-minute meeting is 2 min 15 s in; "2:15 pm" (or "14:15" past the meeting's length) is
    the wall clock, placed with `started_at`. Neither fits: None.
    """
    hours_or_min, minutes_or_sec = int(match.group(first)), int(match.group(first + 1))
    secs = match.group(first + 2)
    meridiem = (match.group(first + 3) or "").replace(".", "").lower()
    if secs is not None and not meridiem:  # H:MM:SS is a player position
        return hours_or_min * 3600 + minutes_or_sec * 60 + int(secs), "a position in the meeting (H:MM:SS)"
    as_position = hours_or_min * 60 + minutes_or_sec
    if not meridiem and as_position <= clock.end + 60:
        return float(as_position), "a position in the meeting (MM:SS)"
    if clock.started_at is None:
        return None
    hour = hours_or_min % 12 + (12 if meridiem == "pm" else 0) if meridiem else hours_or_min
    start = clock.started_at
    wall = start.replace(hour=hour % 24, minute=minutes_or_sec % 60, second=0, microsecond=0)
    offset = (wall - start).total_seconds()
    if not meridiem and hour < 12 and not 0 <= offset <= clock.end + 600:
        offset = (wall + dt.timedelta(hours=12) - start).total_seconds()  # "2:15" said of an afternoon meeting
    if -600 <= offset <= clock.end + 600:
        return max(0.0, offset), f"the wall clock, against the meeting's start {start.isoformat()}"
    return None


def _time_patterns() -> tuple[re.Pattern[str], ...]:
    return (_LAST_RE, _ZH_LAST_RE, _FIRST_RE, _ZH_FIRST_RE, _BETWEEN_MIN_RE, _SINCE_RE, _MINUTE_N_RE, _ZH_MINUTE_RE,
            _AROUND_CLOCK_RE, _AGO_RE, _BARE_HOUR_RE, _START_RE, _END_RE)


def time_range(question: str, clock: MeetingClock) -> tuple[float, float, str] | None:
    """The stretch of the meeting a question names, clipped to the meeting, and how it was read (the clock
    is read only when the question names a time)."""
    if not any(pattern.search(question) for pattern in _TIME_PATTERNS):
        return None
    end = clock.end
    q = question

    def clip(a: float, b: float) -> tuple[float, float]:
        return max(0.0, min(a, end)), max(0.0, min(b, end))

    if m := _LAST_RE.search(q):
        span = _seconds(_count(m.group(1)), m.group(2))
        a, b = clip(end - span, end)
        return a, b, f'"{m.group(0)}": the {span / 60:g} minutes before the meeting\'s latest segment'
    if m := _ZH_LAST_RE.search(q):
        span = _zh_count(m.group(1)) * 60
        a, b = clip(end - span, end)
        return a, b, f'"{m.group(0)}": the {span / 60:g} minutes before the meeting\'s latest segment'
    if m := _FIRST_RE.search(q):
        span = _seconds(_count(m.group(1)), m.group(2))
        return (*clip(0.0, span), f'"{m.group(0)}": the meeting\'s first {span / 60:g} minutes')
    if m := _ZH_FIRST_RE.search(q):
        span = _zh_count(m.group(1)) * 60
        return (*clip(0.0, span), f'"{m.group(0)}": the meeting\'s first {span / 60:g} minutes')
    if m := _BETWEEN_MIN_RE.search(q):
        a_min, b_min = (int(g) for g in (m.group(1) or m.group(3), m.group(2) or m.group(4)))
        a, b = sorted((a_min * 60.0, b_min * 60.0))
        return (*clip(a, b), f'"{m.group(0)}": minutes {a_min} to {b_min} of the meeting')
    if _SINCE_RE.search(q):
        when = _SINCE_WHEN_RE.search(q)
        if when is not None and when.group(1) is not None:
            found = _clock_position(when, 1, clock)
            if found is not None:
                return (*clip(found[0], end), f'"since I joined" at {when.group(0).split(maxsplit=1)[-1]}, '
                        f"read as {found[1]}, to the latest segment")
        if when is not None and when.group(5) is not None:
            return (*clip(int(when.group(5)) * 60.0, end), f'"since I joined" at minute {when.group(5)}')
        if when is not None and when.group(6) is not None:
            ago = _seconds(_count(when.group(6)), when.group(7))
            start = end - ago if "ago" in when.group(0).lower() else ago
            return (*clip(start, end), f'"since I joined" {when.group(0)}, to the latest segment')
        if clock.joined_at is not None:
            return (*clip(clock.joined_at, end), "\"since I joined\": from the asking device's first segment")
        return None
    if m := _MINUTE_N_RE.search(q):
        minute = int(next(g for g in m.groups() if g is not None))
        centre = minute * 60.0
        return (*clip(centre - AROUND_S, centre + AROUND_S),
                f'"{m.group(0)}": {AROUND_S / 60:g} minutes either side of minute {minute}')
    if m := _ZH_MINUTE_RE.search(q):
        minute = _zh_count(m.group(1))
        centre = minute * 60.0
        return (*clip(centre - AROUND_S, centre + AROUND_S),
                f'"{m.group(0)}": {AROUND_S / 60:g} minutes either side of minute {minute:g}')
    if m := _AROUND_CLOCK_RE.search(q):
        found = _clock_position(m, 1, clock)
        if found is not None:
            centre, how = found
            word = m.group(0).split(maxsplit=1)[0].lower()
            if word == "after":
                return (*clip(centre, centre + 2 * AROUND_S), f'"{m.group(0)}", read as {how}')
            if word == "before":
                return (*clip(centre - 2 * AROUND_S, centre), f'"{m.group(0)}", read as {how}')
            return (*clip(centre - AROUND_S, centre + AROUND_S), f'"{m.group(0)}", read as {how}')
    if m := _AGO_RE.search(q):
        ago = _seconds(_count(m.group(1)), m.group(2))
        centre = end - ago
        return (*clip(centre - AROUND_S, centre + AROUND_S), f'"{m.group(0)}", counted back from the latest segment')
    if clock.started_at is not None and (m := _BARE_HOUR_RE.search(q)):
        hour = int(m.group(1))
        meridiem = m.group(2).replace(".", "").lower()
        hour = hour % 12 + (12 if meridiem == "pm" else 0) if meridiem in ("am", "pm") else hour
        wall = clock.started_at.replace(hour=hour % 24, minute=0, second=0, microsecond=0)
        offset = (wall - clock.started_at).total_seconds()
        if -600 <= offset <= end + 600:
            return (*clip(offset - AROUND_S, offset + AROUND_S), f'"{m.group(0)}", on the wall clock')
    if m := _START_RE.search(q):
        return (*clip(0.0, EDGE_S), f'"{m.group(0)}": the first {EDGE_S / 60:g} minutes')
    if m := _END_RE.search(q):
        return (*clip(end - EDGE_S, end), f'"{m.group(0)}": the last {EDGE_S / 60:g} minutes')
    return None


_TIME_PATTERNS = _time_patterns()
_TIME_WORDS = frozenset(
    "miss missed happen happened happening last past previous first opening minute minutes min mins hour hours "
    "second seconds around near since joined join came arrived ago start beginning end discuss discussed talk "
    "talked cover covered going went on catch up recap summary summarize anything else pm am a.m p.m o'clock "
    "between from until mark into".split()
) | frozenset(_NUMBER_WORDS)
_ZH_QUESTION_RE = re.compile(r"为什么|为何|什么原因|什么|怎么|吗|呢|说了|讲了|最后|最近|过去"
                             r"|[一二两三四五六七八九十]*分钟")


def topic_of(question: str, *, drop: frozenset[str] = frozenset()) -> str:
    """The subject words of a question, with its question and route words dropped ("the case")."""
    words = re.findall(r"[\w'-]+|[\u4e00-\u9fff]+", _ZH_QUESTION_RE.sub(" ", question.lower()))
    words = [re.sub(r"'s$|s'$", "", w) for w in words]
    kept = [w for w in words if w and w not in _FILLER_TOPIC and w not in drop and not w.isdigit()
            and not re.fullmatch(r"\d+:\d+", w)]
    return " ".join(kept)


def speaker_mention(question: str) -> str | None:
    """Who a question asks about, as it names them ("the project manager", "Priya"), or None."""
    m = _SPEECH_RE.search(question)
    if m is None:
        return None
    who = next((g for g in m.groups() if g), "").strip(" ,?")
    who = re.sub(r"^(?:the|our|your|my)\s+", "", who, flags=re.I)
    if not who or who.lower() in {"we", "you", "they", "i", "people", "everyone", "anyone", "someone", "he",
                                  "she", "it", "that", "this", "the team", "everybody"}:
        return None
    return who


def _after_speaker(question: str, who: str) -> str:
    """The subject of a speaker question: what it asks about after the speaker's verb, and what it names
    before the speaker ("what options did the UI designer put forward?" -> "options")."""
    at = question.lower().find(who.lower())
    rest = question[at + len(who):] if at >= 0 else question
    rest = re.sub(r"^\W*(?:say|said|says|think|thought|mention\w*|propos\w*|suggest\w*|want\w*|put forward|"
                  r"put forth|offer\w*|pitch\w*|come up with|bring up|bring|show\w*|present\w*|recommend\w*)\b",
                  "", rest.strip(), flags=re.I)
    asked = re.match(r"^\W*(?:what|which)\s+(.+?)\s+(?:did|does|has|had|do)\s", question, re.I)
    before = asked.group(1) if asked and at >= 0 and asked.end() <= at + 1 else ""
    return topic_of(f"{before} {rest}".strip())


def classify(question: str, clock: MeetingClock) -> RouteRequest | None:
    """The route a question takes, with its reason; None for a verbatim question (exact words, values)."""
    q = _LEAD_RE.sub("", question.strip())
    span = time_range(q, clock)
    if span is not None and (_HAPPENED_RE.search(q) or not re.search(r"\bwhat time\b|几点", q, re.I)):
        start, end, how = span
        return RouteRequest("time", f"a time question: {how}", start=start, end=end,
                            topic=topic_of(q, drop=_TIME_WORDS))
    if _SINCE_RE.search(q):
        return RouteRequest("time", "a time question (\"since I joined\"), but the join time is unknown (no "
                            "asking device given): the whole meeting is in range; say when, e.g. \"since I "
                            "joined at 10:20\"",
                            start=0.0, end=clock.end, topic=topic_of(q, drop=_TIME_WORDS))
    if _WHY_RE.search(q):
        who = speaker_mention(q) or _why_subject(q)
        return RouteRequest("why", "a why/how question: reasons said around the choice it names",
                            topic=topic_of(q), speaker_mention=who)
    who = speaker_mention(q)
    if who is not None:
        return RouteRequest("speaker", f'a speaker question: what "{who}" said', topic=_after_speaker(q, who),
                            speaker_mention=who)
    if _VALUE_QUESTION_RE.search(q):
        return None  # "by when does Bob owe the quote?" asks for a value: the verbatim path quotes it
    focus = tuple(kind for kind, pattern in (("decision", _DECIDE_RE), ("todo", _PENDING_RE),
                                             ("open_question", _OPEN_Q_RE)) if pattern.search(q))
    if focus:
        topic = topic_of(q)
        if topic:
            return RouteRequest("topic", f'a topic question: {", ".join(focus)} about "{topic}"', topic=topic,
                                focus=focus)
    return None


def _why_subject(question: str) -> str | None:
    """The actor of a why question ("why did marketing want ..." -> "marketing"), if any."""
    m = re.search(r"\b(?:why|how come)\s+(?:did|does|do|was|were|is|would)\s+(?:the\s+)?([\w' ]+?)\s+"
                  r"(?:want|choose|chose|pick|prefer|propose|suggest|decide|insist|push|go|think|say|reject|drop|"
                  r"like|dislike|need)\b", question, re.I)
    if m is None:
        return None
    who = m.group(1).strip()
    return None if who.lower() in {"we", "you", "they", "i", "it", "people", "everyone", "he", "she"} else who
