"""The one answer flow: the plan (a pure function, table-tested), the decision route, and a language model
answering routed questions over the route's own evidence (a scripted model over real loopback HTTP, the
real client, a real SQLite log and real BM25 search)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.chat_server import ScriptedChatServer

from meetmem.answers.model import LLMAnswerer
from meetmem.answers.pipeline import Answerer
from meetmem.answers.plan import QuestionContext, plan, settled_subject
from meetmem.answers.prompting import PromptSources
from meetmem.answers.questions import MeetingClock
from meetmem.answers.speakers import build_directory
from meetmem.store.backends import open_log, open_search
from meetmem.store.records import SegmentInput
from meetmem.summarizers.digest import MeetingDigester
from meetmem.summarizers.extractive import ExtractiveSummarizer
from meetmem.summarizers.llm.chat import OpenAIChat

MEETING = "launch"
CLOCK = MeetingClock(end=2400.0, started_at=dt.datetime(2027, 3, 1, 14, 0, tzinfo=dt.UTC), joined_at=1500.0)


def _directory() -> Any:
    from meetmem.store.records import Segment

    said = [("A", "Hi all, I'm the project manager for this one."), ("B", "I'm the user interface designer."),
            ("C", "My name is Priya and I'm the marketing expert."), ("D", "Right, industrial design is me.")]
    segments = [Segment(segment_id=f"s{i}", tenant="t", meeting_id="m", device_id="d", seq=i, start=float(i),
                        end=i + 0.5, text=text, speaker=label, lang="en", raw_text=None, confidence=None,
                        supersedes=None, received_at="2027-03-01T14:00:00Z", chain_pos=i + 1, prev_hash="",
                        hash="") for i, (label, text) in enumerate(said)]
    return build_directory(segments)


PLANS = [
    # question, route, expected parameters (a subset)
    ("what did I miss in the last 10 minutes?", "time", {"start": 1800.0, "end": 2400.0}),
    ("What did I miss since I joined?", "time", {"start": 1500.0, "end": 2400.0}),
    ("what happened around 2:15 pm?", "time", {"start": 750.0, "end": 1050.0}),
    ("what did we decide about the case?", "topic", {"topic": "case", "focus": ("decision",)}),
    ("What options did the user interface designer put forward?", "speaker", {"speaker": "B", "topic": "options"}),
    ("what did the project manager say about the agenda?", "speaker", {"speaker": "A", "topic": "agenda"}),
    ("What did Priya say about the budget?", "speaker", {"speaker": "C"}),
    ("what did the PM say about the budget?", "speaker", {"speaker": "A"}),
    ("why did marketing want an LCD?", "why", {"speaker": "C"}),
    ("Which sensor board are we ordering?", "decision", {"topic": "sensor board"}),
    ("what are we doing about the hinge?", "decision", {"topic": "hinge"}),
    ("By when does Bob owe the supplier the revised quote?", "verbatim", {"asks_change": True}),
    ("What did Dana say the price was?", "verbatim", {}),  # Dana is no speaker here: the verbatim route
    ("What are the action items?", "overview", {"focus": ("todo",)}),
    ("What does Priya owe?", "overview", {"owner": "Priya"}),
    ("summarize the meeting", "overview", {"focus": ()}),
    ("我们决定用哪个型号？", "decision", {}),
    ("最后十分钟说了什么？", "time", {"start": 1800.0}),
]


@pytest.mark.parametrize(("question", "route", "params"), PLANS)
def test_the_plan_of_each_question(question: str, route: str, params: dict[str, Any]) -> None:
    made = plan(question, QuestionContext(clock=CLOCK, speakers=_directory()))
    assert made.route == route, made
    for name, value in params.items():
        assert getattr(made, name) == value, (name, made)
    assert made.reason


def test_the_plan_reads_the_meeting_only_when_the_question_needs_it() -> None:
    reads: list[str] = []

    def clock() -> MeetingClock:
        reads.append("clock")
        return CLOCK

    def speakers() -> Any:
        reads.append("speakers")
        return _directory()

    plan("By when does Bob owe the supplier the revised quote?", QuestionContext(clock=clock, speakers=speakers,
                                                                                  labels=["A", "B"]))
    assert reads == []
    plan("what did I miss in the last 10 minutes?", QuestionContext(clock=clock, speakers=speakers))
    assert reads == ["clock"]


def test_unrouted_and_filtered_plans_keep_to_verbatim_or_overview() -> None:
    off = QuestionContext(clock=CLOCK, speakers=_directory(), routed=False)
    assert plan("what did I miss in the last 10 minutes?", off).route == "verbatim"
    assert plan("what did we decide?", off).route == "overview"
    fixed = QuestionContext(clock=CLOCK, speakers=_directory(), filtered=True)
    assert plan("what did the project manager say about the agenda?", fixed).route == "verbatim"


@pytest.mark.parametrize(("question", "subject"), [
    ("Which sensor board are we ordering?", "sensor board"),
    ("what casing are we going with?", "casing"),
    ("So what price did we settle on?", "price"),
    ("Which supplier will we use for the hinges?", "supplier hinges"),
    ("Which one is cheaper?", None),
    ("What figure did we get for the strap licence fee?", None),  # a value asked for, not a choice
    ("What time is the review?", None),
])
def test_settled_subjects(question: str, subject: str | None) -> None:
    assert settled_subject(question) == subject


class Meeting:
    """The sample meeting in a real SQLite log, a second device joining late, BM25 search, the digest."""

    def __init__(self, path: Path, segments: list[SegmentInput]) -> None:
        self.log = open_log(path)
        self.log.append(MEETING, "file:sample", segments)
        self.log.append(MEETING, "glasses:late", [
            SegmentInput(seq=0, start=200.0, end=203.0, text="Sorry, I'm joining late.", speaker="Eve")])
        self.log.close_meeting(MEETING)
        self.search = open_search(self.log, None)
        self.digester = MeetingDigester(self.log, self.search, ExtractiveSummarizer())
        self.extractive = Answerer(self.search, digests=self.digester.digest)

    def close(self) -> None:
        self.log.close()


@pytest.fixture
def meeting(tmp_path: Path, sample_segments: list[SegmentInput]) -> Iterator[Meeting]:
    m = Meeting(tmp_path / "log.db", sample_segments)
    yield m
    m.close()


def test_the_decision_comes_first_for_what_the_meeting_settled(meeting: Meeting) -> None:
    answer = meeting.extractive.ask(MEETING, "Which sensor board are we ordering?")
    first = answer.answer.splitlines()[0]
    assert answer.route == "decision"
    assert "TS-204" in first and "500 units" in first and "TS-180" not in first
    assert "TS-204" in answer.citations[0].text and "500 units" in answer.citations[0].text


def test_one_signature_for_every_answerer(meeting: Meeting) -> None:
    """The extractive answerer takes the same arguments as the model's: a session is simply not read."""
    from meetmem.answers.sessions import AskSession

    session = AskSession()
    answer = meeting.extractive.ask(MEETING, "What did I miss since I joined?", device_id="glasses:late",
                                    session=session)
    assert answer.route == "time" and all(c.start >= 200.0 for c in answer.citations)
    assert len(session) == 0


