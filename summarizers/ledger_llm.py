"""The optional LLM ledger pass: a chat model proposes items, the transcript vets each one, the rules stay.

The rules (`ledger.extract_ledger`) always run; a model then reads the meeting in chunks of consecutive
segments and proposes decisions, todos, open questions and facts, each citing the numbered segments it rests
on. An item is kept only when it cites segments of its chunk and every number, date and name its text,
owner, task, due and value state occurs in those segments (`validation.check_line`, as for the summaries);
an owner must be named in the cited text or be the cited segment's speaker. The model never sets a due
date: `due_date` is resolved from the words as said (`dates.resolve_due`). Anything else is dropped with a
note saying why. Kept items are added beside the rules' items (a rules item of the same kind citing an
overlapping segment wins), so the rules' ledger and its supersession marks are never changed.

The prompt follows `llm`: the stable instructions alone in the system message (identical for every chunk
and call, so a server's prompt cache can reuse it), the numbered segments only in the last message.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from meetmem.store.records import LedgerItem, Segment, Source

from .dates import resolve_due
from .errors import SummarizerError
from .ledger import IncrementalLedger, item_id
from .llm.chat import ChatModel, snippet
from .summary_llm import FENCE_RE, numbered_segments, prompt_clock
from .validation import check_line

logger = logging.getLogger(__name__)

#: The kinds a model may propose; the glossary stays with the rules (names are what models get wrong).
LLM_KINDS = ("decision", "todo", "open_question", "fact")
#: The fields of an item the model writes, beside `kind` and `cite`.
_TEXT_FIELDS = ("text", "owner", "task", "due", "what", "value")
#: Which fields each kind keeps (the others are dropped, as `LedgerItem.public` would hide them).
_KIND_FIELDS = {"decision": (), "todo": ("owner", "task", "due"), "open_question": (), "fact": ("what", "value")}
#: Fields whose numbers, dates and names must occur in the cited segments (`what` is a label, not a claim).
_CHECKED_FIELDS = ("text", "task", "owner", "due", "value")
#: Words counted for a chunk's size: an ASCII word or number, or one CJK character.
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['.,-][A-Za-z0-9]+)*|[\u3400-\u4dbf\u4e00-\u9fff]")
_DIGIT_RE = re.compile(r"\d")
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_CAPITALISED_RE = re.compile(r"(?<![A-Za-z])[A-Z]")
#: How many chunks' replies are remembered, so a live meeting re-asks only the chunk that changed.
_CACHE_CHUNKS = 256

LEDGER_INSTRUCTIONS = (
    "You extract the ledger of a meeting from part of its transcript. The user message holds consecutive "
    "segments, each numbered as [n] (MM:SS, speaker) text.\n"
    'List what the segments state: decisions made (kind "decision"), tasks someone takes on or is given '
    '("todo"), questions raised and left open ("open_question"), and facts stated such as amounts, '
    'quantities, prices and dates ("fact"). For a todo give "owner" (the person\'s name as the transcript '
    "says it, or the speaker's label when the speaker takes the task on), \"task\" (what is to be done) and "
    '"due" (the deadline exactly as said, null when none). For a fact give "what" (what it is about) and '
    '"value". Leave a field null when it does not apply.\n'
    "Copy every name, number, amount, date and time exactly as the transcript says it; never infer, round, "
    'convert or resolve one (write "Friday", not a calendar date), and state nothing the cited segments do '
    "not say. Write in the transcript's language. An empty list is a good answer when nothing qualifies.\n"
    'Answer with JSON only, in this shape: {"items": [{"kind": "todo", "text": "...", "owner": "...", '
    '"task": "...", "due": "...", "what": null, "value": null, "cite": [1]}]}. "cite" lists the numbers of '
    "the segments each item rests on; every item cites at least one."
)


class _Rejected(Exception):
    """A chunk's reply or one of its items cannot be used; the message is the note's reason."""


@dataclass(frozen=True, slots=True)
class _Chunk:
    """Consecutive segments sent in one request, and the request's user message."""

    segments: tuple[Segment, ...]
    numbered: str

    @property
    def where(self) -> str:
        return f"{prompt_clock(self.segments[0].start)}-{prompt_clock(self.segments[-1].end)}"


