"""Summary lines people would write down: whole statements, chosen by a learned scorer, in the speaker's words.

SumBasic over verbatim sentences (`extractive`) picks by word frequency, so on real meetings its lines are
fragments ("the buttons and what it does and that sort of thing.") and repeats. Here a candidate line is a
whole statement: one speaker's adjacent utterances joined until the clause closes (a statement broken off
by a comma, a conjunction, a preposition or an article goes on with the speaker's next utterance, past
another speaker's interjection, or is never a line), cleaned of fillers, stutters and false starts
(`edge.cleaning`: numbers, names and negations kept), citing every utterance whose words it holds.

Statements are ranked by the learned head's `summary` score of their utterances (the probability that
AMI's annotators would put the utterance in a meeting's extractive summary: `ledger_learned.UtteranceScorer`,
trained on the tune half of AMI dev), a statement scoring as its weakest utterance, since every utterance it
cites should be one worth citing; a statement sharing most of its content words with a line already picked
is passed over, so no two lines say the same thing. Backchannels and connectives ("Okay.", "So, um,") are
never lines and never open one. L2 ranks the meeting's L1 lines by the same scores (their cited
utterances', scored within their section as for L1), so it is made from the L1s alone. The options were
chosen on the tune half with heads fitted on one half of its series and scored on the other
(`meetmem bench summaries-ami`).

English only: a section that is not mostly English gets the extractive summarizer's lines, and so does
every section when the head or the embedding model cannot be loaded (said in the summary's note).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from meetmem.store.records import Section, SectionSummary, Segment, Source, SummaryLine

from .base import Summarizer
from .detector import is_english
from .extractive import ExtractiveSummarizer, trim_fillers

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

#: The head's label this summarizer ranks by.
LABEL = "summary"

# A line ending on one of these stopped mid-clause ("... and the", "... because of"): conjunctions,
# prepositions, articles and possessives. Words that often close a clause in speech ("I think so", "do it",
# "yes we can") are not here; after a full stop only an article or a conjunction counts ("... and the.").
_OPEN_END_WORDS = frozenset("""
a an the and or but nor because cause 'cause since unless until while whereas although though if than whether
of to in on at by for with from into onto about as like via per within through over under between after before
during against among around upon toward towards my your our their his her its i we he she they i'm we're
you're they're there's gonna wanna
""".split())
_CLOSED_OPEN_END_WORDS = frozenset("a an the and or but nor because cause 'cause whereas although".split())
_OPEN_END_MARKS = (",", ";", ":", "-", "—", "–", "…", "...", "(", "/", "&")
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
_CONTENT_RE = re.compile(r"[a-z0-9]+")
_BACKCHANNEL = re.compile(
    r"^\W*(?:(?:um+|uh+|mm+|hmm+|mm-hmm|uh-huh|yeah|yes|yep|yup|no|nope|okay|ok|right|alright|oh|ah|so|well|sure|"
    r"cool|great|good|fine|true|exactly|absolutely|definitely|i see|i think so|i guess|i don't know|thanks|"
    r"thank you|that's right|that's true|that's it|of course|fair enough|and|but|or|anyway|then|like|you know|"
    r"i mean|so yeah|let's see)\W*)+$",
    re.IGNORECASE,
)
_STOP = frozenset("""
a an the and or but so to of in on at for with by from is are was were be been being will would should could
can shall it its this that these those we i you he she they them us our your my me um uh just then also yes
yeah okay ok well like do does did have has had going gonna go let's let there what which who all about as if
into up out more very some any one think know mean thing things kind sort really actually maybe probably
get got want need say said see right way lot be i'm it's that's we're you're don't
""".split())


def ends_mid_clause(text: str) -> bool:
    """Whether a line stops before its clause does: on a comma, a dash, a conjunction, a preposition, an article.

    Used for the choice of lines and by `meetmem bench summaries-ami` to count broken lines.
    """
    stripped = text.rstrip()
    if not stripped:
        return False
    if stripped.endswith(_OPEN_END_MARKS):
        return True
    words = _WORD_RE.findall(stripped)
    if not words:
        return False
    last = words[-1].lower().replace("’", "'")
    if stripped[-1] in ".!?\"”’)":
        return last in _CLOSED_OPEN_END_WORDS
    return last in _OPEN_END_WORDS


def content_words(text: str) -> frozenset[str]:
    """The words a line says something with (lower case, stop words out, a plural's "s" dropped)."""
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") else w
                     for w in _CONTENT_RE.findall(text.lower().replace("’", "'")) if w not in _STOP)


