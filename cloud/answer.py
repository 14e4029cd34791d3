"""Answering a question about a meeting from its transcript, with timestamped citations.

Without a language model, a verbatim question ("what exactly did she say the deadline was?") is answered
with the transcript's own words: hybrid retrieval finds the segments, then a rule-based reranker picks the
sentence that best carries what the question asks for (a date for "when", an amount for "how much", ...).
Nothing is paraphrased, so names, numbers and dates come back exactly as they were said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import Hit, SearchFilters
from meetmem.store.log import DEFAULT_TENANT
from meetmem.store.records import MeetingDigest, Segment
from meetmem.store.timecode import format_time
from meetmem.summarizers.extractive import sentences

from .overview import overview_answer
from .prompting import hit_reason
from .routed_answers import RoutedAnswers
from .speaker_names import with_speaker_names
from .tokens import count_tokens

if TYPE_CHECKING:
    import numpy as np

AnswerKind = Literal["verbatim", "overview"]
MAX_CITATIONS = 10

_OVERVIEW_RE = re.compile(
    r"\b(summar\w*|overview|recap|gist|key points|main points|highlights|what (?:was|is) (?:the|this) meeting about"
    r"|what did we (?:decide|agree)|what (?:was|were|has been|have been) (?:decided|agreed)|decisions?"
    r"|action items?|to-?dos?|next steps|pending|outstanding|open questions|what do i owe|follow[- ]ups?"
    r"|what (?:does|did|will) \w+(?: \w+)? owe|what (?:is|are|was|were) \w+(?: \w+)? (?:supposed|meant) to do"
    r"|who (?:is|was) (?:doing|taking|handling) what)\b"
    r"|总结|概括|概述|要点|决定了什么|做了哪些决定|有哪些决定|待办|哪些任务|行动项|主要(?:讲|讨论)了?什么|还有哪些问题",
    re.IGNORECASE,
)

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_ANSWER_TYPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "time": (
        re.compile(r"\bwhat time\b|\bat what hour\b|几点|什么时间点", re.I),
        re.compile(
            r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)|\bnoon\b|\bmidnight\b|[点點]半?|\d+点", re.I
        ),
    ),
    "date": (
        re.compile(
            r"\bwhen\b|\bwhat (?:day|date)\b|\bdeadline\b|\bdue\b|\bby when\b|\bhow long\b|什么时候|哪天|几号|截止|"
            r"期限|哪一天|多久|星期几|周几|礼拜几",
            re.I,
        ),
        re.compile(
            rf"\b(?:{_MONTHS})\b|\b(?:{_DAYS})\b|\b\d{{1,2}}(?:st|nd|rd|th)\b|\b(?:today|tomorrow|tonight|yesterday"
            r"|next week|this week|end of (?:the )?(?:day|week|month|quarter|year)|eod|q[1-4])\b"
            r"|\b\d{4}-\d{2}-\d{2}\b|周[一二三四五六日天末]|星期[一二三四五六日天]|\d+月|[一二三四五六七八九十]+月|\d+[号日]"
            r"|月底|月初|下周|本周|这周|明天|今天|后天|年底",
            re.I,
        ),
    ),
    "money": (
        re.compile(
            r"\bhow much\b|\bcost\b|\bprice\b|\bpriced\b|\bbudget\b|\bquote\b|\bfee\b|\bcharge\b|\bspend\b|\bpay\b"
            r"|多少钱|价格|价钱|报价|预算|费用|成本|花了",
            re.I,
        ),
        re.compile(
            r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:dollars?|euros?|pounds?|bucks|usd|eur|k)\b|\d+\s?(?:元|块|万|美元|欧元)"
            r"|[一二三四五六七八九十百千万两]+(?:元|块|万)",
            re.I,
        ),
    ),
    "quantity": (
        re.compile(
            r"\bhow many\b|\bnumber of\b|\bquantity\b|\bhow much\b|多少|几[个台批次件天人家种副片]|数量"
            r"|多[高重大长宽厚远]",
            re.I,
        ),
        re.compile(r"\d|[一二三四五六七八九十百千万两]+[个台批次件]", re.I),
    ),
    "code": (
        re.compile(r"\bpart number\b|\bmodel\b|\bcode\b|\bwhich\b|型号|编号|代号|哪款|哪个型号", re.I),
        re.compile(r"\b[A-Z]{1,5}-?\d{2,}\b|\bv\d+(?:\.\d+)+\b"),
    ),
    "person": (
        re.compile(r"\bwho\b|\bwhom\b|\bwhose\b|\bwhich person\b|\bowner\b|谁|哪位|负责人", re.I),
        # 周 is a surname but also the week (周一, 下周三, 周末): a weekday is not a person.
        re.compile(
            r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\b|由.{1,4}(?:负责|跟进|来)|[小老][张王李赵刘陈杨黄周吴林]"
            r"|[张王李赵刘陈杨黄吴林][\u4e00-\u9fff]{1,2}|周(?![一二三四五六日天末内])[\u4e00-\u9fff]{1,2}"
        ),
    ),
}
_CJK_NAME_RE = re.compile(r"[\u4e00-\u9fff]")
# "What time was the workshop moved to?" asks for the value after a change; the sentence that makes the
# change ("we changed it to 12:55 pm, not 9:10 am") beats the one it replaced.
_ASKS_CHANGE_RE = re.compile(
    r"\b(?:revised|revision|new|now|moved|changed|updated|update|corrected|correction|final|finally|end(?:ed)? up|"
    r"after all|instead|actually)\b|改到|改成|改为|现在|最后|调整|更正|修改后|新的",
    re.IGNORECASE,
)
_STATES_CHANGE_RE = re.compile(
    r"\b(?:correction|changed|moved|updated?|revised|instead|actually|rather)\b|,\s*not\s+\S|\bnot\s+\S+.*\bas\s+I\s+said"
    r"|改到|改成|改为|更正|不是",
    re.IGNORECASE,
)
# "What did Dana say about the budget?" asks for Dana's own words; "By when does Bob owe us the quote?"
# names Bob as the subject, and someone else may well have said it.
_SPEECH_RE = re.compile(
    r"\b(?:say|says|said|saying|mention\w*|tell|tells|told|ask|asks|asked|propos\w*|suggest\w*|claim\w*|"
    r"think|thinks|thought|according to|quote\w*|words?|explain\w*|promis\w*|comment\w*|argu\w*|"
    r"recommend\w*|point\w* out)\b|说|提到|讲|问|建议|认为|表示|提出",
    re.IGNORECASE,
)


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

    def public(self) -> dict[str, Any]:
        out = {"segment_id": self.segment_id, "start": self.start, "end": self.end, "speaker": self.speaker,
               "text": self.text}
        if self.speaker_name is not None:
            out["speaker_name"] = self.speaker_name
        return out


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
    #: The question's route (`time`, `topic`, `speaker`, `why`; `verbatim` / `overview` otherwise) and why.
    route: str | None = None
    route_reason: str | None = None

    def public(self, *, explain: bool = False) -> dict[str, Any]:
        """The CONTRACT's answer shape; the manifest and the route only when `explain`."""
        out: dict[str, Any] = {
            "question": self.question,
            "kind": self.kind,
            "answer": self.answer,
            "citations": [c.public() for c in self.citations],
        }
        if explain:
            out["manifest"] = [b.public() for b in self.manifest]
            if self.route is not None:
                out["route"] = {"name": self.route, "reason": self.route_reason or _default_route_reason(self.kind)}
        return out


