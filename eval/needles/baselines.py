"""What meetmem's answers are compared with in `meetmem eval run`: the ways a meeting is usually put in
front of a language model without a memory.

* sliding window: the last N tokens of the transcript, as a chat tool holds them at the end of a meeting;
* full-transcript stuffing: every segment in the prompt, if the model's window takes it;
* rolling summary: a summary remade from itself plus the next chunk (`rolling_summary`);
* one retriever alone (BM25 or dense) with the top k segments as the prompt.

Each is a pure function of the stored segments (or the search) and the question, so the evaluation runs
them side by side with meetmem on the same data in the same process. The transcript is rendered one segment
a line the way the context compiler renders a segment (`answers.compiler.segment_line`), and tokens are counted
with the compiler's own estimate (`answers.tokens.count_tokens`), so the token figures compare like with like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

#: A large model's context window, for "does the whole transcript fit".
LONG_WINDOW = 128_000
#: The rolling summary's chunk (seconds of the meeting) and its length in lines.
ROLLING_CHUNK_S = 300.0
ROLLING_LINES = 8


def rendered(segment: Any) -> str:
    """A segment as a prompt shows it: `[#handle MM:SS speaker] text`."""
    from meetmem.answers.compiler import segment_line

    return segment_line(segment, segment.chain_pos)


def segment_tokens(segments: Sequence[Any]) -> list[int]:
    """Tokens of each segment as rendered, one line each (the newline counted with the line)."""
    from meetmem.answers.tokens import count_tokens

    return [count_tokens(rendered(s) + "\n") for s in segments]


@dataclass(frozen=True, slots=True)
class Window:
    """The newest segments that fit in `limit` tokens: their ids and what they cost."""

    limit: int
    segment_ids: frozenset[str]
    tokens: int

    def public(self) -> dict[str, Any]:
        return {"limit_tokens": self.limit, "segments": len(self.segment_ids), "tokens": self.tokens}


def sliding_window(segments: Sequence[Any], limit: int, *, costs: Sequence[int] | None = None) -> Window:
    """The last `limit` tokens of the transcript, whole segments only, as at the end of the meeting.

    Args:
        segments: the meeting's segments in time order.
        limit: the window's size in tokens.
        costs: each segment's tokens (`segment_tokens`), when already counted.
    """
    costs = list(costs) if costs is not None else segment_tokens(segments)
    kept: list[str] = []
    used = 0
    for segment, cost in zip(reversed(segments), reversed(costs), strict=True):
        if used + cost > limit:
            break
        used += cost
        kept.append(segment.segment_id)
    return Window(limit, frozenset(kept), used)


def full_transcript_tokens(segments: Sequence[Any], *, costs: Sequence[int] | None = None) -> int:
    """Tokens of the whole transcript rendered one segment a line."""
    return sum(costs) if costs is not None else sum(segment_tokens(segments))


@dataclass(frozen=True, slots=True)
class RollingSummary:
    """The rolling baseline's final summary: its text, what it costs, how many steps made it."""

    text: str
    lines: int
    steps: int
    tokens: int

    def public(self) -> dict[str, Any]:
        return {"lines": self.lines, "steps": self.steps, "tokens": self.tokens}


def rolling_summary(segments: Sequence[Any], *, chunk_s: float = ROLLING_CHUNK_S,
                    lines: int = ROLLING_LINES) -> tuple[list[Any], int]:
    """The baseline: a summary remade from itself plus the next chunk, with the same extractive summarizer.

    The previous summary's lines become pseudo-segments (the cited segment with the line's text), so its
    lines keep citing the segment they came from. Returns the final lines and the number of steps.
    """
    from meetmem.store.records import Section
    from meetmem.summarizers.extractive import ExtractiveOptions, ExtractiveSummarizer

    summarizer = ExtractiveSummarizer(ExtractiveOptions(l1_lines=lines))
    by_id = {s.segment_id: s for s in segments}
    chunks: dict[int, list[Any]] = {}
    origin = segments[0].start if segments else 0.0
    for segment in segments:
        chunks.setdefault(int((segment.start - origin) // chunk_s), []).append(segment)
    summary: list[Any] = []
    for step, key in enumerate(sorted(chunks)):
        carried = [replace(by_id[line.source.segment_ids[0]], text=line.text) for line in summary]
        members = carried + chunks[key]
        section = Section(step, members[0].start, members[-1].end, tuple(s.segment_id for s in members), "length")
        summary = list(summarizer.summarize_section(section, members).lines)
    return summary, len(chunks)


def final_rolling_summary(segments: Sequence[Any]) -> RollingSummary:
    """The extractive rolling summary at the end of the meeting (see `rolling_summary`)."""
    from meetmem.answers.tokens import count_tokens

    lines, steps = rolling_summary(segments)
    text = "\n".join(line.text for line in lines)
    return RollingSummary(text, len(lines), steps, count_tokens(text))


def retrieved_prompt_tokens(hits: Sequence[Any], question: str) -> int:
    """Tokens of a prompt made of the question and the retrieved segments, one a line."""
    from meetmem.answers.tokens import count_tokens

    return count_tokens(question) + sum(count_tokens(rendered(h.segment) + "\n") for h in hits)
