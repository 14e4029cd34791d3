"""The extractive answerer: question kinds, verbatim quotes, citations that are the stored text, on a log in a
real SQLite file and in a real PostgreSQL database (its vectors in pgvector)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from meetmem.answers.answer_types import expected_answer_types, question_kind
from meetmem.answers.pipeline import Answerer
from meetmem.answers.records import MAX_CITATIONS
from meetmem.answers.tokens import count_tokens
from meetmem.store.backends import open_log, open_search
from meetmem.store.errors import MeetingNotFound
from meetmem.store.index.search_types import SearchFilters
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput
from meetmem.store.timecode import format_time
from meetmem.summarizers.extractive import sentences

#: The tests on a log run on each store (`cloud_backend`); the pure functions' tests once.
BACKENDS = ("sqlite", "postgres")

MEETING = "launch"

KINDS = [
    ("What exactly did she say the deadline was?", "verbatim"),
    ("How much was the tooling?", "verbatim"),
    ("Which part number is the sensor board?", "verbatim"),
    ("What did we decide about the casing?", "overview"),
    ("Can you summarize the meeting?", "overview"),
    ("What are the action items?", "overview"),
    ("What is still pending?", "overview"),
    ("供应商报价多少钱？", "verbatim"),
    ("截止日期是哪天？", "verbatim"),
    ("总结一下这次会议", "overview"),
    ("我们做了哪些决定？", "overview"),
    ("有哪些待办？", "overview"),
]


@pytest.mark.parametrize(("question", "kind"), KINDS, ids=[q for q, _ in KINDS])
def test_question_kind(question: str, kind: str) -> None:
    assert question_kind(question) == kind


TYPES = [
    ("When is the deadline?", "date"),
    ("What time is the review?", "time"),
    ("How much did the supplier quote?", "money"),
    ("How many units do we order?", "quantity"),
    ("Which part number is the board?", "code"),
    ("Who owns the press release?", "person"),
    ("什么时候发布？", "date"),
    ("几点开会？", "time"),
    ("报价多少钱？", "money"),
    ("型号是什么？", "code"),
    ("谁负责？", "person"),
]


@pytest.mark.parametrize(("question", "wanted"), TYPES, ids=[q for q, _ in TYPES])
def test_expected_answer_types(question: str, wanted: str) -> None:
    assert wanted in expected_answer_types(question)


@pytest.mark.parametrize("text", [
    "Okay. So we decided to go with the aluminium casing. Everyone fine with that?",
    "One-off. Per unit it's about two dollars more than plastic",
    "我们用铝合金外壳。不用塑料！对吗？",
    "no punctuation at all",
    "Version v1.2 ships; the rest waits.",
])
def test_sentences_are_verbatim_pieces_of_the_segment(text: str) -> None:
    parts = sentences(text)
    assert parts and all(part and part in text for part in parts)
    assert re.sub(r"\s+", "", "".join(parts)) == re.sub(r"\s+", "", text)


@pytest.mark.parametrize(("seconds", "shown"), [(0, "00:00"), (27.4, "00:27"), (114.31, "01:54"),
                                                (3599.9, "59:59"), (3600, "1:00:00"), (7384, "2:03:04")])
def test_format_time(seconds: float, shown: str) -> None:
    assert format_time(seconds) == shown


def test_count_tokens_counts_chinese_per_character() -> None:
    assert count_tokens("") == 0
    assert count_tokens("我们用铝合金外壳") == 8
    assert count_tokens("abcd" * 10) == 10
    assert count_tokens("报价 $4,250") == 2 + 2
    assert count_tokens("a much longer English sentence about the casing") > count_tokens("casing")


@pytest.fixture
def log(tmp_path: Path, cloud_backend: str | None) -> Iterator[Any]:
    """A fresh log: a SQLite file, or a fresh PostgreSQL database."""
    with closing(open_log(cloud_backend or tmp_path / "log.db")) as opened:
        yield opened


def _answerer(log: Any, embedder: Any) -> Iterator[Answerer]:
    search = open_search(log, embedder)
    yield Answerer(search)
    if hasattr(search, "close"):  # PostgreSQL's search holds a connection pool; SQLite's holds nothing
        search.close()


@pytest.fixture
def meeting(log: TranscriptLog, sample_device_and_segments) -> TranscriptLog:
    device, segments = sample_device_and_segments
    log.append(MEETING, device, segments)
    return log


def _check_citations(answer, log: TranscriptLog) -> None:
    assert 1 <= len(answer.citations) <= MAX_CITATIONS
    stored = log.get(c.segment_id for c in answer.citations)
    for citation in answer.citations:
        segment = stored[citation.segment_id]
        assert (citation.text, citation.start, citation.end, citation.speaker) == (
            segment.text, segment.start, segment.end, segment.speaker)
    assert len({c.segment_id for c in answer.citations}) == len(answer.citations)


class TestWithoutModel:
    """BM25 alone (`--embedder none`): the same answer contract."""

    @pytest.fixture
    def answerer(self, meeting: TranscriptLog) -> Iterator[Answerer]:
        yield from _answerer(meeting, None)

    def test_a_verbatim_answer_quotes_its_first_citation(self, answerer: Answerer, meeting: TranscriptLog) -> None:
        answer = answerer.ask(MEETING, "How much did the supplier quote for the tooling?")
        assert answer.kind == "verbatim"
        _check_citations(answer, meeting)
        quoted = re.match(r'^"(.+)" \((?:(.+), )?(\d+:\d\d(?::\d\d)?)\)$', answer.answer, re.S)
        assert quoted, answer.answer
        first = answer.citations[0]
        assert quoted.group(1) in first.text
        assert quoted.group(3) == format_time(first.start)
        assert "$4,250" in answer.answer

    def test_the_manifest_starts_with_the_question_and_lists_the_citations(self, answerer: Answerer) -> None:
        answer = answerer.ask(MEETING, "  Which part number is the sensor board?  ")
        assert answer.question == "Which part number is the sensor board?"
        assert answer.manifest[0].block == "question"
        assert answer.manifest[0].tokens == count_tokens(answer.question)
        for citation in answer.citations:
            assert any(citation.segment_id in block.block for block in answer.manifest)
        public = answer.public(explain=True)
        assert [b["block"] for b in public["manifest"]] == [b.block for b in answer.manifest]
        assert "manifest" not in answer.public()

    def test_nothing_matching_is_said_plainly(self, answerer: Answerer) -> None:
        answer = answerer.ask(MEETING, "zeppelin xylophone")
        assert answer.citations == ()
        assert answer.answer

    def test_a_corrected_segment_is_never_cited(self, answerer: Answerer, meeting: TranscriptLog) -> None:
        old = answerer.ask(MEETING, "How much did the supplier quote for the tooling?").citations[0]
        fix = SegmentInput(seq=100, start=old.start, end=old.end, speaker=old.speaker, supersedes=old.segment_id,
                           text="Aluminium is more expensive, though. The supplier quoted $5,120 for the tooling.")
        meeting.append(MEETING, "glasses-fix", [fix])
        answer = answerer.ask(MEETING, "How much did the supplier quote for the tooling?")
        assert old.segment_id not in {c.segment_id for c in answer.citations}
        assert "$5,120" in answer.answer

    def test_a_value_the_recogniser_put_in_the_next_sentence_is_quoted_with_its_subject(
            self, answerer: Answerer, meeting: TranscriptLog) -> None:
        # Whisper ends sentences where the speaker pauses, often just before the value.
        said = SegmentInput(seq=200, start=900.0, end=906.0, speaker="Erin",
                            text="Okay. Put the zeppelin workshop in your calendars. October 9th at 6.05 p.m. Thanks.")
        meeting.append(MEETING, "glasses-late", [said])
        answer = answerer.ask(MEETING, "What day is the zeppelin workshop?")
        assert '"Put the zeppelin workshop in your calendars. October 9th at 6.05 p.m."' in answer.answer
        assert answer.citations[0].text == said.text

    def test_a_value_the_edge_cut_into_the_next_segment_is_quoted_across_both(
            self, answerer: Answerer, meeting: TranscriptLog) -> None:
        # The VAD cut at the speaker's pause; the next segment of the same device holds the date.
        first = SegmentInput(seq=0, start=900.0, end=903.0, speaker=None,
                             text="Yes, thanks. Before I forget, put the zeppelin workshop in your calendars.")
        second = SegmentInput(seq=1, start=903.4, end=906.0, speaker=None,
                              text="October 9th at 6.05pm. Sorry, you cut out there.")
        far = SegmentInput(seq=2, start=990.0, end=992.0, speaker=None, text="November 2nd works for me.")
        meeting.append(MEETING, "glasses-cut", [first, second, far])
        answer = answerer.ask(MEETING, "What day is the zeppelin workshop?")
        assert ('"Before I forget, put the zeppelin workshop in your calendars. October 9th at 6.05pm."'
                in answer.answer)
        stored = meeting.segments(MEETING)
        ids = {s.text: s.segment_id for s in stored}
        assert [c.segment_id for c in answer.citations[:2]] == [ids[first.text], ids[second.text]]
        assert any("runs on" in block.reason for block in answer.manifest)

    def test_filters_limit_the_citations(self, answerer: Answerer, meeting: TranscriptLog) -> None:
        answer = answerer.ask(MEETING, "What about the aluminium casing?", filters=SearchFilters(speaker="Bob"))
        assert answer.citations and all(c.speaker == "Bob" for c in answer.citations)

    @pytest.mark.parametrize(("question", "speaker", "words"), [
        # Asked for someone's own words: that speaker's turns come first.
        ("What did Dana say about the press release?", "Dana", "April 2nd"),
        # A person named as the subject: whoever said it, the answer is the line that holds it.
        ("By when does Bob owe the supplier the revised quote?", "Alice", "March 12th"),
    ])
    def test_a_named_person_is_the_speaker_only_when_asked_what_they_said(
            self, answerer: Answerer, question: str, speaker: str, words: str) -> None:
        answer = answerer.ask(MEETING, question)
        assert speaker in {c.speaker for c in answer.citations[:2]}
        assert words in answer.answer

    def test_unknown_meeting(self, answerer: Answerer) -> None:
        with pytest.raises(MeetingNotFound):
            answerer.ask("no-such-meeting", "anything?")


@pytest.mark.model
class TestWithMiniLM:
    @pytest.fixture
    def answerer(self, meeting: TranscriptLog, embedder) -> Iterator[Answerer]:
        yield from _answerer(meeting, embedder)

    def test_every_answer_keeps_the_contract(self, answerer: Answerer, meeting: TranscriptLog,
                                             sample_questions) -> None:
        for item in sample_questions:
            answer = answerer.ask(MEETING, item["question"])
            _check_citations(answer, meeting)
            assert answer.kind == question_kind(item["question"])

    def test_the_sample_questions_are_answered_with_the_exact_values(self, answerer: Answerer,
                                                                    sample_questions) -> None:
        """The demo's promise: paraphrased questions, the exact value back, quoted from the first citation."""
        wrong = []
        for item in sample_questions:
            answer = answerer.ask(MEETING, item["question"])
            expected = item["expected"].casefold()
            first = answer.citations[0].text.casefold() if answer.citations else ""
            if expected not in answer.answer.casefold() or expected not in first:
                wrong.append((item["question"], item["expected"], answer.answer))
        assert not wrong, wrong

    def test_the_sample_answers_are_retrieved(self, answerer: Answerer, sample_questions) -> None:
        """Whatever sentence is quoted, the segment holding the answer is among the citations."""
        for item in sample_questions:
            answer = answerer.ask(MEETING, item["question"])
            assert item["answer_start"] in [c.start for c in answer.citations], item["question"]
