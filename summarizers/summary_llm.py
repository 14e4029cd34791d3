"""The LLM summarizer: a chat model writes the lines, the transcript vets them, extractive is the fallback.

A model is asked for a few lines that each cite the numbered segments they rest on. Its answer is kept
only when it parses, every line cites segments it was shown, and every number, amount, date and name a
line states occurs in those segments (`validation.check_line`). Anything else (the model unreachable,
prose instead of JSON, one unsupported line) sends the section to the fallback summarizer, and the reason
goes into the summary's `note` so a person can see why.

The prompt puts the stable instructions first and the section last (the system message never holds
transcript text, and nothing in it changes between calls), so a server's prompt cache can reuse it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from meetmem.store.records import Section, SectionSummary, Segment, Source, SummaryLine

from .base import Summarizer
from .errors import SummarizerError
from .llm.chat import ChatModel, snippet
from .validation import check_citations, check_line

logger = logging.getLogger(__name__)

_REPLY_FORMAT = (
    'Answer with JSON only, in this shape: {"lines": [{"text": "...", "cite": [1, 2]}]}. '
    '"cite" lists the numbers of the items each line rests on; every line cites at least one.'
)

L1_INSTRUCTIONS = (
    "You summarise one section of a meeting transcript. The user message holds the section's segments, "
    "each numbered as [n] (MM:SS, speaker) text.\n"
    "Write at most {max_lines} short lines that carry what was decided, asked, promised or stated as fact. "
    "Copy every name, number, amount, date and time exactly as the transcript says it; never infer, round "
    "or convert one, and state nothing the cited segments do not say. Write in the transcript's language.\n"
    + _REPLY_FORMAT
)

L2_INSTRUCTIONS = (
    "You summarise a whole meeting from the summaries of its sections. The user message holds the section "
    "summaries' lines, each numbered as [n] (MM:SS) text.\n"
    "Write at most {max_lines} short lines for the whole meeting, most important first: decisions, owners "
    "and deadlines, open questions. Copy every name, number, amount, date and time exactly as the lines say "
    "it, and state nothing the cited lines do not say. Write in the lines' language.\n"
    + _REPLY_FORMAT
)

FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _DraftLine:
    text: str
    cite: tuple[int, ...]


class _Rejected(Exception):
    """The model's answer cannot be used; the message is the note's reason."""


class LLMSummarizer:
    """Summaries written by a chat model and checked against the transcript, with a fallback summarizer.

    Args:
        chat: the model (`OpenAIChat` for a server; anything with `complete(messages)`).
        fallback: what summarizes when the model's answer is rejected (the extractive summarizer).
        max_lines: lines per section (L1), at most.
        l2_max_lines: lines for the whole meeting (L2), at most.

    Attributes:
        last_l2_note: why the last L2 answer was rejected (None when it was accepted), for the caller
            to record: an L2 result has no note of its own.
    """

    name = "llm"

    def __init__(self, chat: ChatModel, fallback: Summarizer, *, max_lines: int = 3, l2_max_lines: int = 8) -> None:
        self.chat = chat
        self.fallback = fallback
        self.max_lines = max_lines
        self.l2_max_lines = l2_max_lines
        self.last_l2_note: str | None = None

    # -- L1 -----------------------------------------------------------------------------------------------
    def summarize_section(self, section: Section, segments: Sequence[Segment]) -> SectionSummary:
        if not segments:
            return self.fallback.summarize_section(section, segments)
        numbered = numbered_segments(segments)
        messages = [
            {"role": "system", "content": L1_INSTRUCTIONS.replace("{max_lines}", str(self.max_lines))},
            {"role": "user", "content": numbered},
        ]
        known = set(section.segment_ids) or {s.segment_id for s in segments}
        try:
            drafts = self._ask(messages, self.max_lines)
            lines = tuple(
                self._checked(i, draft, [[s] for s in segments], known) for i, draft in enumerate(drafts, 1)
            )
        except _Rejected as exc:
            note = str(exc)
            logger.warning("section %s (%s): %s; using the %s summary", section.index, section.key, note,
                           self.fallback.name)
            return dataclasses.replace(self.fallback.summarize_section(section, segments), note=note)
        return SectionSummary(section, lines, backend=self.name)

    # -- L2 -----------------------------------------------------------------------------------------------
    def summarize_meeting(
        self, sections: Sequence[SectionSummary], segments: Mapping[str, Segment]
    ) -> tuple[SummaryLine, ...]:
        self.last_l2_note = None
        l1_lines = [line for summary in sections for line in summary.lines]
        if not l1_lines:
            return self.fallback.summarize_meeting(sections, segments)
        numbered = "\n".join(
            f"[{n}] ({prompt_clock(line.source.start)}) {one_line(line.text)}" for n, line in enumerate(l1_lines, 1)
        )
        messages = [
            {"role": "system", "content": L2_INSTRUCTIONS.replace("{max_lines}", str(self.l2_max_lines))},
            {"role": "user", "content": numbered},
        ]
        try:
            behind = [self._resolve(line, segments) for line in l1_lines]
            drafts = self._ask(messages, self.l2_max_lines)
            return tuple(self._checked(i, draft, behind, segments.keys()) for i, draft in enumerate(drafts, 1))
        except _Rejected as exc:
            self.last_l2_note = str(exc)
            logger.warning("meeting summary: %s; using the %s summary", exc, self.fallback.name)
            return self.fallback.summarize_meeting(sections, segments)

    # -- shared -------------------------------------------------------------------------------------------
    def _ask(self, messages: list[dict[str, str]], max_lines: int) -> list[_DraftLine]:
        try:
            reply = self.chat.complete(messages)
        except SummarizerError as exc:
            raise _Rejected(f"llm call failed: {exc}") from exc
        logger.debug("llm reply: %s prompt tokens, %s completion tokens", reply.prompt_tokens,
                     reply.completion_tokens)
        drafts = _parse_reply(reply.text)
        if len(drafts) > max_lines:
            logger.info("llm gave %d lines, keeping the first %d", len(drafts), max_lines)
        return drafts[:max_lines]

    @staticmethod
    def _checked(
        number: int, draft: _DraftLine, items: Sequence[Sequence[Segment]], known: Any
    ) -> SummaryLine:
        """The line, with its cites (1-based item numbers) mapped to segments, or `_Rejected` saying why."""
        bad = [n for n in draft.cite if not 1 <= n <= len(items)]
        if bad:
            raise _Rejected(f"llm summary rejected: line {number} cites [{bad[0]}] but it was given "
                            f"{len(items)} numbered items")
        cited: dict[str, Segment] = {}
        for n in sorted(set(draft.cite)):
            for segment in items[n - 1]:
                cited.setdefault(segment.segment_id, segment)
        reason = check_citations(list(cited), known) or check_line(draft.text, list(cited.values()))
        if reason:
            raise _Rejected(f"llm summary rejected: line {number} {reason}")
        ordered = sorted(cited.values(), key=lambda s: (s.start, s.end))
        return SummaryLine(draft.text, Source.of(ordered))

    @staticmethod
    def _resolve(line: SummaryLine, segments: Mapping[str, Segment]) -> list[Segment]:
        missing = [sid for sid in line.source.segment_ids if sid not in segments]
        if missing:
            raise _Rejected(f"llm summary rejected: an L1 line cites {missing[0]!r}, which the meeting does "
                            "not hold")
        return [segments[sid] for sid in line.source.segment_ids]


def _parse_reply(text: str) -> list[_DraftLine]:
    """The lines of a model's answer: `{"lines": [{"text": ..., "cite": [n, ...]}]}`, tolerating a code
    fence or a sentence around the JSON. Raises `_Rejected` when it is not that."""
    fenced = FENCE_RE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise _Rejected(f"llm summary rejected: the reply is not JSON: {snippet(text, 120)!r}")
    try:
        data = json.loads(body[start: end + 1])
    except json.JSONDecodeError as exc:
        raise _Rejected(f"llm summary rejected: the reply is not valid JSON ({exc.msg}): "
                        f"{snippet(text, 120)!r}") from exc
    items = data.get("lines") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise _Rejected('llm summary rejected: the reply has no "lines" list')
    drafts: list[_DraftLine] = []
    for number, item in enumerate(items, 1):
        line_text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(line_text, str) or not line_text.strip():
            raise _Rejected(f"llm summary rejected: line {number} has no text")
        cite = item.get("cite", item.get("cites"))
        if isinstance(cite, int) and not isinstance(cite, bool):
            cite = [cite]
        if not isinstance(cite, list) or not cite:
            raise _Rejected(f"llm summary rejected: line {number} cites no segment")
        numbers: list[int] = []
        for value in cite:
            if isinstance(value, str) and value.strip().strip("[]").isdigit():
                value = int(value.strip().strip("[]"))
            if not isinstance(value, int) or isinstance(value, bool):
                raise _Rejected(f"llm summary rejected: line {number} cites {value!r}, not an item number")
            numbers.append(value)
        drafts.append(_DraftLine(" ".join(line_text.split()), tuple(numbers)))
    if not drafts:
        raise _Rejected("llm summary rejected: the reply has no lines")
    return drafts


def prompt_clock(seconds: float) -> str:
    """MM:SS from the meeting's start (minutes run past 59 in a long meeting)."""
    whole = max(int(seconds), 0)
    return f"{whole // 60:02d}:{whole % 60:02d}"


def numbered_segments(segments: Sequence[Segment]) -> str:
    """The segments as the model sees them, one a line: `[n] (MM:SS, speaker) text`, numbered from 1."""
    return "\n".join(
        f"[{n}] ({prompt_clock(s.start)}{', ' + s.speaker if s.speaker else ''}) {one_line(s.text)}"
        for n, s in enumerate(segments, 1)
    )


def one_line(text: str) -> str:
    return " ".join(text.split())