def same_thing(a: frozenset[str], b: frozenset[str], *, overlap: float) -> bool:
    """Whether two lines say the same thing: most of the shorter one's content words are in the other."""
    if not a or not b:
        return a == b
    return len(a & b) / min(len(a), len(b)) >= overlap


class UtteranceScores(Protocol):
    """What ranks utterances (`ledger_learned.UtteranceScorer`): a score per label for each segment."""

    def scores(self, segments: Sequence[Segment]) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True, slots=True)
class LearnedOptions:
    """How lines are made and how many (chosen on the tune half of AMI dev).

    Args:
        l1_lines: lines per section, at most;
        words_per_line: a section gets one line per this many of its words (at least one, at most
            `l1_lines`).
        l2_lines: lines for the whole meeting (L2), at most (and at most two more than there are sections).
        min_words: a statement needs this many words after cleaning (backchannels never are lines).
        max_words: a statement still open at this many words is closed (and used only if it ends whole).
        join_gap_s: the longest silence across which a speaker's broken-off statement goes on.
        overlap: two lines sharing this fraction of the shorter one's content words say the same thing.
        aggregate: a statement's score from its utterances' scores: `min` (a line is as good as the weakest
            utterance it cites, since each citation counts), `mean` or `max`.
    """

    l1_lines: int = 3
    words_per_line: int = 150
    l2_lines: int = 8
    min_words: int = 6
    max_words: int = 60
    join_gap_s: float = 6.0
    overlap: float = 0.6
    aggregate: str = "min"


@dataclass(frozen=True, slots=True)
class Statement:
    """A candidate line: the cleaned words of one speaker's utterances, citing them (indices into the section)."""

    text: str
    members: tuple[int, ...]
    whole: bool  # it ends where its clause does


@dataclass
class _Open:
    """A statement still going on: its utterances, their cleaned words, and when it last had any."""

    members: list[int]
    parts: list[str]
    end: float
    broken: bool  # its last utterance stopped mid-clause

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.parts)


def statements(segments: Sequence[Segment], *, max_words: int = 60, join_gap_s: float = 6.0) -> list[Statement]:
    """One speaker's adjacent utterances joined into statements, in the order they start.

    A statement stays open while it ends mid-clause (`ends_mid_clause`, of the utterance as said or as
    cleaned) and its speaker goes on within `join_gap_s` seconds, whoever else speaks in between; an
    utterance that is nothing but fillers adds nothing and is not cited, and neither is a backchannel or a
    connective that would open a statement ("Okay.", "So, um,"): they are never lines. A statement left on a comma whose
    last word can end a clause ("... the way remote controls look,") ends there; one left on a conjunction,
    preposition or article is not whole. Leading fillers and connectives are trimmed ("and so we ..." ->
    "We ...").
    """
    from meetmem.edge.cleaning import FillerCleaner

    cleaner = FillerCleaner()
    out: list[Statement] = []
    going: dict[str, _Open] = {}

    def close(speaker: str) -> None:
        current = going.pop(speaker)
        text = _line_text(" ".join(current.parts))
        if not text:
            return
        if ends_mid_clause(text):
            bare = text.rstrip(",;:-—–/& ")
            if bare and bare[-1].isalnum() and not ends_mid_clause(bare):
                text = bare  # the speaker's pause before going on to something else
        whole = not ends_mid_clause(text)
        if whole and text[-1].isalnum():
            text += "."
        out.append(Statement(text, tuple(current.members), whole))

    for i, segment in enumerate(segments):
        speaker = segment.speaker or ""
        current = going.get(speaker)
        if current is not None and segment.start - current.end > join_gap_s:
            close(speaker)
            current = None
        words = cleaner.clean_text(segment.text).strip()
        if not words or (current is None and _BACKCHANNEL.match(words)):
            continue  # fillers, or a backchannel or connective before a statement ("So, um," / "Okay,"): no line
        if segment.text.rstrip().endswith(",") and words[-1].isalnum():
            words += ","  # the cleaner drops a comma at the end; between two utterances it is the speaker's pause
        broken = ends_mid_clause(words) or ends_mid_clause(segment.text)
        if current is None:
            current = going[speaker] = _Open([i], [words], segment.end, broken)
        else:
            current.members.append(i)
            current.parts.append(words)
            current.end = max(current.end, segment.end)
            current.broken = broken
        if not current.broken or current.words >= max_words:
            close(speaker)
    for speaker in list(going):
        close(speaker)
    return sorted(out, key=lambda st: st.members[0])


