"""The LLM summarizer over real loopback HTTP: the real client against a scripted chat server."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fakes.chat_server import ErrorReply, RawReply, ScriptedChatServer, SlowReply

from meetmem.store.records import Section, SectionSummary, Segment, Source, SummaryLine
from meetmem.summarizers.errors import ChatError
from meetmem.summarizers.extractive import ExtractiveSummarizer
from meetmem.summarizers.llm.chat import ChatReply, OpenAIChat
from meetmem.summarizers.summary_llm import LLMSummarizer

EN_TEXTS = [
    "Okay so the vendor quote came in at forty thousand dollars for the whole year.",
    "Zhang San will own the vendor contract and send it to legal by Wednesday.",
    "We still need to decide whether the pilot runs in March or April.",
]
ZH_TEXTS = [
    "好，我们看一下供应商的报价，一年是两万元。",
    "合同由张三负责，周五之前发给法务。",
    "试点是三月还是四月还没定。",
]


def make_segments(texts: Sequence[str], *, prefix: str = "s", speakers: Sequence[str] = ("Alice", "Bob")
                  ) -> list[Segment]:
    """Segments 30 s apart from 0:05, speakers taking turns."""
    return [
        Segment(f"{prefix}_{i}", "t", "m1", "dev", i, 30.0 * i + 5, 30.0 * i + 20, text,
                speakers[i % len(speakers)], None, None, None, None, "2025-01-01T00:00:00Z", i, "0" * 64, "f" * 64)
        for i, text in enumerate(texts)
    ]


def section_of(segments: Sequence[Segment], index: int = 0) -> Section:
    return Section(index, segments[0].start, segments[-1].end, tuple(s.segment_id for s in segments), "pause")


def reply(*lines: tuple[str, list[int]]) -> str:
    return json.dumps({"lines": [{"text": text, "cite": cite} for text, cite in lines]}, ensure_ascii=False)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def fallback() -> ExtractiveSummarizer:
    return ExtractiveSummarizer()


@pytest.fixture
def summarize(fallback: ExtractiveSummarizer) -> Iterator[Any]:
    """Run one L1 summary of `texts` against a scripted server; returns (summary, server, segments)."""
    opened: list[OpenAIChat] = []

    def run(script: Any, texts: Sequence[str] = EN_TEXTS, **chat_args: Any) -> tuple[SectionSummary, Any, list]:
        segments = make_segments(texts)
        with ScriptedChatServer(script) as server:
            chat = OpenAIChat(server.url, "test-model", **chat_args)
            opened.append(chat)
            summary = LLMSummarizer(chat, fallback).summarize_section(section_of(segments), segments)
        return summary, server, segments

    yield run
    for chat in opened:
        chat.close()


# -- accepted --------------------------------------------------------------------------------------------


def test_accepted_summary_maps_cites_to_segment_ids(summarize: Any) -> None:
    script = [reply(("The vendor quote is $40,000 a year.", [1]),
                    ("Zhang San owns the contract and sends it to legal by Wednesday.", [2]),
                    ("The pilot month, March or April, is open.", [3, 1]))]
    summary, server, segments = summarize(script)
    assert summary.backend == "llm" and summary.note is None
    assert [line.source.segment_ids for line in summary.lines] == [
        ("s_0",), ("s_1",), ("s_0", "s_2")]
    assert summary.lines[2].source == Source(segments[0].start, segments[2].end, ("s_0", "s_2"))
    assert summary.lines[1].text.startswith("Zhang San owns")
    assert len(server.requests) == 1


def test_code_fence_around_the_json_is_tolerated(summarize: Any) -> None:
    fenced = "Here you go:\n```json\n" + reply(("Zhang San owns the vendor contract.", [2])) + "\n```"
    summary, _, _ = summarize([fenced])
    assert summary.backend == "llm"
    assert summary.lines[0].source.segment_ids == ("s_1",)


def test_chinese_summary_accepted(summarize: Any) -> None:
    script = [reply(("供应商报价一年两万元。", [1]), ("张三负责合同，周五前发给法务。", [2]))]
    summary, _, _ = summarize(script, ZH_TEXTS)
    assert summary.backend == "llm", summary.note
    assert [line.source.segment_ids for line in summary.lines] == [("s_0",), ("s_1",)]


def test_more_lines_than_asked_are_cut_to_max_lines(summarize: Any) -> None:
    lines = [("Zhang San owns the vendor contract.", [2])] * 5
    summary, _, _ = summarize([reply(*lines)])
    assert summary.backend == "llm" and len(summary.lines) == 3


# -- rejected: the fallback's lines, with the reason -----------------------------------------------------


def assert_fallback(
    summary: SectionSummary, fallback: ExtractiveSummarizer, segments: list[Segment], *words: str
) -> None:
    expected = fallback.summarize_section(section_of(segments), segments)
    assert summary.backend == fallback.name
    assert summary.lines == expected.lines
    assert summary.note is not None
    for word in words:
        assert word in summary.note, summary.note


def test_number_not_in_cited_segments_is_rejected(summarize: Any, fallback: Any,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    script = [reply(("Zhang San owns the contract.", [2]), ("The vendor quote is $45,000 a year.", [1]))]
    with caplog.at_level(logging.WARNING, logger="meetmem.summarizers.summary_llm"):
        summary, _, segments = summarize(script)
    assert_fallback(summary, fallback, segments, "llm summary rejected: line 2 states '45,000'",
                    "which its cited segments do not hold")
    assert any("45,000" in record.getMessage() for record in caplog.records)


def test_number_in_another_segment_than_the_cited_one_is_rejected(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([reply(("Zhang San owns the $40,000 contract.", [2]))])
    assert_fallback(summary, fallback, segments, "line 1", "40,000")


def test_changed_name_is_rejected(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([reply(("Li Si owns the vendor contract.", [2]))])
    assert_fallback(summary, fallback, segments, "'Li'")


def test_missing_cites_are_rejected(summarize: Any, fallback: Any) -> None:
    no_cite = json.dumps({"lines": [{"text": "Zhang San owns the vendor contract."}]})
    summary, _, segments = summarize([no_cite])
    assert_fallback(summary, fallback, segments, "line 1 cites no segment")
    summary, _, _ = summarize([reply(("Zhang San owns the vendor contract.", []))])
    assert "line 1 cites no segment" in (summary.note or "")


def test_cite_out_of_range_is_rejected(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([reply(("Zhang San owns the vendor contract.", [2, 7]))])
    assert_fallback(summary, fallback, segments, "line 1 cites [7]", "3 numbered items")
    summary, _, _ = summarize([reply(("Zhang San owns the vendor contract.", [0]))])
    assert "cites [0]" in (summary.note or "")


@pytest.mark.parametrize("body", ["I think the meeting was about a vendor.", '{"lines": [{"text": "x", "cite": [1]}',
                                  '{"summary": "no lines here"}', '{"lines": []}'])
def test_unusable_reply_is_rejected(summarize: Any, fallback: Any, body: str) -> None:
    summary, _, segments = summarize([body])
    assert_fallback(summary, fallback, segments, "llm summary rejected")


def test_chinese_drift_is_rejected(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([reply(("李四负责合同，周五前发给法务。", [2]))], ZH_TEXTS)
    assert_fallback(summary, fallback, segments, "李四")
    summary, _, segments = summarize([reply(("供应商报价一年三万元。", [1]))], ZH_TEXTS)
    assert_fallback(summary, fallback, segments, "三万")
    summary, _, segments = summarize([reply(("张三负责合同，周四前发给法务。", [2]))], ZH_TEXTS)
    assert_fallback(summary, fallback, segments, "周四")


# -- the server fails: the fallback, with a note a person can act on --------------------------------------


def test_http_500_falls_back_with_the_servers_error(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([ErrorReply(500, "CUDA out of memory")])
    assert_fallback(summary, fallback, segments, "llm call failed", "HTTP 500", "CUDA out of memory",
                    "/v1/chat/completions")


def test_http_401_says_to_check_the_key(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([ErrorReply(401, "invalid api key")], api_key="wrong")
    assert_fallback(summary, fallback, segments, "HTTP 401", "invalid api key", "check the API key")


def test_garbage_body_falls_back(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([RawReply("<html>502 Bad Gateway</html>", content_type="text/html")])
    assert_fallback(summary, fallback, segments, "not JSON", "502 Bad Gateway")


def test_no_choices_falls_back(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([RawReply({"id": "x", "choices": []})])
    assert_fallback(summary, fallback, segments, "no choices")


def test_connection_refused_names_the_url(fallback: Any) -> None:
    segments = make_segments(EN_TEXTS)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with OpenAIChat(url, "test-model", timeout=5) as chat:
        summary = LLMSummarizer(chat, fallback).summarize_section(section_of(segments), segments)
    assert_fallback(summary, fallback, segments, "cannot connect", f"{url}/chat/completions")


def test_timeout_falls_back(summarize: Any, fallback: Any) -> None:
    summary, _, segments = summarize([SlowReply(reply(("x", [1])), 1.0)], timeout=0.2)
    assert_fallback(summary, fallback, segments, "did not answer within 0.2 s")


# -- the request ------------------------------------------------------------------------------------------


def test_request_carries_model_key_and_section_only_in_the_last_message(summarize: Any) -> None:
    summary, server, segments = summarize([reply(("Zhang San owns the vendor contract.", [2]))], api_key="sk-test")
    assert summary.backend == "llm"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json["model"] == "test-model"
    assert request.json["temperature"] == 0
    messages = request.json["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    for segment in segments:
        assert segment.text in messages[-1]["content"]
        assert all(segment.text not in m["content"] for m in messages[:-1])
    assert "[2] (00:35, Bob) Zhang San will own" in messages[-1]["content"]


def test_no_key_no_authorization_header(summarize: Any) -> None:
    _, server, _ = summarize([reply(("Zhang San owns the vendor contract.", [2]))])
    assert "authorization" not in server.requests[0].headers


def test_system_message_is_the_same_for_every_section(fallback: Any) -> None:
    first, second = make_segments(EN_TEXTS), make_segments(ZH_TEXTS, prefix="z")
    with ScriptedChatServer(lambda request: reply(("x", [1]))) as server, \
            OpenAIChat(server.url, "test-model") as chat:
        summarizer = LLMSummarizer(chat, fallback)
        summarizer.summarize_section(section_of(first), first)
        summarizer.summarize_section(section_of(second, 1), second)
    systems = [r.json["messages"][0]["content"] for r in server.requests]
    assert systems[0] == systems[1]


# -- L2 ---------------------------------------------------------------------------------------------------


def l1_summaries(segments: list[Segment]) -> list[SectionSummary]:
    """Two sections' L1s: the first two segments' lines, then the third's."""
    first, second = section_of(segments[:2]), section_of(segments[2:], 1)
    return [
        SectionSummary(first, (SummaryLine("The vendor quote came in at forty thousand dollars for the year.",
                                           Source.of(segments[:1])),
                               SummaryLine("Zhang San will own the vendor contract, to legal by Wednesday.",
                                           Source.of(segments[1:2]))), backend="extractive"),
        SectionSummary(second, (SummaryLine("Pilot in March or April is undecided.", Source.of(segments[2:])),),
                       backend="extractive"),
    ]


