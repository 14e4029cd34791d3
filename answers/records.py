"""What an answer is made of, and the one place it is built: citations, the manifest, the public JSON.

Every route and every writer (extractive or a language model) ends here, so a citation always names the
stored segment verbatim, with its speaker's name from the meeting's speaker map; citations are
deduplicated, ranked (what the answer quotes first) and capped; and the manifest says, block by block,
what the answer was built from and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from meetmem.store.records import Segment
from meetmem.store.timecode import format_time

from .tokens import count_tokens

if TYPE_CHECKING:
    from .plan import Plan

AnswerKind = Literal["verbatim", "overview"]
#: An answer cites at most this many segments.
MAX_CITATIONS = 10


@dataclass(frozen=True, slots=True)
class Citation:
    segment_id: str
    start: float
    end: float
    speaker: str | None
    text: str
    #: The name the meeting's speaker map gives `speaker` (a user's, else a suggestion); `speaker` stays the
    #: transcript's label. In the JSON only when there is one, so a meeting without a map keeps the shape.
    speaker_name: str | None = None
    #: The meeting the segment is of; in the JSON only for an answer across meetings.
    meeting_id: str | None = None

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"segment_id": self.segment_id, "start": self.start, "end": self.end,
                               "speaker": self.speaker, "text": self.text}
        if self.speaker_name is not None:
            out["speaker_name"] = self.speaker_name
        if self.meeting_id is not None:
            out["meeting_id"] = self.meeting_id
        return out

    @classmethod
    def of(cls, segment: Segment, speaker_name: str | None = None, *, meeting: bool = False) -> Citation:
        return cls(segment.segment_id, segment.start, segment.end, segment.speaker, segment.text, speaker_name,
                   segment.meeting_id if meeting else None)


@dataclass(frozen=True, slots=True)
class ManifestBlock:
    """One block of the context an answer was built from, with its token count and why it is there."""

    block: str
    tokens: int
    reason: str

    def public(self) -> dict[str, Any]:
        return {"block": self.block, "tokens": self.tokens, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    kind: AnswerKind
    answer: str
    citations: tuple[Citation, ...]
    manifest: tuple[ManifestBlock, ...] = field(default_factory=tuple)
    #: The question's route (`time`, `topic`, `speaker`, `why`, `decision`, `verbatim`, `overview`,
    #: `across`) and why it was taken.
    route: str | None = None
    route_reason: str | None = None
    #: The plan's parameters (range, topic, speaker, ...), shown with `explain`.
    params: dict[str, Any] = field(default_factory=dict)
    #: The meeting answered from, for an answer across meetings (None: not such an answer).
    meeting_id: str | None = None
    across: bool = False

    def public(self, *, explain: bool = False) -> dict[str, Any]:
        """The CONTRACT's answer shape; the manifest, the route and the plan only when `explain`."""
        out: dict[str, Any] = {"question": self.question, "kind": self.kind}
        if self.across:
            out["meeting_id"] = self.meeting_id
        out["answer"] = self.answer
        out["citations"] = [c.public() for c in self.citations]
        if explain:
            out["manifest"] = [b.public() for b in self.manifest]
            if self.route is not None:
                out["route"] = {"name": self.route, "reason": self.route_reason or ""}
                out["plan"] = {"route": self.route, "params": dict(self.params), "why": self.route_reason or ""}
        return out


@dataclass(frozen=True, slots=True)
class Written:
    """What a writer made of a route's evidence: the answer's text and what it rests on.

    Args:
        kind: `verbatim` (the transcript's words) or `overview` (ledger, summaries, a stretch).
        text: the answer as the user reads it.
        cited: the segments the answer rests on, the ones it quotes first.
        reasons: why each cited segment is there (segment id -> reason); the manifest shows them.
        blocks: the other context the answer was built from: `(name, tokens, reason)`.
        prompt: the blocks are a model's prompt, in prompt order, holding the question and the segments
            it was shown: the whole manifest (the builder adds no block of its own).
        evidence: what a model writer may read besides the cited segments (a time question's whole range);
            empty: the cited segments.
    """

    kind: AnswerKind
    text: str
    cited: tuple[Segment, ...] = ()
    reasons: dict[str, str] = field(default_factory=dict)
    blocks: tuple[tuple[str, int, str], ...] = ()
    prompt: bool = False
    evidence: tuple[Segment, ...] = ()


def build_answer(question: str, plan: Plan, written: Written, *, names: dict[str, str] | None = None,
                 limit: int = MAX_CITATIONS) -> Answer:
    """The answer: citations deduplicated in the order the writer ranked them and capped at `limit`, with
    their speakers' names; the manifest (question, the writer's blocks, then each cited segment with
    why it is there; the plan itself is the answer's `route` and `params`); quotes attributed by name.

    Args:
        names: speaker label -> name now, from the meeting's speaker map (`speaker_names.cited_names`).
    """
    names = names or {}
    ordered = list({s.segment_id: s for s in written.cited}.values())[:limit]
    citations = tuple(Citation.of(s, names.get(s.speaker or "")) for s in ordered)
    manifest = [ManifestBlock(name, tokens, why) for name, tokens, why in written.blocks]
    if not written.prompt:
        manifest.insert(0, ManifestBlock("question", count_tokens(question), "question"))
        manifest += [ManifestBlock(f"segment {s.segment_id} [{format_time(s.start)}]", count_tokens(s.text),
                                   written.reasons.get(s.segment_id, "cited")) for s in ordered]
    text = named_quotes(written.text, names)
    return Answer(question, written.kind, text, citations, tuple(manifest), route=plan.route,
                  route_reason=plan.reason, params=plan.params())


def named_quotes(text: str, names: dict[str, str]) -> str:
    """An answer's quotes attributed by name: `"..." (S1, 01:23)` becomes `"..." (Priya, 01:23)`."""
    import re

    for label, name in names.items():
        text = re.sub(rf"\({re.escape(label)}, (\d+:\d\d(?::\d\d)?)\)", lambda m, n=name: f"({n}, {m.group(1)})",
                      text)
    return text


def cited_labels(segments: Sequence[Segment]) -> list[str]:
    return list(dict.fromkeys(s.speaker for s in segments if s.speaker))
