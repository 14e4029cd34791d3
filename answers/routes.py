"""Answers to time, topic, speaker and why questions (`question_routes`), each citing inside its span.

- **time**: the stretch of the meeting the question names, from the ledger items and the L1 summary
  lines that fall in it, topped up with the stretch's own most informative sentences; every citation
  lies inside the range.
- **topic**: the ledger items of the kind asked for (decisions, todos, open questions) about the topic,
  found by retrieval over the items' text and the segments they cite. When the ledger holds none, the
  transcript's best sentences on the topic that carry a decision or a commitment.
- **speaker**: the named speaker's turns, ranked by the topic.
- **why**: the reasons said around the choice: the anchor (the best turn about the topic, by the named
  speaker when the question names one) and, within a few minutes before it and just after, the turns on
  the same topic that give a reason ("because", "so that", "因为").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from meetmem.store.index.search_types import Hit, SearchFilters
from meetmem.store.records import LedgerItem, MeetingDigest, Segment
from meetmem.store.speaker_map import read_current
from meetmem.store.timecode import format_time
from meetmem.summarizers.extractive import sentences, trim_fillers

from .answer_types import AnswerKind
from .questions import MeetingClock
from .records import Written
from .speaker_names import apply_names, names_by_label
from .speakers import SpeakerDirectory, build_directory
from .tokens import count_tokens

if TYPE_CHECKING:
    from meetmem.store.index.search import TranscriptSearch

    from .plan import Plan

log = logging.getLogger(__name__)

_MAX_LINES = 6
#: A why question looks for reasons this far before the anchor, and this far after it (seconds).
WHY_BEFORE_S = 300.0
WHY_AFTER_S = 90.0
_REASON_RE = re.compile(r"\b(?:because|'cause|cause|since|so that|in order to|the reason|that's why|which is why|"
                        r"due to|otherwise|so (?:people|users?|they)|that way|means that|easier|safer|"
                        r"cheaper|better than|more \w+ than|compared (?:to|with)|rather than|instead of|advantage|"
                        r"drawback|problem|won't|can't|cannot|doesn't|wouldn't|not (?:a )?(?:good|great) idea|"
                        r"research|survey|trends?|users? (?:want|like|find)|people (?:want|like|find))\b"
                        r"|因为|由于|所以|为了|原因|这样", re.I)
COMMIT_RE = re.compile(r"\b(?:decid\w*|agree\w*|go(?:ing)? (?:for|with)|we'll|we will|we should|let's|we're gonna|"
                        r"we are going to|settle\w*|final\w*|definitely|choose|chose|stick with|not going|"
                        r"will (?:be|have|use|send|do|make|work)|gonna (?:be|have|use|do|make|work)|"
                        r"(?:is|are) going to|owns?|responsible|take care of|in charge|no need|don't need|"
                        r"we said|we'd do|we've got|we want|it'll be|gonna have|would say)\b"
                        r"|决定|定为|就用|负责|我来|会在", re.I)
_BACKCHANNEL_WORDS = 4
ASKING_RE = re.compile(r"\?\s*$|^\W*(?:(?:so|and|but|um|uh|okay)\W+)*(?:what|which|who|how|why|is|are|does|do|did|"
                        r"can|could|should|would|shall)\b|吗[？?]?$|[？?]$", re.I)
_TENTATIVE_RE = re.compile(r"\b(?:if (?:we|you|they)|maybe|might|perhaps|i dunno|not sure|i wonder)\b|如果|也许|可能",
                           re.I)


def _cite_key(segment: Segment) -> float:
    return segment.start


class RouteRetrieval:
    """The time, topic, speaker, why and decision routes over the search, the log and the stored digests.

    Args:
        search: the meeting search (and through it, the log).
        digests: the meeting's stored digest, `digests(meeting_id, tenant=...)`; never waits for one.
    """

    def __init__(self, search: TranscriptSearch, digests: Callable[..., MeetingDigest | None] | None = None) -> None:
        self.search = search
        self.log = search.log
        self.digests = digests

    def find(self, meeting_id: str, question: str, plan: Plan, *, tenant: str) -> Written:
        """The draft answer of a routed plan, in the transcript's and the ledger's own words."""
        handler = {"time": self._time, "topic": self._topic, "speaker": self._speaker, "why": self._why}
        return handler[plan.route](meeting_id, tenant, question, plan)

    def clock(self, meeting_id: str, *, tenant: str, device_id: str | None = None) -> MeetingClock:
        """The meeting's clock: its end so far, its wall-clock start, and where the asking device joined."""
        from meetmem.summarizers.digest import meeting_wall_start

        _, end = self.log.meeting_stats(meeting_id, tenant=tenant)
        joined = None
        if device_id:
            joined = self.log.device_first_start(meeting_id, device_id, tenant=tenant)
        return MeetingClock(end=end, started_at=meeting_wall_start(self.log, meeting_id, tenant=tenant),
                            joined_at=joined)

    def directory(self, meeting_id: str, *, tenant: str) -> SpeakerDirectory:
        """Who is who: the labels, with the participants' names, introductions, stated roles and the map's names."""
        segments = self.log.segments(meeting_id, tenant=tenant)
        meta = self.log.meta(meeting_id, tenant=tenant)
        related: list[Segment] = []
        if meta.participants:
            for _, other in self.log.meetings(tenant=tenant):
                if other != meeting_id and self.log.meta(other, tenant=tenant).participants == meta.participants:
                    related.extend(self.log.segments(other, tenant=tenant))
        directory = build_directory(segments, meta.participants or (), related)
        apply_names(directory, names_by_label(segments, read_current(self.log, meeting_id, tenant=tenant)))
        return directory

    # -- helpers ----------------------------------------------------------------------------------------
    def hits(self, meeting_id: str, tenant: str, query: str, *, k: int = 10,
              filters: SearchFilters | None = None) -> list[Hit]:
        """The hits for a route's query (the topic words, acronyms also spelled as said), best first."""
        if not query.strip():
            return []
        mode = "hybrid" if self.search.routes is not None else "bm25"
        return self.search.search(meeting_id, spelled_acronyms(query), tenant=tenant, k=k, mode=mode,
                                  filters=filters)

    def _digest(self, meeting_id: str, tenant: str) -> MeetingDigest | None:
        return None if self.digests is None else self.digests(meeting_id, tenant=tenant)

    @staticmethod
    def _written(kind: AnswerKind, text: str, cited: Sequence[Segment], reasons: dict[str, str],
                 blocks: Sequence[tuple[str, int, str]] = (), evidence: Sequence[Segment] = ()) -> Written:
        return Written(kind, text, tuple(cited), reasons, tuple(blocks), evidence=tuple(evidence))

    @staticmethod
    def _quote(segment: Segment, text: str | None = None) -> str:
        who = f"{segment.speaker}, " if segment.speaker else ""
        return f'"{trim_fillers(text or segment.text)}" ({who}{format_time(segment.start)})'

    # -- time -------------------------------------------------------------------------------------------
    def _time(self, meeting_id: str, tenant: str, question: str, plan: Plan) -> Written:
        assert plan.start is not None and plan.end is not None
        a, b = plan.start, plan.end
        segments = self.log.segments(meeting_id, tenant=tenant, start=a, end=b)
        inside = [s for s in segments if a <= s.start <= b]
        if not inside:
            return self._written("overview", f"Nothing was said between {format_time(a)} and {format_time(b)}.",
                                 [], {})
        by_id = {s.segment_id: s for s in inside}
        digest = self._digest(meeting_id, tenant)
        lines: list[tuple[float, str, Segment, str]] = []
        if digest is not None:
            for item in digest.ledger:
                if item.status != "current" or item.kind not in ("decision", "todo", "open_question", "fact"):
                    continue
                first = next((by_id[i] for i in item.source.segment_ids if i in by_id), None)
                if first is not None:
                    label = {"decision": "Decision", "todo": "To do", "open_question": "Open question",
                             "fact": "Fact"}[item.kind]
                    lines.append((first.start, f"{label}: {item.text}", first, f"ledger {item.kind} in range"))
            for section in digest.sections:
                for line in section.lines:
                    first = next((by_id[i] for i in line.source.segment_ids if i in by_id), None)
                    if first is not None:
                        lines.append((first.start, line.text, first, "L1 summary line in range"))
        if plan.topic:
            # "what did we say about the price in the last 10 minutes?": the range's turns on the topic.
            for hit in self.hits(meeting_id, tenant, plan.topic, k=3, filters=SearchFilters(start=a, end=b)):
                if hit.segment.segment_id in by_id:
                    lines.append((hit.segment.start, trim_fillers(hit.segment.text), hit.segment,
                                  "on the question's topic, in range"))
        if len({ln[2].segment_id for ln in lines if _content(ln[1]) >= 8}) < 4:
            for segment, sentence in _informative(inside, 4):
                lines.append((segment.start, sentence, segment, "an informative sentence in range"))
        seen: set[str] = set()
        kept: list[tuple[float, str, Segment, str]] = []
        for entry in sorted(lines, key=lambda ln: ln[0]):
            if entry[1] in seen:
                continue
            seen.add(entry[1])
            kept.append(entry)
        kept = _best_lines(kept, _MAX_LINES)
        head = f"Between {format_time(a)} and {format_time(b)}:"
        text = head + "\n" + "\n".join(f"- {t} ({_who(s)}{format_time(s.start)})" for _, t, s, _ in kept)
        reasons = {s.segment_id: why for _, _, s, why in kept}
        block = (f"range {format_time(a)}-{format_time(b)}", count_tokens(text), plan.reason)
        return self._written("overview", text, [s for _, _, s, _ in kept], reasons, [block], evidence=inside)

    # -- topic ------------------------------------------------------------------------------------------
    def ledger_matches(self, meeting_id: str, tenant: str, topic: str, focus: Sequence[str],
                       hits: Sequence[Hit], *, every: bool = False, min_lexical: float = 0.0) -> list[LedgerItem]:
        """The current ledger items of the kinds in `focus` about the topic, best first: scored by the topic's
        words in the item and by how high retrieval ranks the segments the item cites (`every`: all the
        current items of those kinds, in ledger order). `min_lexical`: an item must hold more than this share
        of the topic's words, unless retrieval ranks its segment near the top."""
        digest = self._digest(meeting_id, tenant)
        if digest is None:
            return []
        rank = {h.segment.segment_id: (len(hits) - i) / len(hits) for i, h in enumerate(hits)}
        terms = set(self.search.tokenizer.tokens(topic))
        scored: list[tuple[float, LedgerItem]] = []
        for item in digest.ledger:
            if item.status != "current" or item.kind not in focus:
                continue
            if every:
                scored.append((0.0, item))
                continue
            item_terms = set(self.search.tokenizer.tokens(item.text))
            lexical = len(terms & item_terms) / (len(terms) or 1)
            retrieval = max((rank.get(sid, 0.0) for sid in item.source.segment_ids), default=0.0)
            if lexical > min_lexical or retrieval >= 0.8:
                scored.append((lexical + 0.6 * retrieval, item))
        scored.sort(key=lambda pair: -pair[0])
        return [item for _, item in scored]

    def _topic(self, meeting_id: str, tenant: str, question: str, plan: Plan) -> Written:
        hits = self.hits(meeting_id, tenant, plan.topic, k=30)
        titles = {"decision": "Decisions", "todo": "To do", "open_question": "Open questions"}
        matched = self.ledger_matches(meeting_id, tenant, plan.topic, plan.focus, hits)
        if matched:
            items = matched[:5]
            cited_ids = [item.source.segment_ids[0] for item in items if item.source.segment_ids]
            found = self.log.get(cited_ids)
            cited = [found[sid] for sid in cited_ids if sid in found]
            lines = []
            for item in items:
                label = titles.get(item.kind, item.kind)
                lines.append(f"- {label[:-1] if label.endswith('s') else label}: {item.text} "
                             f"({format_time(item.source.start)})")
            text = f'About "{plan.topic}":\n' + "\n".join(lines)
            reasons = {s.segment_id: "cited by a ledger item about the topic" for s in cited}
            # The transcript's own best turns on the topic follow, so the decision's context is one click away.
            cited += [h.segment for h in hits[:3]]
            for h in hits[:3]:
                reasons.setdefault(h.segment.segment_id, "retrieved for the topic")
            block = (f"ledger: {', '.join(plan.focus)} about the topic ({len(items)})", count_tokens(text),
                     "retrieval over the items and their cited segments")
            return self._written("overview", text, cited, reasons, [block])
        if not hits:
            return nothing_matches("overview")
        # Nothing in the ledger: the transcript's turns on the topic that commit to something; a decision
        # is usually restated as it is settled, so later turns weigh a little more.
        _, end = self.log.meeting_stats(meeting_id, tenant=tenant)

        def fallback_score(position: int, hit: Hit) -> float:
            s = hit.segment
            score = ((len(hits) - position) / len(hits) + (0.8 if COMMIT_RE.search(s.text) else 0.0)
                     + 0.5 * (s.start / end if end else 0.0) + min(_words(s.text), 15) / 15)
            if all(ASKING_RE.search(part) for part in sentences(s.text)):
                score -= 0.8  # a question raised is not a decision taken
            if _TENTATIVE_RE.search(s.text):
                score -= 0.4
            return score

        ranked = sorted(enumerate(hits[:20]), key=lambda pair: -fallback_score(*pair))
        chosen = [h for _, h in ranked if _words(h.segment.text) >= 5][:3] or hits[:3]
        committing = [h for h in chosen if COMMIT_RE.search(h.segment.text)]
        kind = " / ".join(titles.get(f, f).lower() for f in plan.focus)
        text = (f'The ledger holds no {kind} about "{plan.topic}". What was said:\n'
                + "\n".join(f"- {self._quote(h.segment)}" for h in chosen))
        reasons = {h.segment.segment_id: ("retrieved for the topic; states a decision or commitment"
                                          if h in committing else "retrieved for the topic") for h in chosen}
        return self._written("overview", text, [h.segment for h in chosen], reasons)

    # -- speaker ----------------------------------------------------------------------------------------
    def _shown(self, meeting_id: str, tenant: str, label: str) -> str:
        """A label as the answer shows it: with its name in the meeting's speaker map ("Priya (S2)")."""
        names = names_by_label(self.log.segments(meeting_id, tenant=tenant),
                               read_current(self.log, meeting_id, tenant=tenant))
        return f"{names[label][0]} ({label})" if label in names and names[label][0] != label else label

    def _speaker(self, meeting_id: str, tenant: str, question: str, plan: Plan) -> Written:
        label = plan.speaker
        assert label is not None  # the plan takes the speaker route only for a resolved speaker
        own = SearchFilters(speaker=label)
        if plan.topic:
            hits = [h for h in self.hits(meeting_id, tenant, plan.topic, k=10, filters=own)
                    if _words(h.segment.text) >= 3] or self.hits(meeting_id, tenant, plan.topic, k=5, filters=own)
            # After the best turn, only turns that share a word with the topic: a speaker's nearest
            # neighbours by meaning alone are often unrelated ("The project documents.").
            chosen = [h.segment for i, h in enumerate(hits[:5]) if i == 0 or h.bm25_rank is not None][:3]
        else:
            chosen = []
        head = f"{self._shown(meeting_id, tenant, label)} said:"
        why = f"said by {label}, ranked by the topic"
        if not chosen:
            # Nothing of theirs on the topic's words ("what options did the UI designer put forward?"): what
            # they said that carries most, rather than nothing.
            theirs = [s for s in self.log.segments(meeting_id, tenant=tenant) if s.speaker == label]
            chosen = [s for s, _ in _informative(theirs, 4)]
            if plan.topic:
                head = (f'{self._shown(meeting_id, tenant, label)} did not say "{plan.topic}" in so many words; '
                        "what they said that carries most:")
            why = f"said by {label}, among their most informative sentences"
        if not chosen:
            return self._written("verbatim", f"{label} said nothing about that in this meeting.", [], {})
        text = head + "\n" + "\n".join(f"- {self._quote(s)}" for s in chosen)
        return self._written("verbatim", text, chosen, {s.segment_id: why for s in chosen})

    # -- why --------------------------------------------------------------------------------------------
    def _why(self, meeting_id: str, tenant: str, question: str, plan: Plan) -> Written:
        label = plan.speaker
        topic = plan.topic
        if label and plan.speaker_mention:
            # "why did marketing want an LCD?": "marketing" names the speaker, not the subject.
            drop = {w.lower() for w in re.findall(r"\w+", plan.speaker_mention)}
            topic = " ".join(w for w in topic.split() if w.lower() not in drop) or topic
        anchors = self.hits(meeting_id, tenant, topic, k=5, filters=SearchFilters(speaker=label)) if label else []
        anchors = anchors or self.hits(meeting_id, tenant, topic, k=5)
        if not anchors:
            return nothing_matches("verbatim")
        # The anchor is a statement about the topic, not a word of it said alone ("L_C_D_.").
        anchor = next((h.segment for h in anchors if _words(h.segment.text) >= 5), anchors[0].segment)
        window = SearchFilters(start=max(0.0, anchor.start - WHY_BEFORE_S), end=anchor.end + WHY_AFTER_S)
        pool = {h.segment.segment_id: h.segment for h in self.hits(meeting_id, tenant, topic, k=25, filters=window)}
        pool.update({h.segment.segment_id: h.segment for h in self.hits(meeting_id, tenant, topic, k=15)})
        pool[anchor.segment_id] = anchor
        cosines: dict[str, float] = {}
        if self.search.routes is not None:
            vectors = self.search.encode_query(meeting_id, spelled_acronyms(topic), tenant=tenant)
            cosines = self.search.similarities(meeting_id, vectors, list(pool), tenant=tenant)
        terms = set(self.search.tokenizer.tokens(spelled_acronyms(topic)))
        scored: list[tuple[float, Segment]] = []
        for s in pool.values():
            if _words(s.text) < _BACKCHANNEL_WORDS:
                continue
            lexical = len(terms & set(self.search.tokenizer.tokens(s.text))) / (len(terms) or 1)
            near = window.start <= s.start <= window.end  # type: ignore[operator]
            score = cosines.get(s.segment_id, 0.0) + 0.5 * lexical + (0.35 if _REASON_RE.search(s.text) else 0.0)
            score += (0.1 if label and s.speaker == label else 0.0) - (0.0 if near else 0.25)
            scored.append((score, s))
        scored.sort(key=lambda pair: -pair[0])
        reasons_found = [s for _, s in scored if _REASON_RE.search(s.text)][:3]
        cited = reasons_found + [anchor] + [s for _, s in scored[:3]]
        cited = list({s.segment_id: s for s in cited}.values())[:5]
        who = f" ({label})" if label else ""
        if reasons_found:
            text = "Reasons given:\n" + "\n".join(f"- {self._quote(s)}" for s in reasons_found)
        else:
            text = "No reason was stated in so many words; what was said around it:\n" + "\n".join(
                f"- {self._quote(s)}" for s in cited[:3])
        text += f"\nAbout: {self._quote(anchor)}{who}"
        reasons = {s.segment_id: "gives a reason, near the anchor" for s in reasons_found}
        reasons.setdefault(anchor.segment_id, "the anchor: the best turn on the topic"
                           + (f" by {label}" if label else ""))
        return self._written("verbatim", text, cited, reasons)


