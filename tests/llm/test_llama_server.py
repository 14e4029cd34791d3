"""The real client against a real language model: usage accounting, a genuine context overflow, calibration.

The model is small and its words are not checked; what is checked is what the context compiler relies
on: the server's token counts, and the `PromptTooLong` it raises when a prompt does not fit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from meetmem.answers.tokens import count_tokens
from meetmem.summarizers.errors import ChatError
from meetmem.summarizers.llm.chat import OpenAIChat, PromptTooLong
from meetmem.summarizers.llm.llama_server import LlamaServer

pytestmark = pytest.mark.llm

SAMPLE_MEETING = Path(str(resources.files("meetmem.demo_data").joinpath("sample_meeting.jsonl")))
ZH_TRANSCRIPT = (
    "好，我们看一下供应商的报价，一年是两万元。合同由张三负责，周五之前发给法务。试点是三月还是四月还没定。"
    "李四说服务器的迁移要推迟到下个季度，因为预算还没有批下来。王五会在下周二之前把测试报告发给大家。"
    "我们下次会议定在十月十五号上午十点，地点还是三楼的会议室。"
)


def transcript() -> str:
    """The demo meeting's English speech, one utterance a line (about 870 tokens by `count_tokens`)."""
    rows = [json.loads(line) for line in SAMPLE_MEETING.read_text(encoding="utf-8").splitlines() if line.strip()]
    return "\n".join(f"{row['speaker']}: {row['text']}" for row in rows)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def chat(llama_server: LlamaServer) -> Iterator[OpenAIChat]:
    # a short reply: the tests are about the prompt, and every generated token costs time on 2 cores
    with OpenAIChat(llama_server.url, llama_server.model, timeout=120, max_tokens=8) as client:
        yield client


def test_reply_has_text_and_usage(chat: OpenAIChat) -> None:
    reply = chat.complete(ask("Name three colours."))
    assert reply.text.strip()
    assert reply.prompt_tokens is not None and reply.prompt_tokens > 0
    assert reply.completion_tokens is not None and 0 < reply.completion_tokens <= 8


def test_prompt_count_grows_with_the_prompt(chat: OpenAIChat) -> None:
    short = chat.complete(ask("Summarise: the budget is forty thousand dollars."))
    longer = chat.complete(ask("Summarise: the budget is forty thousand dollars. Zhang San owns the vendor "
                               "contract and sends it to legal by Wednesday; the pilot starts in March."))
    assert short.prompt_tokens is not None and longer.prompt_tokens is not None
    assert longer.prompt_tokens > short.prompt_tokens


def test_prompt_longer_than_the_window_is_prompt_too_long(chat: OpenAIChat, llama_server: LlamaServer) -> None:
    n_ctx = llama_server.n_ctx
    text = transcript() + "\n" + transcript()
    assert count_tokens(text) > n_ctx
    with pytest.raises(PromptTooLong) as caught:
        chat.complete(ask("Summarise this meeting.\n\n" + text))
    error = caught.value
    assert error.status == 400
    assert error.limit == n_ctx
    assert error.prompt_tokens is not None and error.prompt_tokens > n_ctx
    assert f"{n_ctx} tokens" in str(error)


def test_overflow_answered_by_sending_less(chat: OpenAIChat) -> None:
    """The reactive path: cut the transcript by the ratio the error states, and the retry fits."""
    lines = (transcript() + "\n" + transcript()).splitlines()
    with pytest.raises(PromptTooLong) as caught:
        chat.complete(ask("Summarise this meeting.\n\n" + "\n".join(lines)))
    error = caught.value
    assert error.limit is not None and error.prompt_tokens is not None
    keep = int(len(lines) * 0.6 * error.limit / error.prompt_tokens)
    reply = chat.complete(ask("Summarise this meeting.\n\n" + "\n".join(lines[:keep])))
    assert reply.prompt_tokens is not None and reply.prompt_tokens < error.limit


# half the English meeting (~430 tokens) is plenty to calibrate on, and costs half the prompt time
@pytest.mark.parametrize(("language", "text"), [("en", transcript()[: len(transcript()) // 2]), ("zh", ZH_TRANSCRIPT)])
def test_count_tokens_calibration(chat: OpenAIChat, language: str, text: str) -> None:
    """The server's tokens per `count_tokens` token, for text of each language.

    Measured as a difference between two prompts so that the chat template's own tokens cancel out.
    """
    base = chat.complete(ask("Summarise:"))
    full = chat.complete(ask("Summarise:\n" + text))
    assert base.prompt_tokens is not None and full.prompt_tokens is not None
    ratio = (full.prompt_tokens - base.prompt_tokens) / count_tokens("\n" + text)
    print(f"\ncalibration {language}: {full.prompt_tokens - base.prompt_tokens} server tokens / "
          f"{count_tokens(chr(10) + text)} count_tokens = {ratio:.2f}")
    assert 0.3 <= ratio <= 3


def test_server_that_cannot_load_its_model_is_reported(llama_server: LlamaServer, tmp_path: Path) -> None:
    """A file that is not a GGUF: the server exits, and the error carries its log instead of a hang."""
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a GGUF file\n" * 64)
    with pytest.raises(ChatError) as caught:
        LlamaServer(bogus, n_ctx=256, startup_timeout=60).start()
    assert "exited with status" in str(caught.value)


def test_missing_model_file_is_a_chat_error(llama_server: LlamaServer, tmp_path: Path) -> None:
    with pytest.raises(ChatError, match="no model file"):
        LlamaServer(tmp_path / "absent.gguf").start()
