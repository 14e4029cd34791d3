"""What a language's ledger rules provide to `meetmem.summarizers.ledger`: matches with character spans.

Every value a rule returns is a span `[start, end)` of the sentence it was given, so the ledger can only
ever copy words as said: rules never rewrite numbers, names or dates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class TodoMatch:
    """A commitment: who (`owner_role`: `speaker` for "I", `addressee` for "you", `name`, `group`), what."""

    owner_role: str
    task: Span
    owner: Span | None = None  # the owner's name as said, when `owner_role` is `name`


@dataclass(frozen=True, slots=True)
class FactMatch:
    """An amount, quantity or the date/time of an event: `what` (a span, or a category word) and `value`."""

    value: Span
    what: Span | None
    category: str  # amount | quantity | date


@dataclass(frozen=True, slots=True)
class ChangeMatch:
    """A statement that changes an earlier item: a new owner, a new date, or a decision reversed.

    `kind` is `owner`, `due` or `decision`; `old` is the value being replaced when said ("not Wednesday");
    `topic` is what the change is about when said ("the review").
    """

    kind: str
    new: Span | None
    old: Span | None = None
    topic: Span | None = None


class LedgerRules(Protocol):
    """One language's patterns. Each method takes one sentence (or segment text) and returns spans of it."""

    lang: str

    def sentences(self, text: str) -> list[Span]: ...

    def decision(self, sentence: str) -> bool: ...

    def todo(self, sentence: str) -> TodoMatch | None: ...

    def open_question(self, sentence: str) -> bool: ...

    def asks(self, sentence: str) -> bool: ...

    def non_answer(self, text: str) -> bool: ...

    def facts(self, sentence: str) -> list[FactMatch]: ...

    def glossary(self, sentence: str) -> list[tuple[Span, str]]: ...

    def addressee(self, sentence: str) -> Span | None: ...

    def change(self, sentence: str) -> ChangeMatch | None: ...

    def content_words(self, text: str) -> set[str]: ...