class LLMLedger:
    """The rules' ledger plus the items a chat model finds that the rules missed, each vetted.

    Also a ledger extractor for `MeetingDigester(extract_ledger=...)`: calling it runs the rules and the
    model pass and returns the merged ledger.

    Args:
        chat: the model (`OpenAIChat` for a server; anything with `complete(messages)`).
        chunk_words: about how many words (a CJK character counts as one) go into one request; a chunk
            holds whole consecutive segments, so a longer segment makes a chunk of its own.
        max_items: items read from one chunk's reply, at most (the rest are dropped with a note).

    Attributes:
        last_notes: why items (or whole chunks) were rejected on the last call, for the caller to show.
    """

    name = "llm"

    def __init__(self, chat: ChatModel, *, chunk_words: int = 1500, max_items: int = 40) -> None:
        if chunk_words < 1:
            raise ValueError("chunk_words must be at least 1")
        self.chat = chat
        self.chunk_words = chunk_words
        self.max_items = max_items
        self.last_notes: list[str] = []
        self._rules = IncrementalLedger()
        # Replies by the exact request: chunks are cut from the meeting's start, so as a live meeting grows
        # only its last chunk changes and only that one is asked again.
        self._replies: OrderedDict[str, str] = OrderedDict()
        self._replies_lock = threading.Lock()

    def __call__(self, segments: Sequence[Segment], *, meeting_date: dt.date | None = None) -> list[LedgerItem]:
        """The merged ledger of `segments` (rules first, then vetted model items); notes go to `last_notes`."""
        rules = self._rules(segments, meeting_date=meeting_date)
        items, notes = self.extract(segments, meeting_date=meeting_date, rules=rules)
        self.last_notes = notes
        return items

    def extract(
        self, segments: Sequence[Segment], *, meeting_date: dt.date | None, rules: list[LedgerItem]
    ) -> tuple[list[LedgerItem], list[str]]:
        """The rules' items with the model's vetted items added, and a note for each rejection.

        Args:
            segments: the meeting's segments in time order.
            meeting_date: the meeting's day, to resolve a kept todo's `due` into `due_date`.
            rules: the rules' ledger of the same segments (`extract_ledger`); returned unchanged, in order,
                within the merged list.

        Returns:
            The merged items in time order, and the notes. When the model cannot be asked (`ChatError`)
            the rules' items alone, with one note saying why.
        """
        notes: list[str] = []
        proposed: list[LedgerItem] = []
        for chunk in self._chunks(segments):
            try:
                reply, fresh = self._ask(chunk)
            except SummarizerError as exc:
                note = f"llm ledger not used: the llm call failed: {exc}"
                logger.warning("%s; keeping the rules' ledger", note)
                return list(rules), [note]
            items, rejected = self._read(chunk, reply, meeting_date)
            proposed.extend(items)
            notes.extend(rejected)
            # A remembered reply's rejections were logged when it came; a live meeting re-reads them often.
            for note in rejected:
                logger.log(logging.WARNING if fresh else logging.DEBUG, "%s", note)
        return _merge(rules, proposed), notes

    def _read(self, chunk: _Chunk, reply: str, meeting_date: dt.date | None) -> tuple[list[LedgerItem], list[str]]:
        """The vetted items of one chunk's reply, and a note for each one rejected (or for the whole reply)."""
        try:
            drafts = _parse_reply(reply)
        except _Rejected as exc:
            return [], [f"llm ledger chunk {chunk.where} rejected: {exc}"]
        notes: list[str] = []
        if len(drafts) > self.max_items:
            notes.append(f"llm ledger chunk {chunk.where}: {len(drafts)} items, only the first {self.max_items} "
                         "read")
            drafts = drafts[: self.max_items]
        items: list[LedgerItem] = []
        for number, draft in enumerate(drafts, 1):
            try:
                items.append(_vetted(draft, chunk, meeting_date))
            except _Rejected as exc:
                notes.append(f"llm ledger item {number} of chunk {chunk.where} rejected: {exc}")
        return items, notes

    # -- requests -----------------------------------------------------------------------------------------
    def _chunks(self, segments: Sequence[Segment]) -> list[_Chunk]:
        """Consecutive segments of about `chunk_words` words each, cut greedily from the first segment."""
        groups: list[list[Segment]] = []
        size = 0
        for segment in segments:
            words = len(_WORD_RE.findall(segment.text))
            if not groups or (size + words > self.chunk_words and groups[-1]):
                groups.append([])
                size = 0
            groups[-1].append(segment)
            size += words
        return [_Chunk(tuple(group), numbered_segments(group)) for group in groups if group]

    def _ask(self, chunk: _Chunk) -> tuple[str, bool]:
        """The model's reply to the chunk, and whether it is fresh (else remembered from an earlier call)."""
        messages = [
            {"role": "system", "content": LEDGER_INSTRUCTIONS},
            {"role": "user", "content": chunk.numbered},
        ]
        key = hashlib.sha256(chunk.numbered.encode("utf-8")).hexdigest()
        with self._replies_lock:
            if key in self._replies:
                self._replies.move_to_end(key)
                return self._replies[key], False
        reply = self.chat.complete(messages)
        logger.debug("llm ledger reply: %s prompt tokens, %s completion tokens", reply.prompt_tokens,
                     reply.completion_tokens)
        with self._replies_lock:
            self._replies[key] = reply.text
            while len(self._replies) > _CACHE_CHUNKS:
                self._replies.popitem(last=False)
        return reply.text, True