def nothing_matches(kind: AnswerKind) -> Written:
    return Written(kind, "Nothing in this meeting's transcript matches the question.")


def spelled_acronyms(query: str) -> str:
    """The query with each short acronym also in the spelled-out form transcribers write ("LCD" ->
    "LCD L_C_D_", the AMI convention), so a question typed as people write it finds the letters as said."""
    extra = [("_".join(w.upper()) + "_") for w in re.findall(r"\b[A-Za-z]{2,4}\b", query)
             if (w.isupper() or w.lower() in _KNOWN_ACRONYMS)]
    return query if not extra else f"{query} {' '.join(extra)}"


_KNOWN_ACRONYMS = frozenset("lcd led tv usb pdf ui ux api rsi vcr dvd pc cd gps".split())


def _who(segment: Segment) -> str:
    return f"{segment.speaker}, " if segment.speaker else ""


def _words(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9]+|[\u4e00-\u9fff]", text))


def _content(sentence: str) -> float:
    """How much a sentence says: its words (up to 25), more with a number or a commitment, less per filler."""
    size = _words(sentence)
    if size < 5:
        return 0.0
    bonus = 3.0 if re.search(r"\d", sentence) else 0.0
    bonus += 2.0 if COMMIT_RE.search(sentence) else 0.0
    fillers = len(re.findall(r"\b(?:um|uh|mm|hmm|like|you know|i mean|i think|yeah|okay)\b", sentence, re.I))
    return min(size, 25) + bonus - 2.0 * fillers


