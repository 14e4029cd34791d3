"""Overview answers ("what did we decide?", "what's pending?", "what was this about?") from the ledger and L2.

The ledger and the summaries are made in the background from the log; an overview question reads what is
stored and never waits for them. Each item cited points back to the transcript: the answer's citations are
the segments the items were read from, verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from meetmem.store.records import LedgerItem, MeetingDigest, Segment, SummaryLine
from meetmem.store.timecode import format_time

from .tokens import count_tokens

_FOCUS = (
    ("decision", re.compile(r"\b(decid\w*|decisions?|agree[ds]?|agreement|settled|conclu\w+)\b"
                            r"|决定|决策|定了|结论|共识", re.I)),
    ("todo", re.compile(r"\b(action items?|to-?dos?|tasks?|pending|outstanding|owes?|next steps|follow[- ]ups?|"
                        r"who (?:is|'s) doing|responsib\w+|assigned)\b|待办|任务|行动项|负责|要做|跟进", re.I)),
    ("open_question", re.compile(r"\b(open questions?|unresolved|undecided|still open|tbd)\b"
                                 r"|还有哪些问题|待定|悬而未决", re.I)),
)
_OWNER_RE = re.compile(r"\b(?:does|do|did|will|should|is|has)\s+([A-Z][a-z]+)\b|([A-Z][a-z]+)(?:'s| owes)\b")
_TITLES = {"decision": "Decisions", "todo": "To do", "open_question": "Open questions"}
_MAX_ITEMS = 10


def overview_focus(question: str) -> list[str]:
    """Which parts of the ledger an overview question asks about; empty means the gist (L2)."""
    return [kind for kind, pattern in _FOCUS if pattern.search(question)]


def _item_line(item: LedgerItem, replaced: Mapping[str, LedgerItem]) -> str:
    when = format_time(item.source.start)
    if item.kind == "todo":
        who = item.owner or "someone"
        due = f", due {item.due}" + (f" ({item.due_date})" if item.due_date else "") if item.due else ""
        line = f"- {who}: {item.task or item.text}{due} ({when})"
    else:
        line = f"- {item.text} ({when})"
    old = replaced.get(item.id)
    if old is not None:
        line += f"; this changed what was said at {format_time(old.source.start)}"
    return line


def overview_answer(
    question: str,
    digest: MeetingDigest | None,
    segments: Callable[[list[str]], Mapping[str, Segment]],
    *,
    focus: Sequence[str] | None = None,
    owner: str | None = None,
) -> tuple[str, list[Segment], list[tuple[str, int, str]]] | None:
    """The overview answer's text, cited segments and manifest blocks, or None when the digest cannot
    answer (nothing made yet, or nothing of the kind asked for), so the caller falls back to retrieval.

    Args:
        question: the question, already classified as an overview question.
        digest: the meeting's stored digest.
        segments: looks up stored segments by id (the citations' verbatim text).
        focus: the ledger kinds asked about (`overview_focus`, read from the question when not given).
        owner: the person a todo question is about (`asked_owner`, read from the question when not given).
    """
    if digest is None:
        return None
    focus = list(overview_focus(question) if focus is None else focus)
    current = [item for item in digest.ledger if item.status == "current"]
    replaced = {item.superseded_by: item for item in digest.ledger if item.superseded_by}
    blocks: list[tuple[str, int, str]] = []
    parts: list[str] = []
    cited: list[str] = []
    if focus:
        owner = asked_owner(question) if owner is None else owner
        for kind in focus:
            items = [i for i in current if i.kind == kind]
            if kind == "todo" and owner is not None:
                items = [i for i in items if i.owner and i.owner.casefold() == owner.casefold()] or items
            items = _about(question, items) or items
            if not items:
                continue
            lines = [_item_line(i, replaced) for i in items[:_MAX_ITEMS]]
            text = f"{_TITLES[kind]}:\n" + "\n".join(lines)
            parts.append(text)
            blocks.append((f"ledger: {_TITLES[kind].lower()} ({len(items)} current)", count_tokens(text), "pinned"))
            cited.extend(i.source.segment_ids[0] for i in items[:_MAX_ITEMS] if i.source.segment_ids)
    else:
        if not digest.l2:
            return None
        text = "In short:\n" + "\n".join(f"- {line.text} ({format_time(line.source.start)})" for line in digest.l2)
        parts.append(text)
        blocks.append(("summary: L2", count_tokens(text), "pinned"))
        cited.extend(_first_ids(digest.l2))
        decisions = [i for i in current if i.kind == "decision"]
        if decisions:
            text = "Decisions:\n" + "\n".join(_item_line(i, replaced) for i in decisions[:_MAX_ITEMS])
            parts.append(text)
            blocks.append((f"ledger: decisions ({len(decisions)} current)", count_tokens(text), "pinned"))
            cited.extend(i.source.segment_ids[0] for i in decisions[:_MAX_ITEMS])
    if not parts:
        return None
    if not digest.final and digest.open_from is not None:
        note = f"(The meeting is still going; the part since {format_time(digest.open_from)} is not summarized yet.)"
        parts.append(note)
    ordered = list(dict.fromkeys(cited))
    found = segments(ordered)
    cited_segments = [found[sid] for sid in ordered if sid in found]
    return "\n\n".join(parts), cited_segments, blocks


_WORD_RE = re.compile(r"[a-z0-9$][\w$,.-]*[a-z0-9]|[a-z0-9]", re.I)
_QUESTION_WORDS = frozenset(
    "what which who whom when where why how did do does we i you they the a an and or of for on about to in is are "
    "was were be been decide decided decision decisions agree agreed pending todo todos task tasks owe owes action "
    "item items next steps open question questions still left follow up regarding with any have has there".split()
)


def _about(question: str, items: list[LedgerItem]) -> list[LedgerItem]:
    """The items that share a subject word with the question ("what did we decide about the casing?")."""
    asked = {w.casefold()[:5] for w in _WORD_RE.findall(question) if w.casefold() not in _QUESTION_WORDS}
    if not asked:
        return []
    return [i for i in items if asked & {w.casefold()[:5] for w in _WORD_RE.findall(i.text)}]


def asked_owner(question: str) -> str | None:
    """The person a todo question is about ("what does Priya owe?"), if it names one."""
    match = _OWNER_RE.search(question)
    if match is None:
        return None
    name = match.group(1) or match.group(2)
    return None if name in {"What", "Who", "We", "I", "You", "The"} else name


def _first_ids(lines: tuple[SummaryLine, ...]) -> list[str]:
    return [line.source.segment_ids[0] for line in lines if line.source.segment_ids]

