"""Questions and search across all of a tenant's meetings, each hit and citation naming its meeting.

Each meeting keeps its own index; a query runs on every meeting (of the period the question names, when
it names one: "last week", "yesterday", "in March"), and the candidates are ranked on one scale: the
query's cosine similarity to the segment (the same model for every meeting) plus the idf-weighted share
of the query's terms it holds. The per-meeting fused scores are rank-normalised within their meeting, so
they cannot be compared across meetings and serve only to pick each meeting's candidates.

On PostgreSQL the candidates come from the whole tenant at once, not meeting by meeting: the nearest
segments by pgvector's HNSW index and the best keyword matches by the full-text GIN index (issue 20), so a
tenant with thousands of meetings is not searched one meeting index at a time; only the meetings holding a
candidate are read, to score their candidates on the same scale as above.

A question is answered by the meeting that holds the best candidate (with its routes: time, topic,
speaker, why), and the other meetings' best hits follow as further citations.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from meetmem.store.index.search_types import Hit
from meetmem.store.log import DEFAULT_TENANT
from meetmem.store.timecode import format_time

from .records import MAX_CITATIONS, Answer, Citation
from .speaker_names import cited_names

if TYPE_CHECKING:
    from meetmem.store.index.search import TranscriptSearch

    from .pipeline import Answerer

#: Each meeting offers this many candidates (at least `k`) to the cross-meeting ranking.
PER_MEETING = 10

_PERIOD_RE = re.compile(r"\b(last week|this week|last month|this month|yesterday|today|earlier today|"
                        r"in (january|february|march|april|may|june|july|august|september|october|november|"
                        r"december))\b|上周|这周|本周|上个月|这个月|本月|昨天|今天", re.I)


@dataclass(frozen=True, slots=True)
class CrossHit:
    meeting_id: str
    hit: Hit
    score: float

    def public(self) -> dict[str, Any]:
        return {**self.hit.public(), "score": round(self.score, 6), "meeting_id": self.meeting_id}


def period(question: str, today: dt.date) -> tuple[dt.date, dt.date, str] | None:
    """The days a question's period names (inclusive), with the words; None when it names none."""
    m = _PERIOD_RE.search(question)
    if m is None:
        return None
    said = m.group(0).lower()
    monday = today - dt.timedelta(days=today.weekday())
    if said in ("last week", "上周"):
        return monday - dt.timedelta(days=7), monday - dt.timedelta(days=1), said
    if said in ("this week", "这周", "本周"):
        return monday, monday + dt.timedelta(days=6), said
    if said in ("yesterday", "昨天"):
        day = today - dt.timedelta(days=1)
        return day, day, said
    if said in ("today", "earlier today", "今天"):
        return today, today, said
    first = today.replace(day=1)
    if said in ("last month", "上个月"):
        last = first - dt.timedelta(days=1)
        return last.replace(day=1), last, said
    if said in ("this month", "这个月", "本月"):
        return first, first.replace(day=calendar.monthrange(first.year, first.month)[1]), said
    month = list(calendar.month_name).index(m.group(2).capitalize())
    year = today.year if month <= today.month else today.year - 1
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1]), said