def _informative(segments: Sequence[Segment], n: int) -> list[tuple[Segment, str]]:
    """The `n` sentences of the segments that carry most content (long, not filler, with values first)."""
    scored: list[tuple[float, Segment, str]] = []
    for s in segments:
        for sentence in sentences(s.text):
            sentence = trim_fillers(sentence)
            score = _content(sentence)
            if score > 0:
                scored.append((score, s, sentence))
    scored.sort(key=lambda t: -t[0])
    picked = sorted(scored[:n], key=lambda t: t[1].start)
    return [(s, sentence) for _, s, sentence in picked]


_PRIORITY = {"ledger": 100.0, "on the question's topic, in range": 20.0, "L1 summary line in range": 4.0}


def _best_lines(lines: list[tuple[float, str, Segment, str]], n: int) -> list[tuple[float, str, Segment, str]]:
    """At most `n` lines, one per segment: ledger items first, then what says most; in time order."""
    def score(line: tuple[float, str, Segment, str]) -> float:
        kind = "ledger" if line[3].startswith("ledger") else line[3]
        return _PRIORITY.get(kind, 0.0) + _content(line[1])

    chosen: dict[str, tuple[float, str, Segment, str]] = {}
    for line in sorted(lines, key=lambda ln: -score(ln)):
        if len(chosen) >= n:
            break
        if line[2].segment_id not in chosen and (score(line) > 0 or line[3].startswith("ledger")):
            chosen[line[2].segment_id] = line
    return sorted(chosen.values(), key=lambda ln: ln[0])