# -- the model's answer -----------------------------------------------------------------------------------
def _parse_reply(text: str) -> list[Any]:
    """The raw items of a reply `{"items": [...]}`, tolerating a code fence or a sentence around the JSON."""
    fenced = FENCE_RE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise _Rejected(f"the reply is not JSON: {snippet(text, 120)!r}")
    try:
        data = json.loads(body[start: end + 1])
    except json.JSONDecodeError as exc:
        raise _Rejected(f"the reply is not valid JSON ({exc.msg}): {snippet(text, 120)!r}") from exc
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise _Rejected('the reply has no "items" list')
    return items


def _vetted(draft: Any, chunk: _Chunk, meeting_date: dt.date | None) -> LedgerItem:
    """The draft as a ledger item citing its chunk's segments, or `_Rejected` saying why it cannot be one."""
    if not isinstance(draft, dict):
        raise _Rejected(f"is {snippet(json.dumps(draft, ensure_ascii=False), 60)}, not an object")
    kind = draft.get("kind")
    if kind not in LLM_KINDS:
        raise _Rejected(f"has kind {kind!r}, not one of {', '.join(LLM_KINDS)}")
    fields = {name: _field(draft, name) for name in _TEXT_FIELDS}
    text = fields["text"]
    if not text:
        raise _Rejected("has no text")
    cited = _cited(draft, chunk)
    # What the model was shown of each cited segment: its words and its speaker ("Alice will send ..." for
    # Alice's "I'll send ..."). A diarization id ("SPEAKER_01") is left out: its digits are no evidence.
    shown = [
        " \n".join(t for t in (s.speaker if s.speaker and not _DIGIT_RE.search(s.speaker) else None,
                               s.text, s.raw_text) if t)
        for s in cited
    ]
    owner = fields["owner"] if kind == "todo" else None
    for name in ("text", *_KIND_FIELDS[kind]):
        if name in _CHECKED_FIELDS and fields[name] and not (name == "owner" and _is_speaker(owner, cited)):
            reason = check_line(fields[name], shown)
            if reason:
                raise _Rejected(f"{_label(name)}{reason}")
    if owner and not (_is_speaker(owner, cited) or _is_named(owner, cited)):
        raise _Rejected(f"names owner {owner!r}, who is neither a name in its cited segments nor their speaker")
    due = fields["due"] if kind == "todo" else None
    source = Source.of(sorted(cited, key=lambda s: (s.start, s.end)))
    value = fields["value"] if kind == "fact" else None
    # As in the rules' ledger: two facts of one sentence differ by their value, so the id covers it.
    id_text = text if kind != "fact" else text + "\n" + (value or "")
    return LedgerItem(
        item_id(kind, source.segment_ids, id_text), kind, text, source,
        owner=owner,
        task=fields["task"] if kind == "todo" else None,
        due=due,
        due_date=resolve_due(due, meeting_date) if due else None,
        what=fields["what"] if kind == "fact" else None,
        value=value,
        origin="llm",
    )


