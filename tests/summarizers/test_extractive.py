"""The extractive summarizer: lines are the transcript's own words, cited, and L2 is made from L1 alone."""

from __future__ import annotations

import re

import pytest

from meetmem.store.records import Section, Segment
from meetmem.summarizers.extractive import ExtractiveSummarizer, sentences, trim_fillers


def seg(i: int, text: str, speaker: str = "A", lang: str = "en") -> Segment:
    return Segment(f"s{i}", "t", "m", "d", i, i * 5.0, i * 5.0 + 4.0, text, speaker, lang, None, None, None, "", i,
                   "", "")


def section_of(segments: list[Segment], index: int = 0) -> Section:
    return Section(index, segments[0].start, segments[-1].end, tuple(s.segment_id for s in segments), "topic")


ENGLISH = [
    "Okay.",
    "Um, so the supplier quoted $4,250 for the tooling of the new hinge.",
    "Yeah.",
    "Priya will send the revised casing drawings to the factory by March 12th.",
    "I think that's fine, I mean, right.",
    "We are not using the aluminium casing because the drop tests failed twice last month.",
    "Mm-hmm.",
    "The first batch is 500 units of the TS-204 and it ships from Shenzhen in April.",
]
CHINESE = [
    "嗯。",
    "供应商报价是四千二百五十元，包括模具费用。",
    "好的。",
    "张伟负责在下周五之前把修改后的外壳图纸发给工厂。",
    "我们决定不用铝合金外壳，因为上个月跌落测试失败了两次。",
]


@pytest.fixture(scope="module")
def summarizer() -> ExtractiveSummarizer:
    return ExtractiveSummarizer()


@pytest.mark.parametrize("texts", [ENGLISH, CHINESE], ids=["en", "zh"])
def test_l1_lines_are_verbatim_cited_sentences(summarizer: ExtractiveSummarizer, texts: list[str]) -> None:
    segments = [seg(i, t, lang="zh" if texts is CHINESE else "en") for i, t in enumerate(texts)]
    summary = summarizer.summarize_section(section_of(segments), segments)
    by_id = {s.segment_id: s for s in segments}
    assert 1 <= len(summary.lines) <= 3
    assert summary.backend == "extractive"
    for line in summary.lines:
        (cited,) = line.source.segment_ids
        assert line.text in by_id[cited].text  # never reworded
        assert line.source.start == by_id[cited].start
    # Backchannels and fillers are not what a section is about.
    assert not {line.text for line in summary.lines} & {"Okay.", "Yeah.", "Mm-hmm.", "嗯。", "好的。"}


def test_numbers_names_and_dates_survive_word_for_word(summarizer: ExtractiveSummarizer) -> None:
    segments = [seg(i, t) for i, t in enumerate(ENGLISH)]
    text = summarizer.summarize_section(section_of(segments), segments).text
    for value in re.findall(r"\$[\d,]+|\d+(?:st|nd|rd|th)?|TS-204|Priya|March 12th", text):
        assert any(value in s.text for s in segments)
    assert any(v in text for v in ("$4,250", "March 12th", "TS-204", "500 units"))


def test_l2_is_made_from_the_l1_lines_alone(summarizer: ExtractiveSummarizer) -> None:
    parts = [ENGLISH[:4], ENGLISH[4:], CHINESE]
    l1 = []
    offset = 0
    for n, texts in enumerate(parts):
        segments = [seg(offset + i, t) for i, t in enumerate(texts)]
        offset += len(texts)
        l1.append(summarizer.summarize_section(section_of(segments, n), segments))
    l2 = summarizer.summarize_meeting(l1, {})
    l1_lines = {(line.text, line.source) for s in l1 for line in s.lines}
    assert l2 and all((line.text, line.source) in l1_lines for line in l2)
    assert [line.source.start for line in l2] == sorted(line.source.start for line in l2)


def test_a_section_of_backchannels_still_gets_a_line(summarizer: ExtractiveSummarizer) -> None:
    segments = [seg(0, "Okay."), seg(1, "Yeah, sure.")]
    summary = summarizer.summarize_section(section_of(segments), segments)
    assert len(summary.lines) == 1 and summary.lines[0].source.segment_ids[0] in {"s0", "s1"}


@pytest.mark.parametrize(("text", "trimmed"), [
    ("Um, so we ship on Friday.", "we ship on Friday."),
    ("Okay well, the budget is $40,000.", "the budget is $40,000."),
    ("No, we are not using it.", "No, we are not using it."),  # a negation is never a filler
    ("嗯，那个，预算是五万元。", "预算是五万元。"),
    ("Um.", "Um."),
])
def test_trimming_takes_only_leading_fillers(text: str, trimmed: str) -> None:
    assert trim_fillers(text) == trimmed
    assert trim_fillers(text) in text


def test_sentences_are_substrings() -> None:
    text = "We ship Friday. Is that OK? 好的。下周见！"
    assert sentences(text) == ["We ship Friday.", "Is that OK?", "好的。", "下周见！"]


@pytest.mark.parametrize(("text", "expected"), [
    # A stop inside a number or an abbreviation is not the end of a sentence.
    ("It starts at 6.05 p.m. Bring the samples.", ["It starts at 6.05 p.m.", "Bring the samples."]),
    ("The quote is $4.5 million... really?! Yes", ["The quote is $4.5 million...", "really?!", "Yes"]),
    ("Version 2.1.3 ships; the rest waits.", ["Version 2.1.3 ships;", "the rest waits."]),
])
def test_sentences_end_at_a_stop_before_a_space(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected
