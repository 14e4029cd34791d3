"""The default summarizer: picks the sentences that carry a section, word for word, so it cannot drift.

No language model: a line of a summary is a sentence (or, for a long one, a clause) of the transcript,
stripped only of leading fillers ("um, so, ..."), never reworded. Numbers, names and dates come out as
they were said, and every line cites the segment it was taken from.

Sentences are chosen with SumBasic (Nenkova and Vanderwende, 2005): a sentence scores the mean
probability of its content words in the section, with a bonus for the values people ask about (numbers,
dates, names); after each pick the probabilities of the words it used are squared, so the next pick says
something else. L2 runs the same selection over the meeting's L1 lines: it is made from the L1s alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from meetmem.store.records import Section, SectionSummary, Segment, Source, SummaryLine

# A Latin stop ends a sentence only before a space or the end, so "6.05 p.m." and "$4.5 million" stay
# whole; a Chinese one always does (Chinese puts no space after it).
_SENTENCE_RE = re.compile(r"(?:[^.!?;。！？；]|[.!?;](?![\s.!?;]|$))+(?:[.!?;]+(?=\s|$)|[。！？；]+|$)")
_CLAUSE_RE = re.compile(r"[^,，、:：]+(?:[,，、:：]+|$)")
_LEADING_FILLER_RE = re.compile(
    r"^(?:(?:um+|uh+|er+|erm|ah+|oh|mm+|hmm+|so|well|okay|ok|yeah|yes|right|and|but|like|you know|i mean|anyway"
    r"|嗯+|呃+|啊+|那个|就是|然后|所以)\b[\s,.，。]*)+",
    re.IGNORECASE,
)
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
#: What the lines record as having made them (`SummaryLine.made_by`).
MADE_BY = ("rules", "extractive")
_VALUE_RE = re.compile(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october|november|december|monday"
    r"|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today)\b"
    r"|[一二三四五六七八九十百千万两]+[元块万号日月点个台]|周[一二三四五六日末]|星期|明天|下周",
    re.IGNORECASE,
)
_SMALL_TALK_RE = re.compile(
    r"^(?:good (?:morning|afternoon|evening)|hi|hello|hey|thanks|thank you|bye|see you|welcome)\b"
    r"|^(?:你好|大家好|谢谢|再见)",
    re.IGNORECASE,
)
# Words of talk about talking: frequent in every section, telling nothing about any (stems, as the
# tokenizer gives them).
_DISCOURSE = frozenset(
    "think just kind gonna wanna gotta know mean guess sort realli actual basic thing stuff sure yes yeah right "
    "okay go get got say said want need look lot probabl mayb someth like way see one two let".split()
)
_DISFLUENT_RE = re.compile(r"\b(um+|uh+|er+|erm|mm+|hmm+)\b|\b(\w+) \2\b|嗯|呃", re.IGNORECASE)
_NAME_RE = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+|\b[A-Z]{2,}[-\d]*\b")


def sentences(text: str) -> list[str]:
    """The sentences of a segment, each a verbatim substring of it (stripped)."""
    found = [m.group(0).strip() for m in _SENTENCE_RE.finditer(text)]
    return [s for s in found if s] or [text.strip()]


def trim_fillers(text: str) -> str:
    """Drop fillers at the start of a sentence ("Um, so we ..." -> "we ..."); the rest stays verbatim."""
    trimmed = _LEADING_FILLER_RE.sub("", text).strip()
    return trimmed or text.strip()


def _size(text: str) -> int:
    """Words for English, characters for Chinese: the unit `min_size` and `max_size` count in."""
    cjk = len(_CJK_RE.findall(text))
    return cjk + len(re.findall(r"[A-Za-z0-9]+", text)) if cjk else len(text.split())


@dataclass(frozen=True, slots=True)
class ExtractiveOptions:
    """How much an extractive summary holds.

    Args:
        l1_lines: lines per section (L1).
        l2_lines: lines for the whole meeting (L2), at most; fewer when there are fewer sections.
        min_size: a candidate needs this many words (CJK: characters); backchannels are not summaries.
        max_size: a longer sentence competes as its clauses instead.
        value_bonus: how much a number, date or name lifts a sentence (people ask for exactly those).
    """

    l1_lines: int = 3
    l2_lines: int = 8
    min_size: int = 6
    max_size: int = 40
    value_bonus: float = 0.5


@dataclass(frozen=True, slots=True)
class _Candidate:
    text: str
    source: Source
    order: tuple[float, int]


class ExtractiveSummarizer:
    """SumBasic over verbatim sentences (the default summarizer: needs no language model)."""

    name = "extractive"

    def __init__(self, options: ExtractiveOptions | None = None) -> None:
        from meetmem.store.index.tokenize import MeetingTokenizer

        self.options = options or ExtractiveOptions()
        self.tokenizer = MeetingTokenizer()

    def summarize_section(self, section: Section, segments: Sequence[Segment]) -> SectionSummary:
        candidates: list[_Candidate] = []
        for segment in segments:
            source = Source(segment.start, segment.end, (segment.segment_id,))
            for n, unit in enumerate(self._units(segment.text)):
                candidates.append(_Candidate(unit, source, (segment.start, n)))
        picked = self._select(candidates, self.options.l1_lines)
        if not picked and segments:
            longest = max(segments, key=lambda s: (_size(s.text), -s.start))
            picked = [_Candidate(trim_fillers(longest.text), Source.of([longest]), (longest.start, 0))]
        lines = tuple(SummaryLine(c.text, c.source, MADE_BY) for c in picked)
        return SectionSummary(section, lines, backend=self.name)

    def summarize_meeting(
        self, sections: Sequence[SectionSummary], segments: Mapping[str, Segment]
    ) -> tuple[SummaryLine, ...]:
        candidates = [
            _Candidate(line.text, line.source, (line.source.start, n))
            for summary in sections
            for n, line in enumerate(summary.lines)
        ]
        wanted = min(self.options.l2_lines, max(len(sections), 1) + 2)
        return tuple(SummaryLine(c.text, c.source, MADE_BY) for c in self._select(candidates, wanted, min_size=1))

    # -- selection --------------------------------------------------------------------------------------
    def _units(self, text: str) -> list[str]:
        """Sentences, with fillers trimmed; a very long one split into its clauses."""
        out: list[str] = []
        for sentence in sentences(text):
            if _size(sentence) <= self.options.max_size:
                out.append(trim_fillers(sentence))
                continue
            clause = ""
            for part in (m.group(0) for m in _CLAUSE_RE.finditer(sentence)):
                if clause and _size(clause + part) > self.options.max_size:
                    out.append(trim_fillers(clause.strip()))
                    clause = ""
                clause += part
            if clause.strip():
                out.append(trim_fillers(clause.strip()))
        return [u for u in out if u]

    def _select(self, candidates: Sequence[_Candidate], wanted: int, *,
                min_size: int | None = None) -> list[_Candidate]:
        floor = self.options.min_size if min_size is None else min_size
        terms = {id(c): [t for t in self.tokenizer.tokens(c.text) if t not in _DISCOURSE] for c in candidates}
        counts = Counter(t for c in candidates for t in set(terms[id(c)]))
        total = sum(counts.values()) or 1
        prob = {t: n / total for t, n in counts.items()}
        pool = [c for c in candidates if _size(c.text) >= floor and terms[id(c)]]
        picked: list[_Candidate] = []
        seen_texts: set[str] = set()
        while pool and len(picked) < wanted:
            def score(c: _Candidate) -> tuple[float, float]:
                words = set(terms[id(c)])
                base = sum(prob[t] for t in words) / len(words)
                values = len(_VALUE_RE.findall(c.text)) + len(_NAME_RE.findall(c.text))
                if _SMALL_TALK_RE.search(c.text):
                    values = -1  # greetings name people but say nothing about the meeting
                size = _size(c.text)
                # A fuller sentence says more than a fragment; a question, a stumble or a broken-off
                # sentence states less. These shape the choice only: the line is never rewritten.
                fullness = min(1.0, size / 15) ** 0.5
                shape = (0.6 if c.text.rstrip().endswith(("?", "？")) else 1.0) / (
                    1.0 + 2.0 * len(_DISFLUENT_RE.findall(c.text)) / max(size, 1))
                value = 1.0 + self.options.value_bonus * min(values, 2)
                return base * value * fullness * shape, -c.order[0]

            best = max(pool, key=score)
            pool.remove(best)
            key = best.text.casefold()
            if key in seen_texts:
                continue
            seen_texts.add(key)
            picked.append(best)
            for t in set(terms[id(best)]):
                prob[t] = prob[t] ** 2
        return sorted(picked, key=lambda c: c.order)