def _transcript_lines(request: Any) -> list[str]:
    text = "\n".join(str(m.get("content") or "") for m in request.json["messages"])
    return re.findall(r"^\[#\d+ [^\]]*\] .*$", text, re.MULTILINE)


def _citing_first_line(request: Any) -> str:
    first = _transcript_lines(request)[0]
    handle = re.match(r"^\[#(\d+)", first).group(1)  # type: ignore[union-attr]
    return f"Since you joined, Alice recapped the plan [#{handle}]."


def test_a_model_answers_since_i_joined_from_the_stretch_after_the_device_joined(meeting: Meeting) -> None:
    sources = PromptSources(meeting.search, meeting.digester.digest)
    with ScriptedChatServer(_citing_first_line) as server:
        answerer = LLMAnswerer(sources, OpenAIChat(server.url, "m"), meeting.extractive)
        answer = answerer.ask(MEETING, "What did I miss since I joined?", device_id="glasses:late")
        answerer.close()
    assert len(server.requests) == 1
    lines = _transcript_lines(server.requests[0])
    assert lines, "the route's evidence is in the prompt"
    starts = [int(m.group(1)) * 60 + int(m.group(2)) for m in
              (re.match(r"^\[#\d+ (\d+):(\d\d)", line) for line in lines) if m]
    assert starts and min(starts) >= 200, "only the stretch since the device joined is shown"
    assert "since I joined" in "\n".join(str(m.get("content")) for m in server.requests[0].json["messages"])
    assert answer.route == "time" and "(The model" not in answer.answer
    assert answer.citations and all(c.start >= 200.0 for c in answer.citations)


def test_a_model_answers_a_speaker_question_from_that_speakers_turns(meeting: Meeting) -> None:
    sources = PromptSources(meeting.search, meeting.digester.digest)
    with ScriptedChatServer(_citing_first_line) as server:
        answerer = LLMAnswerer(sources, OpenAIChat(server.url, "m"), meeting.extractive)
        answer = answerer.ask(MEETING, "What did Chen Wei say about the hinge?")
        answerer.close()
    lines = _transcript_lines(server.requests[0])
    assert lines and all("Chen Wei]" in line for line in lines)
    assert answer.route == "speaker" and answer.citations[0].speaker == "Chen Wei"


def test_a_speaker_who_never_names_the_topic_gets_their_main_points_not_nothing(meeting: Meeting) -> None:
    answer = meeting.extractive.ask(MEETING, "What options did Chen Wei put forward?")
    assert answer.route == "speaker"
    assert answer.citations and all(c.speaker == "Chen Wei" for c in answer.citations)
    assert "said nothing" not in answer.answer
