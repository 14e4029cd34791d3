"""A meeting's digest on a real log with the real MiniLM: incremental equals rebuild, every citation
resolves, each section is summarized once, and an open meeting leaves its last section alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.log import TranscriptLog
from meetmem.store.records import MeetingDigest, Section, SectionSummary, Segment, SegmentInput
from meetmem.summarizers.digest import DigestOptions, MeetingDigester
from meetmem.summarizers.extractive import ExtractiveSummarizer
from meetmem.summarizers.sections import SectionOptions

# Small sections, so the four-minute sample meeting has several.
OPTIONS = DigestOptions(SectionOptions(window_words=40, depth=0.1, min_words=60, min_seconds=30.0))


class CountingSummarizer(ExtractiveSummarizer):
    """The real extractive summarizer, counting the sections it is asked to summarize."""

    def __init__(self) -> None:
        super().__init__()
        self.sections_summarized: list[str] = []

    def summarize_section(self, section: Section, segments: Sequence[Segment]) -> SectionSummary:
        self.sections_summarized.append(section.key)
        return super().summarize_section(section, segments)


def comparable(digest: MeetingDigest) -> tuple[dict[str, Any], dict[str, Any]]:
    summary = digest.summary_public()
    summary.pop("made_at")
    return summary, digest.ledger_public()


def digester_for(log: TranscriptLog, embedder: Any, summarizer: ExtractiveSummarizer | None = None) -> MeetingDigester:
    return MeetingDigester(log, TranscriptSearch(log, embedder), summarizer or ExtractiveSummarizer(), options=OPTIONS)


def test_live_updates_equal_a_rebuild_and_each_section_is_summarized_once(
        log: TranscriptLog, embedder: Any, sample_segments: list[SegmentInput]) -> None:
    counting = CountingSummarizer()
    digester = digester_for(log, embedder, counting)
    for i in range(0, len(sample_segments), 7):
        log.append("m", "glasses", sample_segments[i : i + 7])
        live = digester.update("m")
        assert not live.final
        # The open section is never summarized: every L1 ends before it starts.
        assert all(s.section.end <= live.open_from for s in live.sections if live.open_from is not None)
    log.close_meeting("m")
    live = digester.update("m")
    assert live.final and live.open_from is None
    assert len(live.sections) >= 3
    assert sorted(counting.sections_summarized) == sorted(s.section.key for s in live.sections)

    rebuilt = digester_for(log, embedder)
    rebuilt.rebuild()
    assert comparable(rebuilt.digest("m")) == comparable(live)


def test_every_citation_resolves_to_a_stored_segment_of_the_meeting(
        log: TranscriptLog, embedder: Any, sample_segments: list[SegmentInput]) -> None:
    log.append("m", "glasses", sample_segments)
    log.close_meeting("m")
    digest = digester_for(log, embedder).digest("m")
    stored = {s.segment_id: s for s in log.segments("m")}
    lines = [line for s in digest.sections for line in s.lines] + list(digest.l2)
    cited = [sid for line in lines for sid in line.source.segment_ids]
    cited += [sid for item in digest.ledger for sid in item.source.segment_ids]
    assert digest.ledger and lines
    assert cited and all(sid in stored for sid in cited)
    for line in lines:  # extractive lines are the cited segment's own words
        assert line.text in stored[line.source.segment_ids[0]].text
    for item in digest.ledger:
        first = stored[item.source.segment_ids[0]]
        assert item.source.start == pytest.approx(min(stored[s].start for s in item.source.segment_ids))
        assert first.start >= 0


def test_the_stored_digest_is_reused_until_the_log_moves(
        log: TranscriptLog, embedder: Any, sample_segments: list[SegmentInput]) -> None:
    digester = digester_for(log, embedder)
    log.append("m", "glasses", sample_segments[:30])
    log.close_meeting("m")
    first = digester.digest("m")
    assert digester.is_current("m") and digester.digest("m").made_at == first.made_at
    # A device catching up after the close reopens the meeting: the digest is stale and then remade.
    log.append("m", "glasses", sample_segments[30:])
    assert not digester.is_current("m")
    reopened = digester.digest("m")
    assert not reopened.final and reopened.through_pos > first.through_pos


def test_a_closed_meetings_ledger_and_summary_have_the_contract_shape(
        log: TranscriptLog, embedder: Any, sample_segments: list[SegmentInput]) -> None:
    log.append("m", "glasses", sample_segments)
    log.close_meeting("m")
    digest = digester_for(log, embedder).digest("m")
    summary = digest.summary_public()
    assert {"l1", "l2"} <= summary.keys()
    assert all({"text", "segment_ids"} <= line.keys() for line in summary["l2"])
    assert all({"start", "end", "text", "segment_ids"} <= s.keys() for s in summary["l1"])
    ledger = digest.ledger_public()
    assert {"decisions", "todos", "open_questions", "facts", "glossary"} <= ledger.keys()
    for items in (ledger[k] for k in ("decisions", "todos", "open_questions", "facts", "glossary")):
        for item in items:
            assert {"id", "text", "status", "superseded_by", "source"} <= item.keys()
            assert item["status"] in ("current", "superseded")
    assert all({"owner", "task", "due", "due_date"} <= t.keys() for t in ledger["todos"])
    assert all({"what", "value"} <= f.keys() for f in ledger["facts"])
    assert ledger["todos"], "the sample meeting assigns work (press release by April 2nd)"


def test_deferred_parts_are_made_only_when_a_digest_is_made(log: TranscriptLog,
                                                            sample_segments: list[SegmentInput]) -> None:
    """`meetmem ask` on a meeting whose digest is stored reads it without loading the ledger's rules."""
    from meetmem.summarizers.backends import make_digest_parts

    made: list[int] = []

    def parts() -> Any:
        made.append(1)
        return make_digest_parts("extractive", ledger="rules")

    log.append("m", "glasses", sample_segments)
    log.close_meeting("m")
    first = MeetingDigester(log, None, parts, options=OPTIONS)
    made_digest = first.digest("m")
    assert made == [1] and made_digest.ledger  # made here, once
    first.digest("m")
    assert made == [1]

    reader = MeetingDigester(log, None, parts, options=OPTIONS)  # another process, the digest stored
    assert comparable(reader.digest("m")) == comparable(made_digest)
    assert made == [1]  # read, not made: no summarizer or ledger built
    log.append("m", "late", [SegmentInput(seq=0, start=900.0, end=901.0, text="One more thing: ship on May 2nd.")])
    assert reader.digest("m").through_pos > made_digest.through_pos
    assert made == [1, 1]