def test_l2_cites_l1_lines_and_maps_them_to_their_segments(fallback: Any) -> None:
    segments = make_segments(EN_TEXTS)
    script = [reply(("Zhang San owns the $40,000 vendor contract, due to legal Wednesday.", [1, 2]),
                    ("The pilot month is open.", [3]))]
    with ScriptedChatServer(script) as server, OpenAIChat(server.url, "test-model") as chat:
        summarizer = LLMSummarizer(chat, fallback)
        lines = summarizer.summarize_meeting(l1_summaries(segments), {s.segment_id: s for s in segments})
    assert summarizer.last_l2_note is None
    assert [line.source.segment_ids for line in lines] == [("s_0", "s_1"), ("s_2",)]
    content = server.requests[0].json["messages"][-1]["content"]
    assert "[1] (00:05) The vendor quote" in content and "[3] (01:05) Pilot" in content
    assert "forty thousand" not in server.requests[0].json["messages"][0]["content"]


def test_l2_rejected_returns_fallback_and_records_the_note(fallback: Any) -> None:
    segments = make_segments(EN_TEXTS)
    by_id = {s.segment_id: s for s in segments}
    sections = l1_summaries(segments)
    with ScriptedChatServer([reply(("Zhang San owns the $50,000 contract.", [1, 2])),
                             reply(("Zhang San owns the vendor contract.", [4]))]) as server, \
            OpenAIChat(server.url, "test-model") as chat:
        summarizer = LLMSummarizer(chat, fallback)
        lines = summarizer.summarize_meeting(sections, by_id)
        assert lines == fallback.summarize_meeting(sections, by_id)
        assert summarizer.last_l2_note is not None and "line 1 states '50,000'" in summarizer.last_l2_note
        summarizer.summarize_meeting(sections, by_id)
        assert summarizer.last_l2_note is not None and "cites [4]" in summarizer.last_l2_note