def _field(draft: dict[str, Any], name: str) -> str | None:
    """A text field, whitespace collapsed; a bare number becomes its digits; empty or null is None."""
    value = draft.get(name)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _Rejected(f"has {name} {snippet(json.dumps(value, ensure_ascii=False), 60)}, not a string")
    return " ".join(value.split()) or None


def _cited(draft: dict[str, Any], chunk: _Chunk) -> list[Segment]:
    """The chunk's segments the draft cites (1-based numbers), each once, or `_Rejected`."""
    cite = draft.get("cite", draft.get("cites"))
    if isinstance(cite, int) and not isinstance(cite, bool):
        cite = [cite]
    if not isinstance(cite, list) or not cite:
        raise _Rejected("cites no segment")
    numbers: list[int] = []
    for value in cite:
        if isinstance(value, str) and value.strip().strip("[]").isdigit():
            value = int(value.strip().strip("[]"))
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Rejected(f"cites {value!r}, not a segment number")
        if not 1 <= value <= len(chunk.segments):
            raise _Rejected(f"cites [{value}] but it was given {len(chunk.segments)} numbered segments")
        if value not in numbers:
            numbers.append(value)
    return [chunk.segments[n - 1] for n in numbers]


def _is_speaker(owner: str | None, cited: Sequence[Segment]) -> bool:
    """Whether `owner` is the speaker of a cited segment (one who takes a task on names no one)."""
    key = (owner or "").strip().casefold()
    return bool(key) and any(s.speaker and s.speaker.strip().casefold() == key for s in cited)


def _is_named(owner: str, cited: Sequence[Segment]) -> bool:
    """Whether `owner` is a name (capitalised, or in Chinese) that occurs in the cited segments' words."""
    if not (_CJK_RE.search(owner) or _CAPITALISED_RE.search(owner)):
        return False  # "legal", "everyone": not a person the todo can be asked of
    key = owner.casefold()
    return any(key in text.casefold() for s in cited for text in (s.text, s.raw_text) if text)


def _label(name: str) -> str:
    return "" if name == "text" else f"{name} "


# -- merging ----------------------------------------------------------------------------------------------
def _merge(rules: Sequence[LedgerItem], proposed: Sequence[LedgerItem]) -> list[LedgerItem]:
    """The rules' items, in their order, with the new model items placed among them by start time.

    A model item is a duplicate, and dropped, when a rules item of its kind cites one of its segments, or
    when an earlier model item has its id.
    """
    cited_by_kind: dict[str, set[str]] = {}
    for item in rules:
        cited_by_kind.setdefault(item.kind, set()).update(item.source.segment_ids)
    seen = {item.id for item in rules}
    added: list[LedgerItem] = []
    for item in proposed:
        if item.id in seen or cited_by_kind.get(item.kind, set()) & set(item.source.segment_ids):
            logger.debug("llm ledger %s %r duplicates a rules item", item.kind, item.text)
            continue
        seen.add(item.id)
        added.append(item)
    added.sort(key=lambda it: (it.source.start, it.source.end))
    # A merge, not a sort of the whole: a rules item that supersedes another may start before the items
    # listed between them, and the rules' own order must survive.
    merged: list[LedgerItem] = []
    at = 0
    for item in rules:
        while at < len(added) and added[at].source.start < item.source.start:
            merged.append(added[at])
            at += 1
        merged.append(item)
    merged.extend(added[at:])
    return merged
