"""English ledger rules: decisions, commitments, open questions, facts, names and changes in meeting talk.

The patterns (in `ledger_en_patterns`) are ordinary English meeting phrasing ("we'll go with", "I'll send",
"can you ... by Friday", "we still need to figure out"), not phrases of any one corpus; the matchers here
apply them. Precision first: a sentence that only discusses an option ("we could use rubber") is not a
decision, and a question is only an open question when it is flagged as open or nobody answers it.
"""

from __future__ import annotations

import re

from .dates import find_due
from .ledger_en_patterns import (
    CHANGE_RES,
    DECISION_BLOCK,
    DECISION_RES,
    EVENT_WORDS,
    MONEY_RE,
    NAME,
    NON_ANSWER_RE,
    NOT_NAMES,
    NOT_TERMS,
    OPEN_RES,
    PERSON_RES,
    PRODUCT_RES,
    QUANTITY_RE,
    QUESTION_RE,
    SENTENCE_RE,
    STOPWORDS,
    TERM_RE,
    TERM_STOP,
    TIME_RE,
    TODO_BLOCK,
    TODO_RES,
    WHAT_RE,
    WORD_RE,
)
from .ledger_rules import ChangeMatch, FactMatch, Span, TodoMatch

lang = "en"


def _is_name_like(term: str) -> bool:
    """A name, product or term: every word capitalised (or an acronym), and not a function word."""
    words = term.split()
    if not words or any(not w[0].isupper() for w in words):
        return False
    return not any(w.casefold().strip("'") in NOT_TERMS for w in words)


def sentences(text: str) -> list[Span]:
    """Spans of the sentences of an utterance, trimmed of surrounding spaces."""
    out = []
    for m in SENTENCE_RE.finditer(text):
        start, end = m.start(), m.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def decision(sentence: str) -> bool:
    """Whether the sentence states a decision (and does not merely float one)."""
    if len(WORD_RE.findall(sentence)) < 5 or not any(p.search(sentence) for p in DECISION_RES):
        return False
    return DECISION_BLOCK.search(sentence) is None


def todo(sentence: str) -> TodoMatch | None:
    """The commitment in the sentence, if any: who takes it and the task as said."""
    if TODO_BLOCK.search(sentence):
        return None
    for role, pattern in TODO_RES:
        m = pattern.search(sentence)
        if m is None:
            continue
        task = _trim_task(sentence, m.start("task"), m.end("task"))
        if task is None:
            continue
        if role == "name":
            who = m.group("who")
            first = who.split()[-1] if who.lower().startswith("the ") else who.split()[0]
            if first in NOT_NAMES:
                continue
            return TodoMatch("name", task, (m.start("who"), m.end("who")))
        if role == "speaker":
            return TodoMatch("speaker", task)
        return TodoMatch(role if role != "action" else "group", task)
    return None


def _trim_task(sentence: str, start: int, end: int) -> Span | None:
    """The task without trailing punctuation and without a trailing due phrase ("by Friday")."""
    while end > start and not sentence[end - 1].isalnum():
        end -= 1
    for span in find_due(sentence[start:end]):
        cut = start + span.start
        before = sentence[start:cut].rstrip()
        before = re.sub(r"\s*(?:by|before|on|until|till|no\s+later\s+than|for|every|each)$", "", before, flags=re.I)
        if len(before.split()) >= 2:
            end = start + len(before)
            break
    while end > start and not sentence[end - 1].isalnum():
        end -= 1
    if len(sentence[start:end].split()) < 2:
        return None
    return (start, end)


def open_question(sentence: str) -> bool:
    """A sentence that flags something as still open."""
    return any(p.search(sentence) for p in OPEN_RES)


def asks(sentence: str) -> bool:
    """A real question to the group (a wh- or "should we" question with some substance)."""
    return QUESTION_RE.search(sentence) is not None


def non_answer(text: str) -> bool:
    """A reply that leaves a question open ("I don't know", "good question")."""
    return NON_ANSWER_RE.search(text) is not None


