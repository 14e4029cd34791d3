"""The answerer: a question flows one way, plan → retrieve → write → build.

`Answerer.ask` is the one entry for the CLI, the HTTP service, questions across meetings and spoken
questions, with or without a language model: the plan (`plan.py`) picks the route, the route's retrieval
drafts the answer in the transcript's and the ledger's own words, the writer keeps the draft (extractive)
or has a model write over the same plan and evidence (`model.ModelWriter`), and `records.build_answer`
builds the answer once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import SearchFilters
from meetmem.store.log import DEFAULT_TENANT
from meetmem.store.records import MeetingDigest
from meetmem.store.timecode import format_time

from .extractive import VerbatimRetrieval
from .plan import Plan, QuestionContext, plan
from .records import MAX_CITATIONS, Answer, Written, build_answer, cited_labels
from .routes import RouteRetrieval
from .speaker_names import cited_names
from .tokens import count_tokens

if TYPE_CHECKING:
    from .sessions import AskSession


class Writer(Protocol):
    """Writes the answer of a plan from its draft (the route's evidence in the transcript's own words)."""

    def write(self, meeting_id: str, question: str, plan: Plan, draft: Written, *, tenant: str,
              session: AskSession | None = None) -> Written: ...


class Answerer:
    """Answers questions about meetings from the log: plan, retrieve, write, build.

    Args:
        search: the meeting search (holds the log and the loaded models; reused across questions).
        digests: a meeting's stored digest (ledger and summaries), `digests(meeting_id, tenant=...)`;
            without it, overview questions are answered by retrieval.
        candidates: how many top hits (and their neighbours) the verbatim sentence reranker considers.
        weights: the reranker's weights of retrieval prior, cosine, term overlap and answer-type match.
        route_questions: plan time, topic, speaker, why and decision routes; off, every question takes the
            verbatim or overview route (the benchmarks' baseline).
        writer: who writes the answer; None keeps the extractive draft.
    """

    def __init__(
        self,
        search: TranscriptSearch,
        *,
        digests: Callable[..., MeetingDigest | None] | None = None,
        candidates: int = 6,
        weights: tuple[float, float, float, float] = (0.35, 0.5, 0.4, 0.4),
        route_questions: bool = True,
        writer: Writer | None = None,
    ) -> None:
        self.search = search
        self.digests = digests
        self.route_questions = route_questions
        self.verbatim = VerbatimRetrieval(search, digests=digests, candidates=candidates, weights=weights)
        self.routes = RouteRetrieval(search, digests)
        self.writer = writer

    def close(self) -> None:
        """Close the writer's connections (a model's client), when it has any."""
        close = getattr(self.writer, "close", None)
        if callable(close):
            close()

    # -- the flow ---------------------------------------------------------------------------------------
    def ask(
        self,
        meeting_id: str,
        question: str,
        *,
        tenant: str = DEFAULT_TENANT,
        device_id: str | None = None,
        session: AskSession | None = None,
        filters: SearchFilters | None = None,
    ) -> Answer:
        """Answer one question; citations are the segments the answer rests on, what it quotes first.

        Args:
            device_id: the asking device: "since I joined" starts at its first segment.
            session: the conversation this question belongs to; a model's prompt shows its earlier rounds.
            filters: a time range or speaker the caller fixed: the question is answered inside it, unrouted.
        """
        question = question.strip()
        self.search.log.require_meeting(meeting_id, tenant=tenant)
        chosen = self.plan(meeting_id, question, tenant=tenant, device_id=device_id, filters=filters)
        draft = self.retrieve(meeting_id, question, chosen, tenant=tenant, filters=filters)
        if self.writer is not None:
            draft = self.writer.write(meeting_id, question, chosen, draft, tenant=tenant, session=session)
        return self.build(meeting_id, question, chosen, draft, tenant=tenant)

    def plan(self, meeting_id: str, question: str, *, tenant: str = DEFAULT_TENANT, device_id: str | None = None,
             filters: SearchFilters | None = None) -> Plan:
        """The question's plan; the meeting's clock and speakers are read only if the question needs them."""
        filtered = bool(filters and (filters.start is not None or filters.end is not None or filters.speaker))
        context = QuestionContext(
            clock=lambda: self.routes.clock(meeting_id, tenant=tenant, device_id=device_id),
            speakers=lambda: self.routes.directory(meeting_id, tenant=tenant),
            labels=lambda: self._labels(meeting_id, tenant),
            routed=self.route_questions, filtered=filtered)
        return plan(question, context)

    def retrieve(self, meeting_id: str, question: str, chosen: Plan, *, tenant: str,
                 filters: SearchFilters | None = None) -> Written:
        """The route's draft: its evidence, in the transcript's and the ledger's own words."""
        if chosen.route in ("time", "topic", "speaker", "why"):
            return self.routes.find(meeting_id, question, chosen, tenant=tenant)
        if chosen.route == "decision":
            return self._decision(meeting_id, question, chosen, tenant=tenant)
        if chosen.route == "overview":
            return self.verbatim.overview(meeting_id, question, chosen, tenant=tenant, filters=filters)
        return self.verbatim.verbatim(meeting_id, question, chosen, tenant=tenant, filters=filters)

    def build(self, meeting_id: str, question: str, chosen: Plan, written: Written, *, tenant: str) -> Answer:
        """The answer, built once: citations with the speaker map's names, the manifest, the route."""
        labels = cited_labels(written.cited[:MAX_CITATIONS])
        names = cited_names(self.search.log, meeting_id, tenant, labels) if labels else {}
        return build_answer(question, chosen, written, names=names)

    # -- the decision route -----------------------------------------------------------------------------
    def _decision(self, meeting_id: str, question: str, chosen: Plan, *, tenant: str) -> Written:
        """What the meeting settled: the ledger's matching decisions, then the transcript's best sentence
        (a committing one preferred: "let's go with ..." over the candidates listed before it)."""
        spoken = self.verbatim.verbatim(meeting_id, question, chosen, tenant=tenant, prefer_commitment=True)
        hits = self.routes.hits(meeting_id, tenant, chosen.topic, k=30)
        matched = self.routes.ledger_matches(meeting_id, tenant, chosen.topic, ("decision",), hits,
                                             min_lexical=0.5)[:2]
        if not matched and spoken.cited:
            # The decision may not name the subject ("let's go with the TS-204" for the sensor board): the
            # decision read from the very segment the transcript's best sentence quotes matches too.
            quoted = spoken.cited[0].segment_id
            matched = [item for item in self.routes.ledger_matches(meeting_id, tenant, "", ("decision",), [],
                                                                    every=True)
                       if quoted in item.source.segment_ids][:1]
        if not matched:
            return spoken
        ids = [item.source.segment_ids[0] for item in matched if item.source.segment_ids]
        found = self.search.log.get(ids)
        decided = [found[sid] for sid in ids if sid in found]
        lines = [f"Decided: {item.text} ({format_time(item.source.start)})" for item in matched]
        if not spoken.cited or spoken.cited[0].segment_id not in ids:
            lines.append(spoken.text)  # the transcript's own words, when they are not the decision's
        text = "\n".join(lines)
        reasons = {s.segment_id: "cited by the ledger's decision about the topic" for s in decided}
        reasons.update({k: v for k, v in spoken.reasons.items() if k not in reasons})
        block = (f"ledger: decisions about the topic ({len(matched)})", count_tokens("\n".join(lines[:len(matched)])),
                 "retrieval over the decisions and their cited segments")
        return Written(spoken.kind, text, (*decided, *spoken.cited), reasons, (block,))

    def _labels(self, meeting_id: str, tenant: str) -> Sequence[str]:
        index = self.search.meeting_index(meeting_id, tenant=tenant)
        with index.lock:
            return sorted({s for s in index.speakers if s})