def test_l2_note_is_cleared_by_an_accepted_summary(fallback: Any) -> None:
    segments = make_segments(EN_TEXTS)
    by_id = {s.segment_id: s for s in segments}
    script = [ErrorReply(503, "loading model"), reply(("Zhang San owns the contract.", [2]))]
    with ScriptedChatServer(script) as server, OpenAIChat(server.url, "test-model") as chat:
        summarizer = LLMSummarizer(chat, fallback)
        summarizer.summarize_meeting(l1_summaries(segments), by_id)
        assert "HTTP 503" in (summarizer.last_l2_note or "") and "loading model" in (summarizer.last_l2_note or "")
        lines = summarizer.summarize_meeting(l1_summaries(segments), by_id)
        assert summarizer.last_l2_note is None
        assert lines[0].source.segment_ids == ("s_1",)


# -- the client alone --------------------------------------------------------------------------------------


def test_client_returns_text_and_token_counts() -> None:
    with ScriptedChatServer(["hello there"]) as server, OpenAIChat(server.url + "/", "m") as chat:
        answer = chat.complete([{"role": "user", "content": "say hello please"}])
    assert answer == ChatReply("hello there", 3, 2)


def test_client_404_names_the_base_url_and_model() -> None:
    with ScriptedChatServer([]) as server, OpenAIChat(server.url.removesuffix("/v1"), "m") as chat:
        with pytest.raises(ChatError) as caught:
            chat.complete([{"role": "user", "content": "hi"}])
    assert caught.value.status == 404
    assert "ends in /v1" in str(caught.value)
