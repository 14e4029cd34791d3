"""The I/O around the context compiler: what a question's prompt is compiled from, read from the log.

`PromptSources` gathers the stable part (glossary, speakers, ledger, L2, L1 from the stored digest), the
retrieved segments (the same hybrid search as the extractive answer) and a live meeting's last minutes,
and reads any stretch of the meeting back verbatim for the model's `expand(start, end)` tool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import Hit
from meetmem.store.log import DEFAULT_TENANT
from meetmem.store.records import MeetingDigest

from .compiler import CompiledPrompt, CompilerOptions, Evidence, MeetingContext, Turn, compile_prompt, segment_line
from .tokens import count_tokens


def hit_reason(hit: Hit) -> str:
    """`retrieved: bm25 #2 + dense #1`: which rankings put the segment where."""
    parts = []
    if hit.bm25_rank is not None:
        parts.append(f"bm25 #{hit.bm25_rank}")
    if hit.dense_rank is not None:
        parts.append(f"dense #{hit.dense_rank}")
    return "retrieved: " + " + ".join(parts) if parts else "retrieved"


@dataclass(frozen=True, slots=True)
class Compiled:
    """A compiled prompt with what went into it: the search hits, the compaction steps taken, and the
    question's evidence (retrieved, then recent) in the order it was offered to the compiler."""

    prompt: CompiledPrompt
    hits: tuple[Hit, ...]
    steps: tuple[str, ...]
    evidence: tuple[Evidence, ...] = ()


class PromptSources:
    """Reads what a meeting's prompts are compiled from.

    Args:
        search: the hybrid search (and through it, the log).
        digests: the meeting's stored digest, `digests(meeting_id, tenant=...)`; never waits for one.
        retrieve: how many segments to retrieve per question.
        recent_s: a live meeting's last this many seconds go in as `recent`.
        stamp: identifies the stored digest without reading it (`MeetingDigester.stamp`); with it, a
            meeting's stable context is read once per digest instead of once per question.
    """

    def __init__(self, search: TranscriptSearch, digests: Callable[..., MeetingDigest | None], *,
                 retrieve: int = 10, recent_s: float = 120.0, stamp: Callable[..., object] | None = None) -> None:
        self.search = search
        self.log = search.log
        self.digests = digests
        self.retrieve = retrieve
        self.recent_s = recent_s
        self.stamp = stamp
        self._cached: dict[tuple[str, str], tuple[object, MeetingContext]] = {}
        self._lock = threading.Lock()

    def forget(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        """Drop the meeting's cached context (after it was deleted)."""
        with self._lock:
            self._cached.pop((tenant, meeting_id), None)

    def meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[MeetingContext, bool]:
        """The stable part of the meeting's prompts, and whether the meeting is still going."""
        live = self.log.closure(meeting_id, tenant=tenant) is None
        key = (tenant, meeting_id)
        stamp = self.stamp(meeting_id, tenant=tenant) if self.stamp is not None else None
        if stamp is not None:
            with self._lock:
                cached = self._cached.get(key)
            if cached is not None and cached[0] == stamp:
                return cached[1], live
        context = self._read_meeting(meeting_id, tenant)
        if stamp is not None:
            with self._lock:
                self._cached[key] = (stamp, context)
                while len(self._cached) > 256:
                    del self._cached[next(iter(self._cached))]
        return context, live

    def _read_meeting(self, meeting_id: str, tenant: str) -> MeetingContext:
        digest = self.digests(meeting_id, tenant=tenant)
        index = self.search.meeting_index(meeting_id, tenant=tenant)
        with index.lock:
            speakers = tuple(sorted({s for s in index.speakers if s}))
        langs = self.log.languages(meeting_id, tenant=tenant)
        if digest is None:
            return MeetingContext(meeting_id, speakers, langs)
        glossary = tuple(i.text for i in digest.ledger if i.kind == "glossary" and i.status == "current")
        ledger = tuple(i for i in digest.ledger if i.kind != "glossary")
        return MeetingContext(meeting_id, speakers, langs, glossary, ledger, digest.l2, digest.sections)

    def evidence(self, meeting_id: str, question: str, *, tenant: str = DEFAULT_TENANT,
                 live: bool = False) -> tuple[list[Hit], list[Evidence], list[Evidence]]:
        """The search hits for the question, as evidence; and a live meeting's newest segments."""
        mode = "hybrid" if self.search.routes is not None else "bm25"
        hits = self.search.search(meeting_id, question, tenant=tenant, k=self.retrieve, mode=mode)
        retrieved = [Evidence(h.segment, hit_reason(h)) for h in hits]
        recent: list[Evidence] = []
        if live:
            _, last_end = self.log.meeting_stats(meeting_id, tenant=tenant)
            newest = self.log.segments(meeting_id, tenant=tenant, start=max(0.0, last_end - self.recent_s))
            recent = [Evidence(s, "recent") for s in newest]
        return hits, retrieved, recent

    def compile(self, meeting_id: str, question: str, *, tenant: str = DEFAULT_TENANT,
                history: Sequence[Turn] = (), options: CompilerOptions | None = None,
                retrieved: Sequence[Evidence] | None = None, note: str | None = None) -> Compiled:
        """Compile the prompt for a question from the log, the digest and the session's earlier rounds.

        Args:
            retrieved: the evidence a routed question's plan found (a stretch of the meeting, a speaker's
                turns), in place of the search's hits for the question; a live meeting's recent minutes are
                then left out (the route chose what to show).
            note: how the question was read, shown after it (volatile: it goes last).
        """
        meeting, live = self.meeting(meeting_id, tenant=tenant)
        if retrieved is None:
            hits, found, recent = self.evidence(meeting_id, question, tenant=tenant, live=live)
        else:
            hits, found, recent = [], list(retrieved), []
        asked = f"{question}\n({note})" if note else question
        prompt, steps = compile_prompt(meeting, asked, retrieved=found, recent=recent, history=history,
                                       options=options)
        return Compiled(prompt, tuple(hits), tuple(steps), (*found, *recent))

    def expand(self, meeting_id: str, start: float, end: float, *, tenant: str = DEFAULT_TENANT,
               max_tokens: int = 800) -> tuple[str, list[str]]:
        """The meeting's segments between `start` and `end` seconds, verbatim with their handles (at most
        `max_tokens`, then a line saying where it stopped); and the ids of the segments it shows."""
        if end < start:
            start, end = end, start
        lines: list[str] = []
        ids: list[str] = []
        used = 0
        for segment in self.log.segments(meeting_id, tenant=tenant, start=start, end=end):
            line = segment_line(segment, segment.chain_pos)
            cost = count_tokens(line)
            if used + cost > max_tokens:
                lines.append(f"[stopped at {segment.start:.1f} s: expand({segment.start:.1f}, {end:.1f}) for more]")
                break
            used += cost
            lines.append(line)
            ids.append(segment.segment_id)
        return ("\n".join(lines) if lines else f"[nothing was said between {start:.1f} and {end:.1f} s]"), ids