class CrossMeetings:
    """Search and ask over every meeting of a tenant.

    Args:
        search: the meeting search (its models are shared by every meeting).
        answerer: the per-meeting answerer (its routes answer the chosen meeting).
        today: the day "last week" counts from (injectable for tests).
    """

    def __init__(self, search: TranscriptSearch, answerer: Answerer | None = None, *,
                 today: dt.date | None = None) -> None:
        self.search = search
        self.log = search.log
        self.answerer = answerer
        self.today = today

    def meetings(self, tenant: str, question: str = "") -> tuple[list[str], str | None]:
        """The tenant's meetings, narrowed to the period the question names (when their dates are known)."""
        from meetmem.summarizers.digest import meeting_day

        ids = [m for _, m in self.log.meetings(tenant=tenant)]
        found = period(question, self.today or dt.date.today()) if question else None
        if found is None:
            return ids, None
        first, last, said = found
        dated = {m: meeting_day(self.log, m, tenant=tenant) for m in ids}
        inside = [m for m in ids if dated[m] is not None and first <= dated[m] <= last]
        if not inside:
            return ids, f'no meeting is dated {said} ({first} to {last}); searched all {len(ids)}'
        return inside, f'"{said}": the {len(inside)} meetings dated {first} to {last}'

    def find(self, query: str, *, tenant: str = DEFAULT_TENANT, k: int = 10,
             meeting_ids: list[str] | None = None) -> list[CrossHit]:
        """The `k` best segments of all the tenant's meetings, best first."""
        if getattr(self.search, "rows", None) is not None:
            return self._find_tenant_wide(query, tenant=tenant, k=k, meeting_ids=meeting_ids)
        ids = meeting_ids if meeting_ids is not None else [m for _, m in self.log.meetings(tenant=tenant)]
        dense = self.search.routes is not None
        mode = "hybrid" if dense else "bm25"
        tokens = set(self.search.tokenizer.tokens(query))
        out: list[CrossHit] = []
        vectors = None
        for meeting_id in ids:
            index = self.search.meeting_index(meeting_id, tenant=tenant)
            if not len(index):
                continue
            if dense and vectors is None:
                vectors = self.search.encode_query(meeting_id, query, tenant=tenant)
            hits = self.search.search(meeting_id, query, tenant=tenant, k=max(k, PER_MEETING), mode=mode,
                                      query_vectors=vectors)
            if not hits:
                continue
            cosines = (self.search.similarities(meeting_id, vectors, [h.segment.segment_id for h in hits],
                                                tenant=tenant) if dense and vectors else {})
            with index.lock:
                weights = {t: max(index.bm25.idf(t), 0.0) for t in tokens}
            total = sum(weights.values()) or 1.0
            for hit in hits:
                terms = set(self.search.tokenizer.tokens(hit.segment.text))
                lexical = sum(w for t, w in weights.items() if t in terms) / total
                score = 0.7 * cosines.get(hit.segment.segment_id, 0.0) + 0.3 * lexical
                out.append(CrossHit(meeting_id, hit, score))
        out.sort(key=lambda c: (-c.score, c.meeting_id, c.hit.segment.start))
        return out[:k]

    def _find_tenant_wide(self, query: str, *, tenant: str, k: int,
                          meeting_ids: list[str] | None) -> list[CrossHit]:
        """`find` on PostgreSQL: candidates by HNSW and full text across the tenant, scored as `find` scores."""
        from meetmem.store.index.search_types import vector_key

        rows = self.search.rows  # store/pg/search.py `PgSearch`
        for meeting_id in rows.lagging(tenant, meeting_ids):  # rows no indexer has reached yet
            rows.catch_up(tenant, meeting_id)
        pool = max(rows.options.pool, 5 * k)
        vectors: dict[str, Any] = {}
        candidates = dict(rows.keyword_across(tenant, query, k=pool, meeting_ids=meeting_ids))
        routes = self.search.routes
        if routes is not None:
            speaker_form = self.search.options.embed_speaker
            for name, model in routes.by_name().items():
                vectors[name] = model.encode_query(query)
                for sid, _ in rows.dense_across(tenant, vectors[name], model=vector_key(name, speaker=speaker_form),
                                                k=pool, meeting_ids=meeting_ids):
                    candidates.setdefault(sid, 0.0)
        stored = self.log.get(candidates)
        by_meeting: dict[str, list[Any]] = {}
        for segment in stored.values():
            if segment.tenant == tenant:
                by_meeting.setdefault(segment.meeting_id, []).append(segment)
        tokens = set(self.search.tokenizer.tokens(query))
        out: list[CrossHit] = []
        for meeting_id, segments in sorted(by_meeting.items()):
            index = self.search.meeting_index(meeting_id, tenant=tenant)
            cosines = (self.search.similarities(meeting_id, vectors, [s.segment_id for s in segments], tenant=tenant)
                       if vectors else {})
            with index.lock:
                weights = {t: max(index.bm25.idf(t), 0.0) for t in tokens}
            total = sum(weights.values()) or 1.0
            for segment in segments:
                terms = set(self.search.tokenizer.tokens(segment.text))
                lexical = sum(w for t, w in weights.items() if t in terms) / total
                score = 0.7 * cosines.get(segment.segment_id, 0.0) + 0.3 * lexical
                out.append(CrossHit(meeting_id, Hit(segment, score), score))
        out.sort(key=lambda c: (-c.score, c.meeting_id, c.hit.segment.start))
        return out[:k]

    def ask(self, question: str, *, tenant: str = DEFAULT_TENANT) -> Answer:
        """One answer from the meeting that holds the best match, other meetings' best hits after it; its
        JSON (`Answer.public`) is the CONTRACT's answer shape, every citation with its `meeting_id`, plus
        `meeting_id` (the meeting answered from, null when nothing matched)."""
        assert self.answerer is not None
        ids, narrowed = self.meetings(tenant, question)
        hits = self.find(question, tenant=tenant, k=MAX_CITATIONS, meeting_ids=ids)
        if not hits:
            return Answer(question, "verbatim", "Nothing in this tenant's meetings matches the question.", (),
                          route="across", route_reason=narrowed or f"searched {len(ids)} meetings", across=True)
        best = hits[0].meeting_id
        answer = self.answerer.ask(best, question, tenant=tenant)
        meta = self.log.meta(best, tenant=tenant)
        label = meta.title or best
        if meta.started_at:
            label += f", {meta.started_at[:16].replace('T', ' ')}"
        citations = [replace(c, meeting_id=best) for c in answer.citations]
        seen = {c.segment_id for c in citations}
        for other in hits:
            if len(citations) >= MAX_CITATIONS:
                break
            seg = other.hit.segment
            if seg.segment_id not in seen:
                named = cited_names(self.log, other.meeting_id, tenant, [seg.speaker] if seg.speaker else [])
                citations.append(Citation.of(seg, named.get(seg.speaker or ""), meeting=True))
                seen.add(seg.segment_id)
        also = sorted({h.meeting_id for h in hits if h.meeting_id != best})
        text = f"In meeting {label}:\n{answer.answer}"
        if also:
            text += "\n(Also mentioned in: " + ", ".join(also) + ".)"
        reason = (f"searched {len(ids)} meetings" + (f" ({narrowed})" if narrowed else "")
                  + f"; the best match is in {best} at {format_time(hits[0].hit.segment.start)}"
                  + f"; there: {answer.route} ({answer.route_reason})")
        params = {"meetings_searched": len(ids), "answered_from": best, "there": {"route": answer.route,
                                                                                 **answer.params}}
        if narrowed:
            params["period"] = narrowed
        return Answer(question, answer.kind, text, tuple(citations), answer.manifest, route="across",
                      route_reason=reason, params=params, meeting_id=best, across=True)
