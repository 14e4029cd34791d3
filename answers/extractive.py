"""Answering a question about a meeting from its transcript, with timestamped citations.

Without a language model, a verbatim question ("what exactly did she say the deadline was?") is answered
with the transcript's own words: hybrid retrieval finds the segments, then a rule-based reranker picks the
sentence that best carries what the question asks for (a date for "when", an amount for "how much", ...).
Nothing is paraphrased, so names, numbers and dates come back exactly as they were said.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import Hit, SearchFilters
from meetmem.store.records import MeetingDigest, Segment
from meetmem.store.timecode import format_time
from meetmem.summarizers.extractive import sentences

from .answer_types import ANSWER_TYPES, STATES_CHANGE_RE, AnswerKind
from .overview import overview_answer
from .prompting import hit_reason
from .records import MAX_CITATIONS, Written
from .routes import ASKING_RE, COMMIT_RE, nothing_matches

if TYPE_CHECKING:
    import numpy as np

    from .plan import Plan


def _answer_spans(text: str, wanted: Sequence[str]) -> list[str]:
    """The pieces of a segment a quote may be: each sentence, and a sentence joined to the next one when
    only one of the two holds the kind of value asked for.

    Recognised speech is punctuated by the recogniser, which often ends a sentence before the value: "Put
    the workshop in your calendars. September 19th at 6 p.m." A quote of the first sentence alone names
    the subject and drops the answer. The joined pair is the transcript's own text between the two
    sentences' ends, so it stays verbatim.
    """
    parts = sentences(text)
    spans = list(parts)
    if not wanted or len(parts) < 2:
        return spans
    typed = [any(ANSWER_TYPES[name][1].search(part) for name in wanted) for part in parts]
    at, starts = 0, []
    for part in parts:
        at = text.find(part, at)
        if at < 0:  # not a verbatim piece (cannot happen with `sentences`): quote sentences alone
            return spans
        starts.append(at)
        at += len(part)
    for i in range(len(parts) - 1):
        if typed[i] != typed[i + 1]:
            spans.append(text[starts[i]:starts[i + 1] + len(parts[i + 1])])
    return spans


#: The longest pause between two segments of one device that a quote may run across.
_RUN_ON_GAP_S = 1.5


def _continuations(segments: Sequence[Segment]) -> dict[str, Segment]:
    """For each segment, the candidate that follows it straight on: the same device and speaker (or both
    unknown), the next seq, within `_RUN_ON_GAP_S` of its end. The edge cuts recognised speech where the
    voice pauses, and a speaker pauses before a value as often as after a sentence."""
    by_seq = {(s.device_id, s.seq): s for s in segments}
    out = {}
    for s in segments:
        after = by_seq.get((s.device_id, s.seq + 1))
        if after is not None and after.speaker == s.speaker and 0.0 <= after.start - s.end <= _RUN_ON_GAP_S:
            out[s.segment_id] = after
    return out


def _joined_span(text: str, after: str, wanted: Sequence[str]) -> str | None:
    """The last sentence of `text` run on into the first of `after`, when only one of the two holds the
    kind of value asked for; None otherwise. Both halves are verbatim; the quote cites both segments."""
    last, first = sentences(text)[-1], sentences(after)[0]
    typed = [any(ANSWER_TYPES[name][1].search(part) for name in wanted) for part in (last, first)]
    return f"{last} {first}" if typed[0] != typed[1] else None


class VerbatimRetrieval:
    """The verbatim and overview routes: hybrid retrieval, then the sentence that best carries the answer.

    Args:
        search: the meeting search (holds the log and the loaded models; reused across questions).
        digests: a meeting's stored digest (ledger and summaries) for overview questions; called as
            `digests(meeting_id, tenant=...)`. Without it, overview questions are answered by retrieval.
        candidates: how many top hits (and their neighbours) the sentence reranker considers.
        weights: the reranker's weights of retrieval prior, cosine, term overlap and answer-type match.
    """

    #: A verbatim answer cites its quote, then the hits scoring at least this share of the best hit's score,
    #: at most `max_citations` in all. Chosen on the QMSum and LoCoMo tune halves (docs/BENCHMARKS.md, issue
    #: 32): five keeps every figure at 5 and halves the citations; any floor cost recall@5.
    citation_floor: float = 0.0
    max_citations: int = 5

    def __init__(
        self,
        search: TranscriptSearch,
        *,
        digests: Callable[..., MeetingDigest | None] | None = None,
        candidates: int = 6,
        weights: tuple[float, float, float, float] = (0.35, 0.5, 0.4, 0.4),
    ) -> None:
        self.search = search
        self.digests = digests
        self.candidates = candidates
        self.weights = weights

    def hits(self, meeting_id: str, question: str, plan: Plan, *, tenant: str,
             filters: SearchFilters | None = None) -> tuple[list[Hit], Mapping[str, np.ndarray] | None]:
        """The question's hits, ranked: with the plan's quoted speaker, their best turns lead."""
        dense = self.search.routes is not None
        query_vectors = self.search.encode_query(meeting_id, question, tenant=tenant) if dense else None
        mode = "hybrid" if dense else "bm25"
        hits = self.search.search(meeting_id, question, tenant=tenant, k=MAX_CITATIONS, filters=filters,
                                  query_vectors=query_vectors, mode=mode)
        if plan.route == "verbatim" and plan.speaker is not None:
            # "What did Dana say about the budget?": that speaker's best turns first, then the rest.
            own = self.search.search(meeting_id, question, tenant=tenant, k=MAX_CITATIONS,
                                     filters=replace(filters or SearchFilters(), speaker=plan.speaker),
                                     query_vectors=query_vectors, mode=mode)
            # The question may name them as its subject ("By when does Bob owe us the quote?"), and someone
            # else may have said the answer: the best hits of the whole meeting stay among the candidates.
            lead = own[: max(1, self.candidates // 2)]
            seen = {h.segment.segment_id for h in lead}
            overall = [h for h in hits if h.segment.segment_id not in seen][: self.candidates - len(lead)]
            seen |= {h.segment.segment_id for h in overall}
            rest = [h for h in own + hits if h.segment.segment_id not in seen]
            hits = list({h.segment.segment_id: h for h in lead + overall + rest}.values())[:MAX_CITATIONS]
        return hits, query_vectors

    def verbatim(self, meeting_id: str, question: str, plan: Plan, *, tenant: str,
                 filters: SearchFilters | None = None, prefer_commitment: bool = False) -> Written:
        """The transcript's best sentence for the question, quoted; the other hits follow as citations.

        `prefer_commitment`: a sentence that commits to something ("let's go with ...") weighs more (the
        `decision` route when the ledger holds no matching decision)."""
        hits, query_vectors = self.hits(meeting_id, question, plan, tenant=tenant, filters=filters)
        if not hits:
            return nothing_matches(plan.kind)
        if plan.kind == "overview":
            return self.quotes(hits, plan.kind)
        reasons = {h.segment.segment_id: hit_reason(h) for h in hits}
        best, sentence, reason, continued = self._best_sentence(meeting_id, tenant, question, plan, hits,
                                                                 query_vectors, prefer_commitment)
        reasons.setdefault(best.segment_id, reason)
        quoted = [best] if continued is None else [best, continued]
        if continued is not None:
            reasons.setdefault(continued.segment_id, f"the quote from {best.segment_id} runs on into it")
        ids = {q.segment_id for q in quoted}
        # The quote first, then only the hits nearly as relevant as the best: a citation a user opens should
        # bear on the question (CONTRACT: fewer is better than more).
        floor = self.citation_floor * (hits[0].score or 0.0)
        ordered = quoted + [h.segment for h in hits if h.segment.segment_id not in ids and h.score >= floor]
        return Written(plan.kind, quote(best.speaker, best.start, sentence), tuple(ordered[: self.max_citations]),
                       reasons)

    def quotes(self, hits: Sequence[Hit], kind: AnswerKind) -> Written:
        """The top three hits quoted whole (an overview question the digest cannot answer)."""
        ordered = [h.segment for h in hits]
        text = "From the transcript:\n" + "\n".join(quote(s.speaker, s.start, s.text) for s in ordered[:3])
        return Written(kind, text, tuple(ordered), {h.segment.segment_id: hit_reason(h) for h in hits})

    def overview(self, meeting_id: str, question: str, plan: Plan, *, tenant: str,
                 filters: SearchFilters | None = None) -> Written:
        """An overview answer from the ledger and L2; retrieval's quotes when they hold nothing for it."""
        if self.digests is not None:
            made = overview_answer(question, self.digests(meeting_id, tenant=tenant), self.search.log.get,
                                   focus=plan.focus, owner=plan.owner)
            if made is not None:
                text, cited, blocks = made
                return Written("overview", text, tuple(cited[:MAX_CITATIONS]),
                               {s.segment_id: "cited by the ledger or summary" for s in cited}, tuple(blocks))
        hits, _ = self.hits(meeting_id, question, plan, tenant=tenant, filters=filters)
        return self.quotes(hits, "overview") if hits else nothing_matches("overview")

    def _candidates(self, meeting_id: str, tenant: str, hits: Sequence[Hit]) -> list[tuple[Segment, float, str]]:
        """The top hits with their relative retrieval score, then their neighbours in the meeting.

        An answer often sits next to the segment that matches the question best ("Is that a one-off
        cost?" / "One-off: $4,250."), so each top hit's neighbours compete too, at half its prior.
        """
        top_score = hits[0].score or 1.0
        chosen: dict[str, tuple[Segment, float, str]] = {}
        for hit in hits[: self.candidates]:
            chosen[hit.segment.segment_id] = (hit.segment, hit.score / top_score, hit_reason(hit))
        index = self.search.meeting_index(meeting_id, tenant=tenant)
        neighbours: dict[str, tuple[float, str]] = {}
        with index.lock:
            for hit in hits[: self.candidates]:
                pos = index.positions.get(hit.segment.segment_id)
                if pos is None:
                    continue
                for near in (pos - 1, pos + 1):
                    if 0 <= near < len(index.segment_ids):
                        sid = index.segment_ids[near]
                        prior = 0.5 * hit.score / top_score
                        if sid not in chosen and prior > neighbours.get(sid, (-1.0, ""))[0]:
                            neighbours[sid] = (prior, f"next to {hit.segment.segment_id}")
            superseded = set(index.superseded)
        stored = self.search.log.get(sid for sid in neighbours if sid not in superseded)
        for sid, (prior, reason) in neighbours.items():
            if sid in stored:
                chosen[sid] = (stored[sid], prior, reason)
        return list(chosen.values())

    def _best_sentence(
        self,
        meeting_id: str,
        tenant: str,
        question: str,
        plan: Plan,
        hits: Sequence[Hit],
        query_vectors: Mapping[str, np.ndarray] | None,
        prefer_commitment: bool = False,
    ) -> tuple[Segment, str, str, Segment | None]:
        """Pick the sentence among the top hits and their neighbours that best answers the question; the
        last item is the next segment when the quote runs on into it (`_joined_span`), else None.

        Score = retrieval prior (fused score relative to the best hit) + the segment's cosine similarity to
        the question + the idf-weighted share of the question's terms the sentence holds + a bonus when it
        holds the kind of value asked for (a date for "when", an amount for "how much").
        """
        tokenizer = self.search.tokenizer
        index = self.search.meeting_index(meeting_id, tenant=tenant)
        q_terms = set(tokenizer.tokens(question))
        weights = {t: index.bm25.idf(t) for t in q_terms}
        total = sum(weights.values()) or 1.0
        wanted = list(plan.answer_types)
        asks_change = plan.asks_change
        candidates = self._candidates(meeting_id, tenant, hits)
        cosines: dict[str, float] = {}
        if query_vectors:
            cosines = self.search.similarities(meeting_id, query_vectors, [c[0].segment_id for c in candidates],
                                               tenant=tenant)
        w = self.weights
        following = _continuations([c[0] for c in candidates])
        best: tuple[float, Segment, str, str, Segment | None] | None = None
        for segment, prior, reason in candidates:
            cosine = cosines.get(segment.segment_id, 0.0)
            spans: list[tuple[str, Segment | None]] = [(x, None) for x in _answer_spans(segment.text, wanted)]
            after = following.get(segment.segment_id)
            if after is not None and wanted:
                joined = _joined_span(segment.text, after.text, wanted)
                if joined is not None:
                    spans.append((joined, after))
            for sentence, continued in spans:
                terms = set(tokenizer.tokens(sentence))
                overlap = sum(wt for t, wt in weights.items() if t in terms) / total
                typed = any(ANSWER_TYPES[name][1].search(sentence) for name in wanted)
                score = w[0] * prior + w[1] * cosine + w[2] * overlap + (w[3] if typed else 0.0)
                if asks_change and STATES_CHANGE_RE.search(sentence):
                    score += w[3]
                if prefer_commitment and COMMIT_RE.search(sentence) and not ASKING_RE.search(sentence):
                    score += w[3]
                if best is None or score > best[0] + 1e-12:
                    best = (score, segment, sentence, reason, continued)
        assert best is not None
        return best[1], best[2], best[3], best[4]


def quote(speaker: str | None, start: float, text: str) -> str:
    """`"text" (speaker, 01:23)`: a verbatim quote as an answer shows it."""
    who = f"{speaker}, " if speaker else ""
    return f'"{text}" ({who}{format_time(start)})'

