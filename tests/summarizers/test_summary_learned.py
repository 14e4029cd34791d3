"""The learned summarizer: whole statements, cleaned, ranked by the shipped head on real MiniLM vectors.

The invariants hold for any head: every line cites segments of its section, says no number its segments
did not, ends where its clause does, carries no filler, and no two lines say the same thing. The rules that
build statements are table-driven and need no model.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from meetmem.learned.heads import LinearHeads
from meetmem.store.records import Section, Segment
from meetmem.summarizers.ledger_learned import UtteranceScorer
from meetmem.summarizers.summary_learned import (
    LearnedOptions,
    LearnedSummarizer,
    content_words,
    ends_mid_clause,
    same_thing,
    statements,
)


def seg(i: int, text: str, speaker: str = "A", *, start: float | None = None, lang: str = "en") -> Segment:
    at = i * 4.0 if start is None else start
    return Segment(f"s{i}", "t", "m", "d", i, at, at + 3.5, text, speaker, lang, None, None, None, "", i, "", "")


def section_of(segments: list[Segment], index: int = 0) -> Section:
    return Section(index, segments[0].start, segments[-1].end, tuple(s.segment_id for s in segments), "topic")


#: A dozen utterances of a design meeting: fillers, false starts, a statement broken by an interjection,
#: backchannels, numbers and a repeat in other words.
MEETING = [
    ("A", "Okay, um, let's start."),
    ("B", "Custome Customers and users don't like the way remote controls look,"),
    ("C", "Mm-hmm."),
    ("B", "so uh we want a rem remote that is fancy and easy to use."),
    ("A", "Yeah."),
    ("A", "The selling price is twenty five Euros and the production cost is at most 12.50 Euros."),
    ("C", "Right."),
    ("D", "I think we should use a rubber casing because"),
    ("B", "Okay."),
    ("D", "the rubber is cheaper and it does not break when you drop it."),
    ("C", "Um, the the battery should last for 2 years, I think."),
    ("A", "So, uh, yeah, okay."),
    ("B", "Customers do not like how remote controls look."),
]


@pytest.fixture(scope="module")
def scorer(embedder: Any) -> UtteranceScorer:
    """The shipped head on the real MiniLM (the head must be shipped: no skip)."""
    return UtteranceScorer(embedder=embedder)


@pytest.fixture(scope="module")
def meeting_segments() -> list[Segment]:
    return [seg(i, text, speaker) for i, (speaker, text) in enumerate(MEETING)]


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:[.,:]\d+)*", text)


@pytest.mark.parametrize("options", [LearnedOptions(), LearnedOptions(l1_lines=6, words_per_line=10)],
                         ids=["default", "many-lines"])
def test_l1_lines_keep_the_invariants(scorer: UtteranceScorer, meeting_segments: list[Segment],
                                      options: LearnedOptions) -> None:
    summarizer = LearnedSummarizer(scorer, options=options)
    summary = summarizer.summarize_section(section_of(meeting_segments), meeting_segments)
    assert summary.backend == "learned" and summary.note is None
    assert summarizer.version  # the head's version is known
    by_id = {s.segment_id: s for s in meeting_segments}
    assert 1 <= len(summary.lines) <= options.l1_lines
    if options.l1_lines == 6:
        assert len(summary.lines) >= 3  # every whole statement worth a line, less the repeat
    keys = [line.text.casefold() for line in summary.lines]
    assert len(set(keys)) == len(keys)
    for n, line in enumerate(summary.lines):
        cited = [by_id[i] for i in line.source.segment_ids]  # every citation is a segment of the section
        assert cited and line.source.start == min(s.start for s in cited)
        assert not ends_mid_clause(line.text), line.text
        assert not re.search(r"\b(?:um|uh|erm)\b", line.text, re.I), line.text
        assert "Custome " not in line.text and "rem remote" not in line.text
        said = " ".join(s.text for s in cited)
        for number in _numbers(line.text):
            assert number in said, (number, line.text)
        for other in summary.lines[n + 1:]:
            assert not same_thing(content_words(line.text), content_words(other.text), overlap=0.6)
        assert len(line.text.split()) >= summarizer.options.min_words  # never a backchannel
    # the two lines on how remote controls look say the same thing: at most one of them is a line
    looks = [line for line in summary.lines if "remote controls look" in line.text]
    assert len(looks) <= 1


def test_a_broken_off_statement_goes_on_past_an_interjection(scorer: UtteranceScorer,
                                                             meeting_segments: list[Segment]) -> None:
    found = statements(meeting_segments)
    rubber = next(st for st in found if "rubber casing" in st.text)
    assert rubber.members == (7, 9)  # D's two utterances, past B's "Okay."
    assert rubber.text == "I think we should use a rubber casing because the rubber is cheaper and it does not " \
                          "break when you drop it."
    customers = next(st for st in found if st.members[0] == 1)
    assert customers.members == (1, 3)  # B's statement goes on past C's "Mm-hmm."
    assert customers.text == "Customers and users don't like the way remote controls look, so we want a remote " \
                             "that is fancy and easy to use."
    assert rubber.whole


def test_l2_is_made_from_the_l1_lines(scorer: UtteranceScorer, meeting_segments: list[Segment]) -> None:
    summarizer = LearnedSummarizer(scorer)
    first, second = meeting_segments[:7], meeting_segments[7:]
    l1 = [summarizer.summarize_section(section_of(first, 0), first),
          summarizer.summarize_section(section_of(second, 1), second)]
    l2 = summarizer.summarize_meeting(l1, {s.segment_id: s for s in meeting_segments})
    assert summarizer.last_l2_note is None
    l1_lines = {(line.text, line.source) for summary in l1 for line in summary.lines}
    assert l2 and all((line.text, line.source) in l1_lines for line in l2)
    assert [line.source.start for line in l2] == sorted(line.source.start for line in l2)
    # the same L1s give the same L2 (a rebuild equals the incremental result)
    assert summarizer.summarize_meeting(l1, {s.segment_id: s for s in meeting_segments}) == l2
    # every line records the head that ranked it
    version = scorer.heads.version
    assert all(line.made_by == ("model", version) for line in (*l2, *(x for s in l1 for x in s.lines)))


def test_chinese_sections_get_the_extractive_lines(scorer: UtteranceScorer) -> None:
    segments = [seg(i, t, lang="zh") for i, t in enumerate(["嗯。", "供应商报价是四千二百五十元，包括模具费用。",
                                                             "张伟负责在下周五之前把修改后的外壳图纸发给工厂。"])]
    summary = LearnedSummarizer(scorer).summarize_section(section_of(segments), segments)
    assert summary.backend == "extractive" and "English only" in (summary.note or "")
    assert summary.lines


def test_a_head_that_cannot_score_leaves_the_extractive_summary_with_a_note(
        embedder: Any, meeting_segments: list[Segment]) -> None:
    wrong = LinearHeads("broken", ("summary",), np.zeros(3, np.float32), np.ones(3, np.float32),
                        np.zeros((3, 1), np.float32), np.zeros(1, np.float32), {})
    summarizer = LearnedSummarizer(UtteranceScorer(embedder=embedder, heads=wrong))
    summary = summarizer.summarize_section(section_of(meeting_segments), meeting_segments)
    assert summary.backend == "extractive" and summary.note and "learned summary not used" in summary.note
    assert summary.lines
    l2 = summarizer.summarize_meeting([summary], {s.segment_id: s for s in meeting_segments})
    assert l2 and summarizer.last_l2_note


# --- the rules, without a model ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "broken"), [
    ("We want a remote that is fancy.", False),
    ("We want a remote that is fancy", False),
    ("the remote controls look,", True),
    ("and then we go to the", True),
    ("and then we go to the.", True),
    ("I think we should use a rubber casing because", True),
    ("we could use rubber or", True),
    ("It depends on the price of", True),
    ("I think so.", False),
    ("What are we talking about?", False),
    ("Let's do it", False),
    ("It costs 12.50 Euros -", True),
    ("so the buttons...", True),
    ("Thank you", False),
    ("", False),
])
def test_a_line_ending_mid_clause_is_recognised(text: str, broken: bool) -> None:
    assert ends_mid_clause(text) is broken


@pytest.mark.parametrize(("texts", "expected"), [
    # a broken-off statement takes the speaker's next utterance, past another speaker's backchannel (which is
    # never a statement)
    ([("A", "We need a rubber case because"), ("B", "Yeah."), ("A", "it is cheap.")],
     [("We need a rubber case because it is cheap.", (0, 2))]),
    # a connective that would open a statement is not cited ("So, um," is not what was said)
    ([("A", "So, um,"), ("A", "the budget is 12.50 Euros.")], [("The budget is 12.50 Euros.", (1,))]),
    # fillers, stutters and false starts go; an utterance of fillers alone is not cited
    ([("A", "Um, the the rem remote is, uh, too big."), ("A", "Uh, um.")],
     [("The remote is too big.", (0,))]),
    # leading connectives go and the line gets its capital letter and full stop
    ([("A", "and so we ship the 500 units in April")], [("We ship the 500 units in April.", (0,))]),
    # a pause before something else: the comma goes
    ([("A", "Customers don't like the way remote controls look,"), ("B", "Right, so what about colour?")],
     [("Customers don't like the way remote controls look.", (0,)), ("What about colour?", (1,))]),
    # a statement that never closes is not whole
    ([("A", "We could use rubber or")], [("We could use rubber or", (0,))]),
])
def test_statements_join_one_speakers_utterances(texts: list[tuple[str, str]],
                                                 expected: list[tuple[str, tuple[int, ...]]]) -> None:
    segments = [seg(i, text, speaker) for i, (speaker, text) in enumerate(texts)]
    found = statements(segments)
    assert [(st.text, st.members) for st in found] == expected
    assert [st.whole for st in found] == [not ends_mid_clause(text) for text, _ in expected]


def test_a_long_silence_ends_a_statement() -> None:
    segments = [seg(0, "We could use rubber or", start=0.0), seg(1, "plastic.", start=30.0)]
    assert [(st.text, st.whole) for st in statements(segments, join_gap_s=6.0)] == [
        ("We could use rubber or", False), ("Plastic.", True)]


def test_every_line_says_what_made_it_and_keeps_it_when_stored() -> None:
    """Summary lines carry `made_by` (the CONTRACT's shape), through the digest store and back."""
    from meetmem.store.derived import line_from_row, line_row
    from meetmem.store.records import Source, SummaryLine

    line = SummaryLine("We ship in March.", Source(1.0, 2.0, ("s1",)), ("model", "ledger-detector-1+abcdef12"))
    assert line.public()["made_by"] == {"kind": "model", "version": "ledger-detector-1+abcdef12"}
    assert line_from_row(line_row(line)) == line
    old = SummaryLine("We ship in March.", Source(1.0, 2.0, ("s1",)))
    assert "made_by" not in old.public() and line_from_row(line_row(old)) == old