def _default_route_reason(kind: str) -> str:
    if kind == "overview":
        return "an overview question (decisions, todos, the gist) naming no topic, time or speaker"
    return "no time range, topic, speaker or why asked for: the transcript's own best sentence"


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
    typed = [any(_ANSWER_TYPES[name][1].search(part) for name in wanted) for part in parts]
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
    typed = [any(_ANSWER_TYPES[name][1].search(part) for name in wanted) for part in (last, first)]
    return f"{last} {first}" if typed[0] != typed[1] else None


def question_kind(question: str) -> AnswerKind:
    """`overview` for questions about decisions, todos and the gist; `verbatim` for exact words and values."""
    return "overview" if _OVERVIEW_RE.search(question) else "verbatim"


def expected_answer_types(question: str) -> list[str]:
    """Which kinds of value the question asks for ("when" -> date, "how much" -> money, ...)."""
    return [name for name, (asks, _) in _ANSWER_TYPES.items() if asks.search(question)]


class Answerer:
    """Answers questions about meetings from the log through hybrid retrieval (extractive, no model).

    Args:
        search: the meeting search (holds the log and the loaded models; reused across questions).
        candidates: how many top hits (and their neighbours) the sentence reranker considers.
        weights: the reranker's weights of retrieval prior, cosine, term overlap and answer-type match.
        digests: a meeting's stored digest (ledger and summaries) for overview questions; called as
            `digests(meeting_id, tenant=...)`. Without it, overview questions are answered by retrieval.
        route_questions: send time, topic, speaker and why questions down their routes (`routed_answers`);
            off, every question takes the verbatim or overview path (the benchmark's baseline).
    """

    def __init__(
        self,
        search: TranscriptSearch,
        *,
        candidates: int = 6,
        weights: tuple[float, float, float, float] = (0.35, 0.5, 0.4, 0.4),
        digests: Callable[..., MeetingDigest | None] | None = None,
        route_questions: bool = True,
    ) -> None:
        self.search = search
        self.route_questions = route_questions
        self.digests = digests
        self.candidates = candidates
        self.weights = weights
        self.routes = RoutedAnswers(self)

    def ask(
        self,
        meeting_id: str,
        question: str,
        *,
        tenant: str = DEFAULT_TENANT,
        filters: SearchFilters | None = None,
        device_id: str | None = None,
    ) -> Answer:
        """Answer one question; citations are the segments the answer rests on, most relevant first.

        `device_id` names the asking device: "since I joined" starts at its first segment.
        """
        answer = self._ask(meeting_id, question, tenant=tenant, filters=filters, device_id=device_id)
        if answer.route is None:
            answer = replace(answer, route=answer.kind, route_reason=_default_route_reason(answer.kind))
        return with_speaker_names(answer, self.search.log, meeting_id, tenant)

    def _ask(self, meeting_id: str, question: str, *, tenant: str, filters: SearchFilters | None,
             device_id: str | None = None) -> Answer:
        question = question.strip()
        if self.route_questions and not (filters and (filters.start is not None or filters.end is not None
                                                      or filters.speaker)):
            routed = self.routes.answer(meeting_id, question, tenant=tenant, device_id=device_id)
            if routed is not None:
                return routed
        kind = question_kind(question)
        if kind == "overview" and self.digests is not None:
            answer = self._from_digest(meeting_id, tenant, question)
            if answer is not None:
                return answer
        dense = self.search.routes is not None
        query_vectors = self.search.encode_query(meeting_id, question, tenant=tenant) if dense else None
        mode = "hybrid" if dense else "bm25"
        hits = self.search.search(meeting_id, question, tenant=tenant, k=MAX_CITATIONS, filters=filters,
                                  query_vectors=query_vectors, mode=mode)
        speaker = None
        if not (filters and filters.speaker) and _SPEECH_RE.search(question):
            speaker = self._named_speaker(meeting_id, tenant, question)
        if speaker is not None:
            # "What did Dana say about the budget?": that speaker's best turns first, then the rest.
            own = self.search.search(meeting_id, question, tenant=tenant, k=MAX_CITATIONS,
                                     filters=replace(filters or SearchFilters(), speaker=speaker),
                                     query_vectors=query_vectors, mode=mode)
            # The question may name them as its subject ("By when does Bob owe us the quote?"), and someone
            # else may have said the answer: the best hits of the whole meeting stay among the candidates.
            lead = own[: max(1, self.candidates // 2)]
            seen = {h.segment.segment_id for h in lead}
            overall = [h for h in hits if h.segment.segment_id not in seen][: self.candidates - len(lead)]
            seen |= {h.segment.segment_id for h in overall}
            rest = [h for h in own + hits if h.segment.segment_id not in seen]
            hits = list({h.segment.segment_id: h for h in lead + overall + rest}.values())[:MAX_CITATIONS]
        if not hits:
            return Answer(question, kind, "Nothing in this meeting's transcript matches the question.", (),
                          (ManifestBlock("question", count_tokens(question), "question"),))
        reasons = {h.segment.segment_id: hit_reason(h) for h in hits}
        if kind == "overview":
            ordered = [h.segment for h in hits]
            lines = [self._quote(s.speaker, s.start, s.text) for s in ordered[:3]]
            text = "From the transcript:\n" + "\n".join(lines)
        else:
            best, sentence, reason, continued = self._best_sentence(meeting_id, tenant, question, hits,
                                                                     query_vectors)
            reasons.setdefault(best.segment_id, reason)
            quoted = [best] if continued is None else [best, continued]
            if continued is not None:
                reasons.setdefault(continued.segment_id, f"the quote from {best.segment_id} runs on into it")
            ids = {q.segment_id for q in quoted}
            ordered = quoted + [h.segment for h in hits if h.segment.segment_id not in ids]
            text = self._quote(best.speaker, best.start, sentence)
        ordered = ordered[:MAX_CITATIONS]
        citations = tuple(Citation(s.segment_id, s.start, s.end, s.speaker, s.text) for s in ordered)
        manifest = (ManifestBlock("question", count_tokens(question), "question"),) + tuple(
            ManifestBlock(f"segment {s.segment_id} [{format_time(s.start)}]", count_tokens(s.text),
                          reasons[s.segment_id])
            for s in ordered
        )
        return Answer(question, kind, text, citations, manifest)

    def _from_digest(self, meeting_id: str, tenant: str, question: str) -> Answer | None:
        """An overview answer from the ledger and L2, or None when they hold nothing for this question."""
        assert self.digests is not None
        self.search.log.require_meeting(meeting_id, tenant=tenant)
        made = overview_answer(question, self.digests(meeting_id, tenant=tenant), self.search.log.get)
        if made is None:
            return None
        text, cited, blocks = made
        cited = cited[:MAX_CITATIONS]
        citations = tuple(Citation(s.segment_id, s.start, s.end, s.speaker, s.text) for s in cited)
        manifest = (
            (ManifestBlock("question", count_tokens(question), "question"),)
            + tuple(ManifestBlock(name, tokens, reason) for name, tokens, reason in blocks)
            + tuple(ManifestBlock(f"segment {s.segment_id} [{format_time(s.start)}]", count_tokens(s.text),
                                  "cited by the ledger or summary") for s in cited)
        )
        return Answer(question, "overview", text, citations, manifest)

    def _named_speaker(self, meeting_id: str, tenant: str, question: str) -> str | None:
        """The meeting speaker the question names, if any (the longest name wins: "Chen Wei" over "Chen")."""
        index = self.search.meeting_index(meeting_id, tenant=tenant)
        with index.lock:
            names = sorted({s for s in index.speakers if s and len(s) > 1}, key=len, reverse=True)
        for name in names:
            if _CJK_NAME_RE.search(name):
                if name in question:
                    return name
            elif re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question, re.IGNORECASE):
                return name
        return None

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
        hits: Sequence[Hit],
        query_vectors: Mapping[str, np.ndarray] | None,
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
        wanted = expected_answer_types(question)
        asks_change = bool(_ASKS_CHANGE_RE.search(question))
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
                typed = any(_ANSWER_TYPES[name][1].search(sentence) for name in wanted)
                score = w[0] * prior + w[1] * cosine + w[2] * overlap + (w[3] if typed else 0.0)
                if asks_change and _STATES_CHANGE_RE.search(sentence):
                    score += w[3]
                if best is None or score > best[0] + 1e-12:
                    best = (score, segment, sentence, reason, continued)
        assert best is not None
        return best[1], best[2], best[3], best[4]

    @staticmethod
    def _quote(speaker: str | None, start: float, text: str) -> str:
        who = f"{speaker}, " if speaker else ""
        return f'"{text}" ({who}{format_time(start)})'