def _line_text(text: str) -> str:
    """A statement's words as a line: spacing repaired, leading fillers trimmed, a capital letter first."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"(?<=[!?])\.+(?=\s|$)", "", text)  # "next?." where a filler after the mark went
    text = re.sub(r"(?<![.])\.\.(?![.])", ".", text)
    text = trim_fillers(text)
    text = re.sub(r"^[\s,;:.\-–—]+", "", text)
    if not re.search(r"\w", text):
        return ""
    if text[0].islower():
        text = text[0].upper() + text[1:]
    return text


class LearnedSummarizer:
    """L1 and L2 lines from whole statements ranked by the learned summary head (see the module's docstring).

    Args:
        scorer: scores utterances (`ledger_learned.UtteranceScorer` with the shipped head and MiniLM, made
            lazily when not given).
        options: how lines are made (`LearnedOptions`).
        fallback: what summarizes sections that are not English, or everything when the scorer fails (the
            extractive summarizer by default).

    Attributes:
        last_l2_note: why the last L2 is the fallback's (None when it is this summarizer's).
    """

    name = "learned"

    def __init__(self, scorer: UtteranceScores | None = None, *, options: LearnedOptions | None = None,
                 fallback: Summarizer | None = None) -> None:
        self._scorer = scorer
        self.options = options or LearnedOptions()
        if self.options.aggregate not in ("max", "mean", "min"):
            raise ValueError(f"unknown aggregate {self.options.aggregate!r}: choose max, mean or min")
        self.fallback: Summarizer = fallback or ExtractiveSummarizer()
        self.last_l2_note: str | None = None

    @property
    def scorer(self) -> UtteranceScores:
        if self._scorer is None:
            from .ledger_learned import UtteranceScorer

            self._scorer = UtteranceScorer()
        return self._scorer

    @property
    def version(self) -> str | None:
        """The head's version, recorded with what it makes (None when it cannot be loaded)."""
        try:
            heads = getattr(self.scorer, "heads", None)
            return None if heads is None else str(heads.version)
        except Exception:  # a missing head: the summaries say so in their notes
            return None

    # -- L1 -----------------------------------------------------------------------------------------------
    def summarize_section(self, section: Section, segments: Sequence[Segment]) -> SectionSummary:
        if not segments:
            return self.fallback.summarize_section(section, segments)
        if sum(1 for s in segments if is_english(s)) * 2 < len(segments):
            return dataclasses.replace(self.fallback.summarize_section(section, segments),
                                       note=f"the learned summarizer reads English only: {self.fallback.name} lines")
        try:
            values = self._scores(segments)
        except Exception as exc:  # a missing head or model leaves the fallback's lines, said in the note
            note = f"learned summary not used: {exc}"
            logger.warning("section %s (%s): %s", section.index, section.key, note)
            return dataclasses.replace(self.fallback.summarize_section(section, segments), note=note)
        wanted = self._wanted(segments)
        picked = self._pick(self._candidates(segments, values), wanted)
        if not picked:  # nothing but backchannels: the fallback's line (it always has one)
            return dataclasses.replace(self.fallback.summarize_section(section, segments),
                                       note="no whole statement in the section")
        made_by = ("model", self.version or self.name)
        lines = tuple(SummaryLine(text, source, made_by)
                      for text, source, _ in sorted(picked, key=lambda c: c[1].start))
        return SectionSummary(section, lines, backend=self.name)

    # -- L2 -----------------------------------------------------------------------------------------------
    def summarize_meeting(
        self, sections: Sequence[SectionSummary], segments: Mapping[str, Segment]
    ) -> tuple[SummaryLine, ...]:
        self.last_l2_note = None
        with_lines = [s for s in sections if s.lines]
        english = all(is_english(segments[i]) for s in with_lines for line in s.lines
                      for i in line.source.segment_ids if i in segments)
        if not with_lines or not english:
            # Lines cut from another language's sections have no scores to rank them by.
            if with_lines:
                self.last_l2_note = f"the learned summarizer reads English only: the {self.fallback.name} summary"
            return self.fallback.summarize_meeting(sections, segments)
        candidates: list[tuple[str, Source, float]] = []
        try:
            for summary in with_lines:
                members = [segments[i] for i in summary.section.segment_ids if i in segments]
                values = self._scores(members)
                where = {s.segment_id: k for k, s in enumerate(members)}
                for line in summary.lines:
                    at = [where[i] for i in line.source.segment_ids if i in where]
                    candidates.append((line.text, line.source, self._aggregate([float(values[k]) for k in at])))
        except Exception as exc:
            self.last_l2_note = f"learned summary not used: {exc}"
            logger.warning("meeting summary: %s", self.last_l2_note)
            return self.fallback.summarize_meeting(sections, segments)
        wanted = min(self.options.l2_lines, len(sections) + 2)
        picked = self._pick(candidates, wanted)
        made_by = ("model", self.version or self.name)
        return tuple(SummaryLine(text, source, made_by) for text, source, _ in sorted(picked, key=lambda c: c[1].start))

    # -- shared -------------------------------------------------------------------------------------------
    def _scores(self, segments: Sequence[Segment]) -> np.ndarray:
        got = self.scorer.scores(segments)
        if LABEL not in got:
            raise RuntimeError(f"the head has no {LABEL!r} label (it has {', '.join(sorted(got)) or 'none'})")
        return got[LABEL]

    def _wanted(self, segments: Sequence[Segment]) -> int:
        words = sum(len(s.text.split()) for s in segments)
        return max(1, min(self.options.l1_lines, round(words / self.options.words_per_line)))

    def _aggregate(self, values: Sequence[float]) -> float:
        if not values:
            return 0.0
        if self.options.aggregate == "max":
            return max(values)
        if self.options.aggregate == "min":
            return min(values)
        return sum(values) / len(values)

    def _candidates(self, segments: Sequence[Segment], values: np.ndarray) -> list[tuple[str, Source, float]]:
        kept = [st for st in statements(segments, max_words=self.options.max_words, join_gap_s=self.options.join_gap_s)
                if st.whole and not _BACKCHANNEL.match(st.text) and len(st.text.split()) >= self.options.min_words]
        out = []
        for statement in kept:
            score = self._aggregate([float(values[k]) for k in statement.members])
            out.append((statement.text, Source.of([segments[k] for k in statement.members]), score))
        return out

    def _pick(self, candidates: Sequence[tuple[str, Source, float]],
              wanted: int) -> list[tuple[str, Source, float]]:
        """The best-scoring candidates, passing over any that says what a picked one says."""
        picked: list[tuple[str, Source, float]] = []
        said: list[frozenset[str]] = []
        texts: set[str] = set()
        for candidate in sorted(candidates, key=lambda c: (-c[2], c[1].start)):
            if len(picked) >= wanted:
                break
            text, _, _ = candidate
            words = content_words(text)
            key = text.casefold().rstrip(".!?")
            if key in texts or not words or any(same_thing(words, w, overlap=self.options.overlap) for w in said):
                continue
            picked.append(candidate)
            said.append(words)
            texts.add(key)
        return picked
