"""The plan of an answer: which route a question takes, with what parameters, and why (pure).

`plan(question, context)` reads the question's words (`questions.classify`, `answer_types`) against what
it needs of the meeting: its clock (for "the last 10 minutes", "since I joined", "around 2:15 pm") and
its speakers (for "the project manager", "the UI designer", "Priya"). Both are handed in, and each is read
only when the question needs it (a callable is called at most once), so a plain verbatim question costs no
read of the meeting. Nothing else is consulted: the same question and context always give the same plan,
and `meetmem ask --explain` prints it.

Routes:
- `time`: a stretch of the meeting's clock;
- `topic`: ledger items of a kind (decisions, todos, open questions) about a subject;
- `speaker`: what one speaker said (the mention resolved to a transcript label);
- `why`: the reasons said around a choice;
- `decision`: what the meeting settled ("which board are we ordering?"): the matching decision first, then
  the transcript's own words;
- `overview`: the gist, the decisions, the todos (of a person, when the question names one);
- `verbatim`: the transcript's best sentence for the question (exact words, names, numbers, dates).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .answer_types import (
    ASKS_CHANGE_RE,
    CJK_NAME_RE,
    SPEECH_VERB_RE,
    AnswerKind,
    expected_answer_types,
    question_kind,
)
from .overview import asked_owner, overview_focus
from .questions import MeetingClock, classify, topic_of
from .speakers import SpeakerDirectory

RouteName = Literal["verbatim", "overview", "time", "topic", "speaker", "why", "decision"]

# "Which sensor board are we ordering?", "what casing did we go with?", "what are we doing about the hinge?":
# the meeting settled it, and the answer is the decision, not the first candidate discussed.
_SETTLED_RE = re.compile(
    r"^\s*(?:so\s+|and\s+|ok(?:ay)?,?\s+)?(?:which|what)\b(?P<what>(?:\s+(?!are\b|did\b|do\b|will\b|have\b|were\b)"
    r"[\w'-]+){0,4}?)\s+(?:are|did|do|will|have|were|'re)\s+we\s+(?:going\s+to\s+|gonna\s+|finally\s+)?"
    r"(?:order\w*|buy\w*|purchas\w*|us(?:e|ing)|go(?:ing)?\s+with|go\s+for|went\s+(?:with|for)|"
    r"pick\w*|choos\w*|chose|select\w*|settled?\s+on|settling\s+on|decided?\s+on|agreed?\s+on|"
    r"doing\s+(?:about|with)|do\s+(?:about|with)|ship\w*|launch\w*|build\w*|mak(?:e|ing)|adopt\w*|"
    r"recommend\w*|keep\w*|drop\w*)\b(?P<rest>.*)$"
    r"|(?:我们)?(?:决定|最后|最终)?(?:用|买|订|选)(?:了)?(?:哪个|哪款|哪种|什么)(?P<zh>.*)$",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Plan:
    """How a question will be answered.

    Args:
        route: the route (module docstring).
        reason: why this route, with what was read from the question ("the last 10 minutes", who a role is).
        kind: the answer's kind in the CONTRACT: `overview` for time, topic and overview routes.
        start, end: the stretch of the meeting a time question names (seconds).
        topic: the question's subject words.
        speaker_mention: who the question names, as it names them.
        speaker: the transcript label that mention resolved to.
        focus: the ledger kinds a topic or overview question asks about.
        owner: the person a todo question is about ("what does Priya owe?").
        answer_types: the kinds of value asked for ("when" -> date).
        asks_change: the question asks for a value after a change ("what time was it moved to?").
    """

    route: RouteName
    reason: str
    kind: AnswerKind
    start: float | None = None
    end: float | None = None
    topic: str = ""
    speaker_mention: str | None = None
    speaker: str | None = None
    focus: tuple[str, ...] = field(default_factory=tuple)
    owner: str | None = None
    answer_types: tuple[str, ...] = field(default_factory=tuple)
    asks_change: bool = False

    def params(self) -> dict[str, Any]:
        """The parameters the route uses, as `--explain` shows them (`plan.params`)."""
        out: dict[str, Any] = {}
        for name in ("start", "end", "topic", "speaker_mention", "speaker", "owner"):
            value = getattr(self, name)
            if value not in (None, ""):
                out[name] = value
        if self.focus:
            out["focus"] = list(self.focus)
        if self.answer_types:
            out["answer_types"] = list(self.answer_types)
        if self.asks_change:
            out["asks_change"] = True
        return out


class _Once:
    """A value read at most once: given, or made by a callable on first use."""

    def __init__(self, value: Any) -> None:
        self._value = value
        self._made = not callable(value)

    def get(self) -> Any:
        if not self._made:
            self._value = self._value()
            self._made = True
        return self._value


@dataclass
class QuestionContext:
    """What a plan may read of the meeting, each read only when a question needs it.

    Args:
        clock: the meeting's clock, or a callable that reads it.
        speakers: the meeting's speaker directory (labels, names, roles), or a callable that builds it.
        labels: the transcript's speaker labels (cheaper than the directory), or a callable that reads them;
            without them, the directory's.
        routed: route questions (off: only `verbatim` and `overview`, the benchmarks' baseline).
        filtered: the caller fixed a time range or a speaker: the question is answered inside it, unrouted.
    """

    clock: MeetingClock | Callable[[], MeetingClock]
    speakers: SpeakerDirectory | Callable[[], SpeakerDirectory] | None = None
    labels: Sequence[str] | Callable[[], Sequence[str]] | None = None
    routed: bool = True
    filtered: bool = False

    def __post_init__(self) -> None:
        self._clock = _Once(self.clock)
        self._speakers = _Once(self.speakers)
        self._labels = _Once(self.labels)

    def read_clock(self) -> MeetingClock:
        return self._clock.get()

    def read_speakers(self) -> SpeakerDirectory:
        found = self._speakers.get()
        return found if found is not None else SpeakerDirectory([])

    def read_labels(self) -> Sequence[str]:
        found = self._labels.get()
        return found if found is not None else self.read_speakers().labels


class _LazyClock:
    """A `MeetingClock` whose fields are read on first use (`classify` reads them only for a time question)."""

    def __init__(self, context: QuestionContext) -> None:
        self._context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context.read_clock(), name)


def plan(question: str, context: QuestionContext) -> Plan:
    """The plan for one question (pure: the question and the context decide it)."""
    q = question.strip()
    kind = question_kind(q)
    common: dict[str, Any] = {"answer_types": tuple(expected_answer_types(q)),
                              "asks_change": bool(ASKS_CHANGE_RE.search(q))}
    if context.routed and not context.filtered:
        routed = _routed(q, context, common)
        if routed is not None:
            return routed
    if kind == "overview":
        owner = asked_owner(q)
        focus = tuple(overview_focus(q))
        reason = ("an overview question (decisions, todos, the gist) naming no topic, time or speaker"
                  + (f"; the todos of {owner}" if owner and "todo" in focus else ""))
        return Plan("overview", reason, "overview", focus=focus, owner=owner, **common)
    if context.filtered:
        reason = "the caller fixed the time range or speaker: the transcript's best sentence inside it"
        return Plan("verbatim", reason, "verbatim", **common)
    quoted = _quoted_speaker(q, context) if SPEECH_VERB_RE.search(q) else None
    if quoted is not None:
        return Plan("verbatim", f'exact words asked for; "{quoted}" is a speaker of the meeting: their turns '
                    "first", "verbatim", speaker_mention=quoted, speaker=quoted, **common)
    return Plan("verbatim", "no time range, topic, speaker or why asked for: the transcript's own best sentence",
                "verbatim", **common)


def _routed(q: str, context: QuestionContext, common: dict[str, Any]) -> Plan | None:
    request = classify(q, _LazyClock(context))  # type: ignore[arg-type]
    if request is not None:
        if request.route == "time":
            return Plan("time", request.reason, "overview", start=request.start, end=request.end,
                        topic=request.topic, **common)
        if request.route == "topic":
            owner = asked_owner(q)
            if "todo" in request.focus and owner is not None:
                return Plan("overview", f"a todo question about a person: the todos of {owner}", "overview",
                            focus=tuple(overview_focus(q)), owner=owner, **common)
            return Plan("topic", request.reason, "overview", topic=request.topic, focus=request.focus, **common)
        mention = request.speaker_mention
        resolved = context.read_speakers().resolve(mention) if mention else None
        if request.route == "speaker":
            if resolved is not None:
                return Plan("speaker", f"{request.reason}; {resolved[1]}", "verbatim", topic=request.topic,
                            speaker_mention=mention, speaker=resolved[0], **common)
        elif request.route == "why":
            reason = request.reason + (f"; {resolved[1]}" if resolved else "")
            return Plan("why", reason, "verbatim", topic=request.topic, speaker_mention=mention,
                        speaker=resolved[0] if resolved else None, **common)
    settled = settled_subject(q)
    if settled is not None:
        return Plan("decision", f'asks what the meeting settled about "{settled}": the matching decision first, '
                    "then the transcript's words", "verbatim", topic=settled, **common)
    return None


def settled_subject(question: str) -> str | None:
    """The subject of a question about what the meeting settled ("which sensor board are we ordering?" ->
    "sensor board"), or None when the question is not one."""
    m = _SETTLED_RE.search(question.strip())
    if m is None:
        return None
    said = " ".join(g for g in (m.group("what"), m.group("rest"), m.group("zh")) if g)
    subject = topic_of(said)
    return subject or None


def _quoted_speaker(question: str, context: QuestionContext) -> str | None:
    """The meeting speaker whose words the question asks for (the longest label wins: "Chen Wei" over
    "Chen"); their best turns come first, the meeting's best stay among the candidates."""
    for name in sorted({s for s in context.read_labels() if s and len(s) > 1}, key=len, reverse=True):
        if CJK_NAME_RE.search(name):
            if name in question:
                return name
        elif re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question, re.IGNORECASE):
            return name
    return None