def facts(sentence: str) -> list[FactMatch]:
    """Amounts of money, quantities, and the dates or times of named events, each with what it is about."""
    out: list[FactMatch] = []
    taken: list[Span] = []

    def add(start: int, end: int, category: str) -> None:
        while end > start and sentence[end - 1] in " -,":
            end -= 1
        if any(start < b and a < end for a, b in taken):
            return
        taken.append((start, end))
        m = WHAT_RE.search(sentence[:start])
        what = (m.start("what"), m.end("what")) if m else None
        out.append(FactMatch((start, end), what, category))

    for m in MONEY_RE.finditer(sentence):
        add(m.start(), m.end(), "amount")
    for m in QUANTITY_RE.finditer(sentence):
        if m.group(0).strip().lower() in ("half", "a half"):
            continue
        add(m.start(), m.end(), "quantity")
    if EVENT_WORDS.search(sentence):
        times = list(TIME_RE.finditer(sentence))
        for span in find_due(sentence):
            if span.kind.endswith("next_week"):
                continue
            end = span.end
            # "March 3rd at 10am": the day and the time are one value.
            after = re.match(r"\s*(?:at\s+)?", sentence[end:])
            joined = next((t for t in times if t.start() == end + (after.end() if after else 0)), None)
            add(span.start, joined.end() if joined else end, "date")
        for m in times:
            add(m.start(), m.end(), "date")
    # A date or time is a fact only when it says when an event is (its "what" names the event).
    return [f for f in out if f.category != "date" or (f.what and EVENT_WORDS.search(sentence[f.what[0]:f.what[1]]))]


def glossary(sentence: str) -> list[tuple[Span, str]]:
    """Names of people, products and terms mentioned, with their category (person, product, term)."""
    out: list[tuple[Span, str]] = []
    for pattern in PRODUCT_RES:
        for m in pattern.finditer(sentence):
            if not _is_name_like(m.group("term")):
                continue
            out.append(((m.start("term"), m.end("term")), "product"))
    for pattern in PERSON_RES:
        for m in pattern.finditer(sentence):
            name = m.group("term")
            if not _is_name_like(name):
                continue
            out.append(((m.start("term"), m.end("term")), "person"))
    for m in TERM_RE.finditer(sentence):
        if m.group("term").rstrip("s") in TERM_STOP or m.group("term") in TERM_STOP:
            continue
        out.append(((m.start("term"), m.end("term")), "term"))
    return out


def addressee(sentence: str) -> Span | None:
    """The person spoken to, when named ("Priya, can you ...", "... by Friday, Priya?")."""
    m = re.match(rf"^(?:(?:okay|ok|so|right|and|um|uh)\W+)*(?P<name>{NAME}),", sentence, re.I)
    if m and _is_name_like(m.group("name")):
        return (m.start("name"), m.end("name"))
    m = re.search(rf",\s+(?P<name>{NAME})\s*[?.!]?\s*$", sentence)
    if m and _is_name_like(m.group("name")):
        return (m.start("name"), m.end("name"))
    return None


def change(sentence: str) -> ChangeMatch | None:
    """A statement that changes an earlier item: who now owns it, or the new date."""
    for kind, pattern in CHANGE_RES:
        m = pattern.search(sentence)
        if m is None:
            continue
        if kind == "owner":
            if m.group("new").split()[0] in NOT_NAMES and m.group("new") != "I":
                continue
            return ChangeMatch("owner", (m.start("new"), m.end("new")))
        if kind == "due":
            new = _first_due(sentence, m.start("new"), m.end("new"))
            if new is None:
                continue
            old = None
            if "old" in pattern.groupindex:
                old = _first_due(sentence, m.start("old"), m.end("old"))
                if old is None:
                    continue
            topic = None
            if "topic" in pattern.groupindex and m.group("topic"):
                topic = (m.start("topic"), m.end("topic"))
            return ChangeMatch("due", new, old, topic)
        return ChangeMatch("decision", None)
    return None


def _first_due(sentence: str, start: int, end: int) -> Span | None:
    spans = find_due(sentence[start:end])
    if not spans:
        return None
    return (start + spans[0].start, start + spans[0].end)


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry the topic, for linking a change to the item it changes."""
    return {w.lower().rstrip("s") for w in WORD_RE.findall(text) if w.lower() not in STOPWORDS and len(w) > 2}
