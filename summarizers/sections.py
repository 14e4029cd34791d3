"""Topic sections: cut a meeting where the speakers pause for long or the topic turns, never by size.

A small state machine in the manner of whisper_streaming (`insert` segments as they come, `finish` when
the meeting ends): fed segments with their embeddings, it returns the sections that have closed. A topic
turn is found TextTiling-style (Hearst, 1997): the similarity between the mean embedding of the words
before a gap and of the words after it dips into a valley, and the valley is deep compared with the
peaks on either side. A decision about a gap only looks `2 * window_words` words ahead, so a section
once closed never changes as more segments arrive: feeding a meeting live or all at once gives the same
sections (the rebuild equals the incremental result).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from meetmem.store.records import Section, Segment

_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_RE = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class SectionOptions:
    """Where sections are cut.

    Args:
        pause_s: a silence at least this long between two segments always ends a section.
        window_words: words (Chinese: characters) on each side of a gap whose mean embeddings are compared;
            counted in words, not segments, since one device sends a sentence per segment and another a
            backchannel.
        depth: how deep (in cosine) a similarity valley must be, against the peaks beside it, to be a turn.
        min_words: a topic turn is not taken before a section holds this many words,
        min_seconds: nor before it spans this many seconds.
        max_seconds: a section that grows this long ends at its next gap whatever the topic does.
    """

    pause_s: float = 30.0
    window_words: int = 120
    depth: float = 0.2
    min_words: int = 300
    min_seconds: float = 150.0
    max_seconds: float = 900.0


def text_size(text: str) -> int:
    """Words of a segment, counting each Chinese character as one."""
    cjk = len(_CJK_RE.findall(text))
    return cjk + len(_WORD_RE.findall(_CJK_RE.sub(" ", text))) if cjk else len(text.split())


class TopicSegmenter:
    """Cuts a stream of segments into topic sections (pure: no I/O).

    Vectors are L2-normalised embeddings, or None for a segment without one (another model's language);
    those segments belong to sections but do not vote on where the topic turns.
    """

    def __init__(self, options: SectionOptions | None = None) -> None:
        self.options = options or SectionOptions()
        self._segments: list[Segment] = []
        self._vectors: list[np.ndarray | None] = []
        self._cum = [0]  # _cum[i]: words in the segments before segment i
        self._gaps: list[float | None] = []  # _gaps[i]: similarity across the gap before segment i (i >= 1)
        self._section_start = 0  # index of the open section's first segment
        self._decided = 1  # the next gap to decide about
        self._closed: list[Section] = []

    @property
    def sections(self) -> list[Section]:
        """Every section closed so far, in time order."""
        return list(self._closed)

    @property
    def open_from(self) -> float | None:
        """Where the open (not yet closed) section starts, or None when there is none."""
        if self._section_start < len(self._segments):
            return self._segments[self._section_start].start
        return None

    def insert(self, segment: Segment, vector: np.ndarray | None) -> list[Section]:
        """Take the next segment (in time order); returns the sections this closed."""
        self._segments.append(segment)
        self._vectors.append(None if vector is None else np.asarray(vector, dtype=np.float32))
        self._cum.append(self._cum[-1] + max(1, text_size(segment.text)))
        self._gaps.append(None)
        return self._advance(final=False)

    def insert_many(self, items: Iterable[tuple[Segment, np.ndarray | None]]) -> list[Section]:
        closed: list[Section] = []
        for segment, vector in items:
            closed.extend(self.insert(segment, vector))
        return closed

    def finish(self) -> list[Section]:
        """The meeting ended: decide the remaining gaps with what there is and close the last section."""
        closed = self._advance(final=True)
        if self._section_start < len(self._segments):
            closed.append(self._close(len(self._segments), "end"))
        return closed

    # -- the decisions ----------------------------------------------------------------------------------
    def _words(self, lo: int, hi: int) -> int:
        """Words in segments lo..hi-1."""
        return self._cum[hi] - self._cum[lo]

    def _advance(self, *, final: bool) -> list[Section]:
        look_ahead = 2 * self.options.window_words
        closed: list[Section] = []
        n = len(self._segments)
        while self._decided < n:
            gap = self._decided
            if not final and self._words(gap, n) < look_ahead:
                break  # not enough look-ahead yet: this gap is decided later, the same way
            reason = self._cut_reason(gap)
            if reason is not None:
                closed.append(self._close(gap, reason))
            self._decided += 1
        return closed

    def _cut_reason(self, gap: int) -> str | None:
        opts = self.options
        segs = self._segments
        if segs[gap].start - segs[gap - 1].end >= opts.pause_s:
            return "pause"
        span = segs[gap - 1].end - segs[self._section_start].start
        if span >= opts.max_seconds:
            return "length"
        if self._words(self._section_start, gap) < opts.min_words or span < opts.min_seconds:
            return None
        if self._words(gap, len(segs)) < opts.min_words // 2:
            return None  # never leave a crumb of a section at the end
        depth = self._depth(gap)
        return "topic" if depth is not None and depth >= opts.depth else None

    def _block(self, gap: int, step: int) -> tuple[list[np.ndarray], bool]:
        """The vectors of `window_words` words before (step -1) or after (+1) a gap; and whether the block
        is whole (it did not run into the section's start or the end of what has arrived)."""
        want = self.options.window_words
        vectors: list[np.ndarray] = []
        words = 0
        i = gap - 1 if step < 0 else gap
        lower, upper = self._section_start, len(self._segments) - 1
        while lower <= i <= upper and words < want:
            words += self._cum[i + 1] - self._cum[i]
            vector = self._vectors[i]
            if vector is not None:
                vectors.append(vector)
            i += step
        return vectors, words >= want

    def _similarity(self, gap: int) -> float | None:
        cached = self._gaps[gap]
        if cached is not None:
            return cached
        left, left_whole = self._block(gap, -1)
        right, right_whole = self._block(gap, +1)
        if len(left) < 2 or len(right) < 2:
            return None
        a = np.mean(left, axis=0)
        b = np.mean(right, axis=0)
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        value = float(a @ b / norm) if norm > 0 else 0.0
        # Only a value measured over whole blocks is kept: one cut short by the section's start or by the
        # end of what has arrived would read differently later.
        if left_whole and right_whole:
            self._gaps[gap] = value
        return value

    def _depth(self, gap: int) -> float | None:
        """TextTiling's depth score: how far the similarity at `gap` lies below the peaks on both sides."""
        here = self._similarity(gap)
        if here is None:
            return None
        half = self.options.window_words // 2
        # A turn is the lowest point within half a window of words on each side.
        other = gap - 1
        while other > self._section_start and self._words(other, gap) <= half:
            value = self._similarity(other)
            if value is not None and value <= here:
                return None
            other -= 1
        other = gap + 1
        while other < len(self._segments) and self._words(gap, other) <= half:
            value = self._similarity(other)
            if value is not None and value < here:
                return None
            other += 1
        return (self._climb(gap, -1) - here) + (self._climb(gap, +1) - here)

    def _climb(self, gap: int, step: int) -> float:
        """Walk from `gap` while the similarity keeps rising, within a window of words; the highest reached."""
        best = self._similarity(gap)
        assert best is not None
        other = gap + step
        reach = self.options.window_words
        while self._section_start < other < len(self._segments):
            if self._words(min(gap, other), max(gap, other)) > reach:
                break
            value = self._similarity(other)
            if value is None or value < best:
                break
            best = value
            other += step
        return best

    def _close(self, end: int, reason: str) -> Section:
        members = self._segments[self._section_start : end]
        section = Section(
            index=len(self._closed),
            start=min(s.start for s in members),
            end=max(s.end for s in members),
            segment_ids=tuple(s.segment_id for s in members),
            closed_by=reason,
        )
        self._closed.append(section)
        self._section_start = end
        # Similarities just after the cut were measured with a left block reaching into the closed section;
        # the new section measures them again within itself.
        for gap in range(end, len(self._gaps)):
            if self._words(end, gap) > self.options.window_words:
                break
            self._gaps[gap] = None
        return section


def cut_sections(
    segments: Sequence[Segment],
    vectors: Sequence[np.ndarray | None],
    *,
    final: bool,
    options: SectionOptions | None = None,
) -> tuple[list[Section], float | None]:
    """All sections of a meeting at once: the closed ones, and where the open one starts (None if none).

    `final` closes the last section (the meeting has ended); otherwise it stays open, unsummarized.
    """
    segmenter = TopicSegmenter(options)
    segmenter.insert_many(zip(segments, vectors, strict=True))
    if final:
        segmenter.finish()
    return segmenter.sections, segmenter.open_from
