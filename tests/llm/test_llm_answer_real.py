"""The model answer path against the real llama.cpp server: a genuine context overflow from its 1,024-token
window drives exactly one compacted retry, and whatever the small model writes, the answer that comes back
cites stored segments verbatim."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from meetmem.answers.compiler import CompilerOptions
from meetmem.answers.model import LLMAnswerer
from meetmem.answers.pipeline import Answerer
from meetmem.answers.prompting import PromptSources
from meetmem.answers.tokens import count_tokens
from meetmem.store.index.search import TranscriptSearch
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput
from meetmem.summarizers.digest import MeetingDigester
from meetmem.summarizers.errors import ChatError
from meetmem.summarizers.extractive import ExtractiveSummarizer
from meetmem.summarizers.llm.chat import ChatReply, OpenAIChat
from meetmem.summarizers.llm.llama_server import LlamaServer

pytestmark = pytest.mark.llm


class Recorded:
    """The real client, noting the size and outcome of every call it passes on."""

    def __init__(self, chat: OpenAIChat) -> None:
        self.chat = chat
        self.calls: list[tuple[int, str, int | None]] = []

    def complete(self, messages: list[dict[str, str]]) -> ChatReply:
        size = sum(count_tokens(m["content"]) for m in messages)
        try:
            reply = self.chat.complete(messages)
        except ChatError as exc:
            self.calls.append((size, type(exc).__name__, None))
            raise
        self.calls.append((size, "ok", reply.prompt_tokens))
        return reply


def test_a_real_overflow_is_compacted_once_and_the_answer_cites_the_log(
        llama_server: LlamaServer, tmp_path: Path, sample_device_and_segments: tuple[str, list[SegmentInput]]) -> None:
    device_id, segments = sample_device_and_segments
    # Gemma has no system role: llama.cpp's format for it drops a system message, so it is folded in.
    with TranscriptLog(tmp_path / "m.db") as log, OpenAIChat(llama_server.url, llama_server.model, timeout=180,
                                                              max_tokens=24, system_role=False) as client:
        # The sample meeting said three times over (three devices, one after another), so that the question's
        # words find enough segments to overflow the window for certain, not by a few tokens of wording.
        for copy in range(3):
            shift = copy * (segments[-1].end + 10.0)
            log.append("review", f"{device_id}-{copy}", [
                replace(s, start=s.start + shift, end=s.end + shift) for s in segments])
        log.close_meeting("review")
        search = TranscriptSearch(log, None)
        digester = MeetingDigester(log, search, ExtractiveSummarizer())
        digester.update("review")
        # Forty retrieved segments and a 4,000-token budget: more than the server's 1,024-token window.
        sources = PromptSources(search, digester.stored, retrieve=40)
        chat = Recorded(client)
        answerer = LLMAnswerer(sources, chat, Answerer(search, digests=digester.stored), CompilerOptions(budget=4000),
                               max_expands=0)
        answer = answerer.ask("review", "By when does Bob owe the supplier the revised quote?")

        outcomes = [outcome for _, outcome, _ in chat.calls]
        assert outcomes == ["PromptTooLong", "ok"], chat.calls
        (first, _, _), (second, _, reported) = chat.calls
        assert second < first and reported is not None and reported <= 1024
        stored: dict[str, Any] = {s.segment_id: s for s in log.segments("review")}
        assert answer.answer and answer.citations
        for citation in answer.citations:
            assert stored[citation.segment_id].text == citation.text
        reasons = [block.reason for block in answer.manifest]
        assert any(r.startswith("compacted after prompt too long") or r.startswith("rejected") for r in reasons), \
            reasons
