"""The rule-based ledger: decisions, todos, open questions, facts and glossary of a meeting, with citations.

Pure and deterministic: the same segments give the same items with the same ids, so a rebuild from the log
equals the incremental ledger. Each item cites the segment(s) its words come from, and every value it holds
(owner, task, due, fact value, glossary term) is a verbatim substring of the cited text: rules never
rewrite numbers, names or dates. A later statement that changes an item ("the review moved to Friday",
"改由小王负责") adds a new item and marks the old one `superseded`, naming its replacement; nothing is
overwritten silently.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType

from meetmem.store.records import LEDGER_KINDS, LedgerItem, Segment, Source

from . import ledger_en
from .dates import find_due, resolve_due
from .ledger_rules import ChangeMatch, TodoMatch

_ID_PREFIX = {"decision": "dc_", "todo": "td_", "open_question": "oq_", "fact": "fc_", "glossary": "gl_"}
_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
#: How many following segments may answer a question before it counts as unanswered.
_ANSWER_WINDOW = 2
#: Speaker labels that are diarization ids, not names ("A", "SPEAKER_01", "spk2").
_SPEAKER_ID_RE = re.compile(r"^(?:[A-Za-z]|(?:speaker|spk|s)[_ -]?\d+|\d+)$", re.I)


def extract_ledger(segments: Sequence[Segment], *, meeting_date: dt.date | None = None) -> list[LedgerItem]:
    """The meeting's ledger items, in time order (kinds interleaved as they were said).

    Args:
        segments: the meeting's segments in time order, corrections already applied by the caller.
        meeting_date: the day of the meeting, to resolve due dates ("Friday" -> ISO date); without it
            `due_date` stays None unless the date names its year.

    Returns:
        Items of the kinds in `LEDGER_KINDS`. A superseded item stays, with `superseded_by` set.
    """
    ledger = _Ledger(meeting_date)
    for index in range(len(segments)):
        ledger.read(segments, index)
    return ledger.items


@dataclass
class _Checkpoint:
    seen: list[str]  # the segment ids the checkpoint's reading could see (read ones plus the look-ahead)
    read: int  # how many segments it has read
    meeting_date: dt.date | None
    ledger: _Ledger


class IncrementalLedger:
    """`extract_ledger` for meetings that grow: each call reads only the segments new since the last one.

    A rule looks at most `_ANSWER_WINDOW` segments ahead (is a question answered? does a "by ..." continue
    in the next segment?), so the reading of every segment but the last few is final. The reader's state
    after those is kept per meeting; the next call checks that the segments it saw are still the first
    ones (a late device's earlier segments or a correction would change them, and then it reads from the
    start) and carries on from there. The result always equals `extract_ledger` of the same segments.

    Args:
        meetings: how many meetings' checkpoints to keep (the least recently used go first).
    """

    def __init__(self, *, meetings: int = 64) -> None:
        self._limit = meetings
        self._checkpoints: dict[str, _Checkpoint] = {}

    def __call__(self, segments: Sequence[Segment], *, meeting_date: dt.date | None = None) -> list[LedgerItem]:
        if not segments:
            return []
        key = segments[0].segment_id  # segment ids are unique to their meeting
        ids = [s.segment_id for s in segments]
        point = self._checkpoints.pop(key, None)
        if point is None or point.meeting_date != meeting_date or ids[: len(point.seen)] != point.seen:
            point = _Checkpoint([], 0, meeting_date, _Ledger(meeting_date))
        ledger = point.ledger.copy()
        settled = max(point.read, len(segments) - _ANSWER_WINDOW)
        for index in range(point.read, settled):
            ledger.read(segments, index)
        self._checkpoints[key] = _Checkpoint(ids[: settled + _ANSWER_WINDOW], settled, meeting_date, ledger.copy())
        while len(self._checkpoints) > self._limit:
            del self._checkpoints[next(iter(self._checkpoints))]
        for index in range(settled, len(segments)):
            ledger.read(segments, index)
        return ledger.items


def hotwords(items: Sequence[LedgerItem]) -> list[str]:
    """The glossary's terms (names, products, terms), once each in first-mention order.

    For the edge's Whisper `hotwords`: names and codes are what speech recognition gets wrong most.
    """
    seen: dict[str, None] = {}
    for item in items:
        if item.kind == "glossary" and item.status == "current":
            seen.setdefault(item.text, None)
    return list(seen)


def rules_for(segment: Segment) -> ModuleType:
    """The pattern module for the segment's language (its `lang`, else guessed from its characters)."""
    lang = (segment.lang or "").lower()
    if lang.startswith("zh") or (not lang and _CJK_RE.search(segment.text)):
        from . import ledger_zh  # its patterns compile on first Chinese segment, not on every start

        return ledger_zh
    return ledger_en


def item_id(kind: str, segment_ids: Sequence[str], text: str) -> str:
    """A stable id: the kind's prefix and sha256 over kind, cited segment ids and text (first 12 hex)."""
    key = "\n".join([kind, *segment_ids, text])
    return _ID_PREFIX[kind] + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


