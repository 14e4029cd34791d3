"""Answers from a language model over the compiled context, run against a scripted model over real loopback
HTTP (the real client), a real log (a SQLite file, or a PostgreSQL database) and real BM25 search: a valid
answer keeps its verified citations; a made-up quote or handle falls back to the transcript's own answer;
expand() reads the log; an overlong prompt is compacted once; a failing model trips the breaker; a session's
prompts grow by appending."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import ScriptedAnthropicServer
from fakes.chat_server import ErrorReply, RawReply, ScriptedChatServer

from meetmem.answers.compiler import CompilerOptions, prefix_reuse
from meetmem.answers.model import (
    NOTE_BAD_QUOTE,
    NOTE_FAILED,
    NOTE_NO_CITATION,
    NOTE_UNKNOWN_HANDLE,
    AskSession,
    LLMAnswerer,
    cited_handles,
    quotes,
)
from meetmem.answers.pipeline import Answerer
from meetmem.answers.prompting import PromptSources
from meetmem.store.backends import open_log, open_search
from meetmem.store.records import SegmentInput
from meetmem.summarizers.digest import MeetingDigester
from meetmem.summarizers.extractive import ExtractiveSummarizer
from meetmem.summarizers.llm.anthropic_chat import AnthropicChat
from meetmem.summarizers.llm.chat import OpenAIChat
from meetmem.summarizers.llm.chat_tools import OpenAIToolChat

#: The tests on a meeting run on each store (`cloud_backend`).
BACKENDS = ("sqlite", "postgres")

MEETING = "launch"
QUOTE_DUE = "By when does Bob owe the supplier the revised quote?"


class Meeting:
    """The sample meeting in a real log, with BM25 search and the extractive digest."""

    def __init__(self, target: str | Path, segments: list[SegmentInput]) -> None:
        self.log = open_log(target)
        self.log.append(MEETING, "file:sample", segments)
        self.log.close_meeting(MEETING)
        self.search = open_search(self.log, None)
        self.digester = MeetingDigester(self.log, self.search, ExtractiveSummarizer())
        self.sources = PromptSources(self.search, self.digester.digest)
        self.extractive = Answerer(self.search, digests=self.digester.digest)
        self.made: list[LLMAnswerer] = []

    def answerer(self, chat: Any, **kwargs: Any) -> LLMAnswerer:
        made = LLMAnswerer(self.sources, chat, self.extractive, **kwargs)
        self.made.append(made)
        return made

    def close(self) -> None:
        for answerer in self.made:
            answerer.close()
        if hasattr(self.search, "close"):  # PostgreSQL's search holds a connection pool
            self.search.close()
        self.log.close()

    def text_of(self, segment_id: str) -> str:
        return self.log.get([segment_id])[segment_id].text


@pytest.fixture
def meeting(tmp_path: Path, sample_segments: list[SegmentInput], cloud_backend: str | None) -> Iterator[Meeting]:
    m = Meeting(cloud_backend or tmp_path / "log.db", sample_segments)
    yield m
    m.close()


def prompt_text(request: Any) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"]) if "messages" in request else ""


def handle(request: Any, fragment: str) -> int:
    """The handle the prompt gave the transcript line holding `fragment`."""
    text = prompt_text(request) + "\n" + "\n".join(str(b.get("text", "")) for b in request.get("system") or [])
    match = re.search(rf"^\[#(\d+) [^\]]*\] .*{re.escape(fragment)}", text, re.MULTILINE)
    assert match, f"no line with {fragment!r} in the prompt"
    return int(match.group(1))


def citing(template: str, fragment: str) -> Callable[[Any], str]:
    """A reply citing the line that holds `fragment`: `template` has `{h}` for its handle."""
    return lambda request: template.format(h=handle(request, fragment))


def serve(*replies: Any) -> ScriptedChatServer:
    """A scripted server answering the i-th request with the i-th reply (callables get the request)."""
    script = list(replies)

    def answer(request: Any) -> Any:
        n = len(server.requests) - 1
        if n >= len(script):
            return ErrorReply(500, f"no reply left for request {n + 1}")
        reply = script[n]
        return reply(request) if callable(reply) else reply

    server = ScriptedChatServer(answer)
    return server


def flat(messages: list[dict[str, Any]]) -> str:
    return "\x00".join(m["role"] + "\x01" + str(m["content"]) for m in messages)


def test_reading_handles_and_quotes() -> None:
    assert cited_handles("Due March 12th [#22], as Alice said [#3, #22] and [#7 01:20 Bob].") == [22, 3, 7]
    assert quotes('She said "by March 12th." and “five hundred”, 「下周五」') == ["by March 12th", "five hundred",
                                                                            "下周五"]


def test_a_valid_answer_comes_back_with_verified_verbatim_citations_and_the_manifest(meeting: Meeting) -> None:
    with serve(citing('Bob owes it "by March 12th" [#{h}].', "March 12th")) as server:
        answerer = meeting.answerer(OpenAIChat(server.url, "m"))
        answer = answerer.ask(MEETING, QUOTE_DUE)
    assert len(server.requests) == 1
    assert answer.answer.startswith('Bob owes it "by March 12th" [01:54]') and "#" not in answer.answer
    assert answer.kind == "verbatim" and len(answer.citations) == 1
    cited = answer.citations[0]
    assert cited.text == meeting.text_of(cited.segment_id) == "Bob will send the revised quote to the supplier by " \
                                                               "March 12th."
    names = [b.block for b in answer.manifest]
    assert names[0] == "instructions" and names[-1] == "question"
    assert any(b.reason.startswith("retrieved") for b in answer.manifest)
    assert sum(b.tokens for b in answer.manifest) > 0
    public = answer.public(explain=True)
    assert set(public) == {"question", "kind", "answer", "citations", "manifest", "route", "plan"}
    assert set(public["manifest"][0]) == {"block", "tokens", "reason"}


@pytest.mark.parametrize(("reply", "note"), [
    (citing('Bob owes it "by March 15th" [#{h}].', "March 12th"), NOTE_BAD_QUOTE),  # a quote not in the line
    ("It is due March 12th [#9999].", NOTE_UNKNOWN_HANDLE),  # a handle the prompt never showed
    (citing('The supplier said "by March 12th" [#{h}].', "4,250"), NOTE_BAD_QUOTE),  # quote not in what it cites
    ("It is due March 12th.", NOTE_NO_CITATION),
])
def test_an_unverified_answer_is_replaced_by_the_extractive_one_with_a_note(meeting: Meeting, reply: Any,
                                                                             note: str) -> None:
    with serve(reply) as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m")).ask(MEETING, QUOTE_DUE)
    extractive = meeting.extractive.ask(MEETING, QUOTE_DUE)
    assert answer.answer == f"{extractive.answer}\n{note}"
    assert answer.citations == extractive.citations
    assert "March 12th" in answer.answer
    model = [b for b in answer.manifest if b.block == "language model"]
    assert len(model) == 1 and model[0].reason.startswith("rejected")


def test_a_handle_of_a_line_dropped_for_budget_is_not_citable(meeting: Meeting) -> None:
    # The line is retrieved but does not fit: it is in `shown` of the compiler, but the model never saw it.
    target = next(s for s in meeting.log.segments(MEETING) if "March 12th" in s.text)

    def reply(request: Any) -> str:
        assert f"[#{target.chain_pos} " not in prompt_text(request)
        return f"Due March 12th [#{target.chain_pos}]."

    options = CompilerOptions(retrieved_tokens=5, recent_tokens=0)
    with serve(reply) as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m"), options=options).ask(MEETING, QUOTE_DUE)
    assert answer.answer.endswith(NOTE_UNKNOWN_HANDLE)


def test_a_plain_text_expand_is_served_from_the_log_and_its_lines_become_citable(meeting: Meeting) -> None:
    question = "zebra xylophone?"  # retrieval finds nothing: the model must read the meeting to answer
    with serve("I need more.\nexpand(185.0, 200.0)", citing('"the hinge drop tests will be done" [#{h}].',
                                                              "hinge drop tests will be done")) as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m")).ask(MEETING, question)
    assert len(server.requests) == 2
    target = next(s for s in meeting.log.segments(MEETING) if "hinge drop tests will be done" in s.text)
    assert f"[#{target.chain_pos} " not in prompt_text(server.requests[0].json)  # only the expand showed it
    second = server.requests[1].json["messages"]
    assert second[-2] == {"role": "assistant", "content": "I need more.\nexpand(185.0, 200.0)"}
    assert second[-1]["role"] == "user" and second[-1]["content"].startswith("expand(185.0, 200.0) returned:\n[#")
    in_range = meeting.log.segments(MEETING, start=185.0, end=200.0)
    expanded = [b for b in answer.manifest if b.reason == "expand(185.0, 200.0)"]
    assert [b.block for b in expanded] == [f"segment #{s.chain_pos} [{int(s.start) // 60:02d}:{int(s.start) % 60:02d}]"
                                           for s in in_range]
    assert "transcript's own answer" not in answer.answer
    assert [c.text for c in answer.citations] == ["Yes, the hinge drop tests will be done by March 20th."]


def test_an_openai_tool_call_is_served_and_answered_as_a_tool_message(meeting: Meeting) -> None:
    # A line the question's retrieval does not find, cited only after the model read it through the tool.
    target = next(s for s in meeting.log.segments(MEETING) if s.start > 200)
    tool_call = RawReply({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "expand", "arguments": f'{{"start": {target.start}, "end": {target.end}}}'}}]}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 10}})
    with serve(tool_call, f"Said at the end [#{target.chain_pos}].") as server:
        chat = OpenAIToolChat(server.url, "m")
        answer = meeting.answerer(chat).ask(MEETING, "zebra crossing xylophone?")
    first, second = (r.json for r in server.requests)
    assert first["tools"][0]["function"]["name"] == "expand"
    assert second["messages"][-3]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][-2] == {"role": "tool", "tool_call_id": "call_1",
                                      "content": second["messages"][-2]["content"]}
    assert f"[#{target.chain_pos} " in second["messages"][-2]["content"]
    assert [c.segment_id for c in answer.citations] == [target.segment_id]
    assert "transcript's own answer" not in answer.answer


def test_expands_are_capped(meeting: Meeting) -> None:
    with serve("expand(0, 10)", "expand(10, 20)", "expand(20, 30)") as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m"), max_expands=2).ask(MEETING, QUOTE_DUE)
    assert len(server.requests) == 3
    assert "transcript's own answer" in answer.answer


def test_prompt_too_long_is_compacted_and_retried_exactly_once(meeting: Meeting) -> None:
    too_long = ErrorReply(400, "This model's maximum context length is 1000 tokens. However, your messages "
                               "resulted in 1800 tokens. Please reduce the length of the messages.")
    with serve(too_long, citing('"by March 12th" [#{h}]', "March 12th")) as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m")).ask(MEETING, QUOTE_DUE)
    assert len(server.requests) == 2
    first, second = (prompt_text(r.json) for r in server.requests)
    assert len(second) < len(first)
    assert answer.manifest[0].reason.startswith("compacted after prompt too long")
    assert answer.citations and "transcript's own answer" not in answer.answer


def test_a_second_prompt_too_long_is_a_failure_not_a_loop(meeting: Meeting) -> None:
    too_long = ErrorReply(400, "prompt is too long: 9000 tokens > 800 maximum")
    with serve(too_long, too_long, too_long) as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m")).ask(MEETING, QUOTE_DUE)
    assert len(server.requests) == 2
    assert answer.answer.endswith(NOTE_FAILED)


def test_three_failures_open_the_breaker_and_the_next_question_makes_no_request(meeting: Meeting) -> None:
    now = [0.0]
    with serve(ErrorReply(503, "overloaded"), "no citation here", ErrorReply(500, "boom"),
               citing('"by March 12th" [#{h}]', "March 12th")) as server:
        answerer = meeting.answerer(OpenAIChat(server.url, "m"), breaker_threshold=3, cooldown=60,
                                    clock=lambda: now[0])
        for _ in range(3):
            assert "transcript's own answer" in answerer.ask(MEETING, QUOTE_DUE).answer
        assert len(server.requests) == 3
        paused = answerer.ask(MEETING, QUOTE_DUE)
        assert len(server.requests) == 3  # no request at all
        assert "paused after 3 failed answers" in paused.answer and "March 12th" in paused.answer
        now[0] = 61.0  # after the cool-down, one question tries again; a success closes the breaker
        assert "transcript's own answer" not in answerer.ask(MEETING, QUOTE_DUE).answer
        assert len(server.requests) == 4 and answerer.breaker.failures == 0


def test_token_counts_are_calibrated_from_what_the_api_reports(meeting: Meeting) -> None:
    def reply(request: Any) -> RawReply:
        return RawReply({"choices": [{"index": 0, "message": {"role": "assistant", "content":
                         f'"by March 12th" [#{handle(request, "March 12th")}]'}}],
                         "usage": {"prompt_tokens": 2 * estimated[0], "completion_tokens": 5}})

    estimated = [0]
    answerer = meeting.answerer(None)
    estimated[0] = meeting.sources.compile(MEETING, QUOTE_DUE).prompt.tokens
    with serve(reply, reply) as server:
        answerer.chat = OpenAIChat(server.url, "m")
        first = answerer.ask(MEETING, QUOTE_DUE)
        assert answerer.calibration == pytest.approx(2.0, rel=0.01)
        second = answerer.ask(MEETING, QUOTE_DUE)
    assert sum(b.tokens for b in second.manifest) > 1.8 * sum(b.tokens for b in first.manifest)


def test_a_sessions_second_prompt_starts_with_the_first_prompt(meeting: Meeting) -> None:
    session = AskSession()
    with serve(citing('"by March 12th" [#{h}]', "March 12th"), citing('"the TS-204" [#{h}]', "go with the TS-204"),
               ) as server:
        answerer = meeting.answerer(OpenAIChat(server.url, "m"))
        answerer.ask(MEETING, QUOTE_DUE, session=session)
        second = answerer.ask(MEETING, "Which sensor board are we ordering?", session=session)
    first_messages, second_messages = (r.json["messages"] for r in server.requests)
    assert flat(second_messages).startswith(flat(first_messages))  # byte prefix: a provider's cache reuses it
    assert prefix_reuse(first_messages, second_messages) > 0.5
    assert second_messages[len(first_messages)]["role"] == "assistant"
    assert len(session.turns) == 2 and "[#" in session.turns[0].answer
    assert "TS-204" in second.answer and "transcript's own answer" not in second.answer


def test_anthropic_requests_carry_the_key_the_version_and_cache_breakpoints(meeting: Meeting) -> None:
    with ScriptedAnthropicServer(lambda request: citing('"by March 12th" [#{h}]', "March 12th")(request)
                                 ) as server:
        chat = AnthropicChat(server.url, "claude-test", api_key="sk-test")
        answerer = meeting.answerer(chat)
        answer = answerer.ask(MEETING, QUOTE_DUE)
        again = answerer.ask(MEETING, QUOTE_DUE)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test" and request.headers["anthropic-version"] == "2023-06-01"
    body = request.json
    assert body["model"] == "claude-test" and body["max_tokens"] == 512
    assert [m["role"] for m in body["messages"]] == ["user"]
    system = body["system"]
    marked = [i for i, b in enumerate(system) if "cache_control" in b]
    assert [system[i]["cache_control"] for i in marked] == [{"type": "ephemeral"}] * 2
    # the first mark ends the instructions and metadata (layer 1), the second the ledger (layer 2)
    assert "Meeting: launch" in system[marked[0]]["text"] and "Ledger" in system[marked[1]]["text"]
    assert all("Ledger" not in b["text"] for b in system[: marked[0] + 1])
    assert "".join(b["text"] for b in system) == meeting.sources.compile(MEETING, QUOTE_DUE).prompt.messages()[0][
        "content"]
    assert answer.citations and "transcript's own answer" not in answer.answer
    assert again.citations == answer.citations


def test_anthropic_prompt_too_long_is_retried_compacted(meeting: Meeting) -> None:
    replies = [ErrorReply(400, "prompt is too long: 250000 tokens > 200000 maximum"),
               citing('"by March 12th" [#{h}]', "March 12th")]
    with ScriptedAnthropicServer(lambda request: (lambda r: r(request) if callable(r) else r)(
            replies[len(server.requests) - 1])) as server:
        answer = meeting.answerer(AnthropicChat(server.url, "claude-test", api_key="k")).ask(MEETING, QUOTE_DUE)
    assert len(server.requests) == 2
    assert answer.manifest[0].reason.startswith("compacted after prompt too long")


@pytest.mark.parametrize("template", [
    'He said “BY  march 12TH” [#{h}].',  # case, space and curly quotes do not matter
    "Bob sends the revised quote by March 12th [#{h}, #{h}].",  # no quote at all; a repeated handle
    '「Bob will send the revised quote」 [#{h}]',
])
def test_quotes_are_checked_as_text_not_as_bytes(meeting: Meeting, template: str) -> None:
    with serve(citing(template, "March 12th")) as server:
        answer = meeting.answerer(OpenAIChat(server.url, "m")).ask(MEETING, QUOTE_DUE)
    assert "transcript's own answer" not in answer.answer
    assert [c.text for c in answer.citations] == ["Bob will send the revised quote to the supplier by March 12th."]
