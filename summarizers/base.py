"""The summarizer seam: what turns one section's raw segments into L1 lines, and L1s into L2 lines.

Summaries are built in layers and never from an earlier version of themselves: L1 comes from a closed
section's raw segments, L2 from all L1s of the meeting, recomputed whenever an L1 is added. Every line
cites the segments it rests on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from meetmem.store.records import Section, SectionSummary, Segment, SummaryLine


class Summarizer(Protocol):
    """Makes L1 and L2 summaries. `name` is recorded with every summary it makes."""

    name: str

    def summarize_section(self, section: Section, segments: Sequence[Segment]) -> SectionSummary:
        """L1: a few lines for one closed section, from its raw segments (in time order)."""
        ...

    def summarize_meeting(
        self, sections: Sequence[SectionSummary], segments: Mapping[str, Segment]
    ) -> tuple[SummaryLine, ...]:
        """L2: the meeting's summary lines, from its L1s alone (`segments` resolves their citations)."""
        ...