#: A todo this soon after a matching one, by the same owner, accepts it rather than adding work.
_CONFIRM_WINDOW_S = 90.0


@dataclass
class _Ledger:
    meeting_date: dt.date | None
    items: list[LedgerItem] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set)
    _terms: set[str] = field(default_factory=set)

    def copy(self) -> _Ledger:
        """An independent copy (items are frozen records, so copying the containers is enough)."""
        return _Ledger(self.meeting_date, list(self.items), set(self._ids), set(self._terms))

    def read(self, segments: Sequence[Segment], index: int) -> None:
        segment = segments[index]
        rules = rules_for(segment)
        text = segment.text
        self._speaker(segment)
        for start, end in rules.sentences(text):
            sentence = text[start:end]
            for (a, b), category in rules.glossary(sentence):
                self._glossary(segment, sentence[a:b], category)
            changed = rules.change(sentence)
            if changed is not None and self._apply_change(segment, sentence, changed, rules):
                continue
            # "Let's keep that as an open question" proposes nothing: it is the question's item, not a decision.
            if rules.decision(sentence) and not rules.open_question(sentence):
                self._add(LedgerItem("", "decision", sentence, Source.of([segment])))
            found = rules.todo(sentence)
            if found is not None:
                self._todo(segments, index, sentence, found, rules)
            if rules.open_question(sentence):
                self._add(LedgerItem("", "open_question", sentence, Source.of([segment])))
            elif rules.asks(sentence):
                answer = self._unanswered(segments, index, rules)
                if answer is not None:
                    self._add(LedgerItem("", "open_question", sentence, Source.of([segment, answer])))
            for fact in rules.facts(sentence):
                what = sentence[fact.what[0]:fact.what[1]] if fact.what else fact.category
                self._fact(segment, sentence, what, sentence[fact.value[0]:fact.value[1]])

    # -- items --------------------------------------------------------------------------------------------
    def _add(self, item: LedgerItem) -> LedgerItem | None:
        # Two facts of one sentence differ by their value only: it is part of what the id covers.
        text = item.text if item.kind != "fact" else item.text + "\n" + (item.value or "")
        new = replace(item, id=item_id(item.kind, item.source.segment_ids, text))
        if new.id in self._ids:
            return None
        self._ids.add(new.id)
        self.items.append(new)
        return new

    def _speaker(self, segment: Segment) -> None:
        name = (segment.speaker or "").strip()
        if len(name) > 1 and not _SPEAKER_ID_RE.match(name) and name in segment.text:
            self._glossary(segment, name, "person")

    def _glossary(self, segment: Segment, term: str, category: str) -> None:
        key = term.casefold()
        if key in self._terms:
            return
        self._terms.add(key)
        self._add(LedgerItem("", "glossary", term, Source.of([segment]), what=category))

    def _todo(self, segments: Sequence[Segment], index: int, sentence: str, found: TodoMatch,
              rules: ModuleType) -> None:
        segment = segments[index]
        owner: str | None = None
        if found.owner_role == "speaker":
            owner = segment.speaker
        elif found.owner_role == "name" and found.owner:
            owner = sentence[found.owner[0]:found.owner[1]]
        elif found.owner_role == "addressee":
            named = rules.addressee(sentence)
            owner = sentence[named[0]:named[1]] if named else None
        task = sentence[found.task[0]:found.task[1]]
        spans = [s for s in find_due(sentence) if not s.kind.endswith("next_week")]
        due = spans[0].text if spans else None
        cited = [segment]
        # A commitment cut off by the segment's end ("I'll send the deck by") continues in the next one.
        if due is None and index + 1 < len(segments) and sentence == segment.text.strip():
            nxt = segments[index + 1]
            if nxt.speaker == segment.speaker and re.search(r"\b(?:by|before|on|until)\s*$|之前$", sentence):
                more = [s for s in find_due(nxt.text) if not s.kind.endswith("next_week")]
                if more and more[0].start < 12:
                    due = more[0].text
                    cited.append(nxt)
        text = sentence if len(cited) == 1 else sentence + " " + cited[1].text.strip()
        due_date = resolve_due(due, self.meeting_date) if due else None
        if spans and due == spans[0].text:
            # "every Thursday" / "每周四" is a recurring duty: said as such, and no single date.
            recurring = re.search(r"(?:\b(?:every|each)\s+|每个?)$", sentence[:spans[0].start], re.I)
            if recurring:
                due = sentence[recurring.start():spans[0].end].strip()
                due_date = None
        item = LedgerItem("", "todo", text, Source.of(cited), owner=owner, task=task, due=due, due_date=due_date)
        if not self._confirms(item, rules):
            self._add(item)

    def _confirms(self, item: LedgerItem, rules: ModuleType) -> bool:
        """Whether a todo only accepts one just asked for ("Bob, could you confirm the shipping cost by
        Tuesday?" / "Sure, I'll confirm the shipping cost by next Tuesday."): then the earlier item cites
        the acceptance too, instead of a second item for the same work."""
        words = rules.content_words(item.task or item.text)
        for at in range(len(self.items) - 1, -1, -1):
            old = self.items[at]
            if old.kind != "todo" or old.status != "current":
                continue
            if item.source.start - old.source.end > _CONFIRM_WINDOW_S:
                return False
            same_owner = old.owner is not None and old.owner == item.owner
            old_words = rules.content_words(old.task or old.text)
            overlap = len(words & old_words) / max(1, min(len(words), len(old_words)))
            if same_owner and overlap >= 0.5 and (item.due is None or old.due is None or item.due == old.due
                                                  or (item.due_date is not None and item.due_date == old.due_date)):
                ids = [*old.source.segment_ids, *(i for i in item.source.segment_ids
                                                  if i not in old.source.segment_ids)]
                source = Source(min(old.source.start, item.source.start), max(old.source.end, item.source.end),
                                tuple(ids))
                self.items[at] = replace(old, source=source, due=old.due or item.due,
                                         due_date=old.due_date or item.due_date)
                return True
        return False

    def _fact(self, segment: Segment, sentence: str, what: str, value: str) -> None:
        new = self._add(LedgerItem("", "fact", sentence, Source.of([segment]), what=what, value=value))
        if new is None or what in ("amount", "quantity", "date", "金额", "数量", "日期"):
            return
        # The same thing given a different value later is a change: the earlier fact is superseded.
        key = what.casefold()
        for i, old in enumerate(self.items[:-1]):
            if (old.kind == "fact" and old.status == "current" and old.what and old.what.casefold() == key
                    and old.value != value and old.source.segment_ids != new.source.segment_ids):
                self.items[i] = replace(old, status="superseded", superseded_by=new.id)

    def _unanswered(self, segments: Sequence[Segment], index: int, rules: ModuleType) -> Segment | None:
        """The reply that leaves the question at `index` open, if the next replies do."""
        asker = segments[index].speaker
        for nxt in segments[index + 1:index + 1 + _ANSWER_WINDOW]:
            if nxt.speaker == asker:
                continue
            return nxt if rules.non_answer(nxt.text) else None
        return None

    # -- supersession -------------------------------------------------------------------------------------
    def _apply_change(self, segment: Segment, sentence: str, changed: ChangeMatch, rules: ModuleType) -> bool:
        kind = changed.kind
        new_span = changed.new
        if kind == "owner":
            old = self._latest(lambda it: it.kind == "todo")
            if old is None:
                return False
            who = sentence[new_span[0]:new_span[1]]
            owner = segment.speaker if who in ("I", "我") else who
            item = replace(old, id="", text=sentence, source=_cite(old, segment), owner=owner)
            return self._supersede(old, item)
        if kind == "due":
            new_due = sentence[new_span[0]:new_span[1]]
            old_span = changed.old
            topic_span = changed.topic
            if old_span is not None:
                old_due = sentence[old_span[0]:old_span[1]]
                old = self._latest(lambda it: (it.kind in ("todo", "fact") and old_due in (it.due or it.value or "")))
            else:
                words = rules.content_words(sentence[topic_span[0]:topic_span[1]]) if topic_span else set()
                old = self._latest(lambda it: it.kind in ("todo", "fact") and bool(it.due or it.what)
                                   and (not words or bool(words & rules.content_words(it.text))))
            if old is None:
                return False
            due_date = resolve_due(new_due, self.meeting_date)
            if old.kind == "todo":
                item = replace(old, id="", text=sentence, source=_cite(old, segment), due=new_due, due_date=due_date)
            else:
                item = replace(old, id="", text=sentence, source=_cite(old, segment), value=new_due)
            return self._supersede(old, item)
        if kind == "decision" and rules.decision(sentence):
            words = rules.content_words(sentence)
            old = self._latest(lambda it: it.kind == "decision" and bool(words & rules.content_words(it.text)))
            if old is None:
                return False
            return self._supersede(old, LedgerItem("", "decision", sentence, Source.of([segment])))
        return False

    def _latest(self, keep: Callable[[LedgerItem], bool]) -> LedgerItem | None:
        for item in reversed(self.items):
            if item.status == "current" and keep(item):
                return item
        return None

    def _supersede(self, old: LedgerItem, item: LedgerItem) -> bool:
        new = self._add(item)
        if new is None:
            return False
        at = self.items.index(old)
        self.items[at] = replace(old, status="superseded", superseded_by=new.id)
        return True


def _cite(old: LedgerItem, segment: Segment) -> Source:
    """The new item's source: the old item's segments (its inherited words) and the changing segment."""
    ids = [*old.source.segment_ids]
    if segment.segment_id not in ids:
        ids.append(segment.segment_id)
    return Source(min(old.source.start, segment.start), max(old.source.end, segment.end), tuple(ids))


assert set(_ID_PREFIX) == set(LEDGER_KINDS)
