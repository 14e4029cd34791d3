"""`PromptTooLong`: the real client reads real servers' context-overflow answers over loopback HTTP.

Each body below is what that server sends when a prompt does not fit its context window (taken from its
source or its documented errors), so a change of wording in one of them shows up here as a failing row.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.chat_server import RawReply, ScriptedChatServer

from meetmem.summarizers.errors import ChatError
from meetmem.summarizers.llm.chat import OpenAIChat, PromptTooLong, fold_system

# (who says it, status, body, the limit it states, the prompt tokens it states)
OVERFLOWS: list[tuple[str, int, Any, int | None, int | None]] = [
    ("llama-cpp-python server", 400, {"error": {
        "message": "This model's maximum context length is 1024 tokens. However, you requested 1630 tokens "
                   "(1630 in the messages, None in the completion). Please reduce the length of the messages "
                   "or completion.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}, 1024, 1630),
    ("llama.cpp server", 400, {"error": {
        "code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens), try "
                                "increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}, 4096, 4476),
    ("llama.cpp server, older wording", 400, {"error": {
        "code": 400, "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error"}}, None, None),
    ("OpenAI", 400, {"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                   "130412 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}, 128000, 130412),
    ("OpenAI, newer wording", 400, {"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}, None, None),
    ("Anthropic", 400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"}},
     200000, 208310),
    ("vLLM", 400, {
        "object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested "
                                      "5000 tokens (4900 in the messages, 100 in the completion). Please reduce "
                                      "the length of the messages or completion.",
        "type": "BadRequestError", "param": None, "code": 400}, 4096, 4900),
    ("Mistral", 400, {
        "object": "error", "message": "Prompt contains 40012 tokens and 0 draft tokens, too large for model with "
                                      "32768 maximum context length",
        "type": "invalid_request_error", "param": None, "code": None}, 32768, 40012),
    ("Gemini", 400, {"error": {
        "code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed "
                                "(1048576).",
        "status": "INVALID_ARGUMENT"}}, 1048576, 1200000),
    ("a gateway, as plain text", 413, "prompt is too long for this model's context window", None, None),
]

# Errors that must stay plain `ChatError`s: other refusals, and overflow wording under a status that is
# not a refusal of the request.
NOT_OVERFLOWS: list[tuple[str, int, Any]] = [
    ("bad key", 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                "code": "invalid_api_key"}}),
    ("bad parameter", 400, {"error": {"message": "max_tokens must be at least 1, got 0",
                                      "type": "invalid_request_error", "param": "max_tokens"}}),
    ("unknown model", 404, {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}),
    ("server fault that mentions the context", 500, {"error": {"message": "failed to grow the context size "
                                                               "(n_ctx) buffer: out of memory"}}),
    ("rate limit", 429, {"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}}),
]


def ask(status: int, body: Any) -> ChatError:
    """Send one chat request to a server that answers `status` with `body`; return what was raised."""
    content_type = "text/plain" if isinstance(body, str) else "application/json"
    reply = RawReply(body, status=status, content_type=content_type)
    with ScriptedChatServer([reply]) as server, OpenAIChat(server.url, "test-model") as chat:
        with pytest.raises(ChatError) as caught:
            chat.complete([{"role": "user", "content": "hello"}])
    return caught.value


@pytest.mark.parametrize(("who", "status", "body", "limit", "prompt_tokens"), OVERFLOWS,
                         ids=[row[0] for row in OVERFLOWS])
def test_overflow_is_prompt_too_long(who: str, status: int, body: Any, limit: int | None,
                                     prompt_tokens: int | None) -> None:
    error = ask(status, body)
    assert isinstance(error, PromptTooLong), f"{who}: {error}"
    assert error.status == status
    assert error.limit == limit
    assert error.prompt_tokens == prompt_tokens
    assert error.url is not None and error.url.endswith("/chat/completions")
    assert f"HTTP {status}" in str(error)
    assert "context window" in str(error)
    if limit is not None:
        assert f"{limit} tokens" in str(error)


@pytest.mark.parametrize(("who", "status", "body"), NOT_OVERFLOWS, ids=[row[0] for row in NOT_OVERFLOWS])
def test_other_errors_stay_chat_errors(who: str, status: int, body: Any) -> None:
    error = ask(status, body)
    assert type(error) is ChatError, f"{who}: {error!r}"
    assert error.status == status


def test_message_keeps_the_servers_words() -> None:
    error = ask(400, OVERFLOWS[5][2])
    assert "prompt is too long: 208310 tokens > 200000 maximum" in str(error)


def test_prompt_too_long_is_a_chat_error() -> None:
    """Callers that catch `ChatError` to fall back keep working unchanged."""
    assert issubclass(PromptTooLong, ChatError)


def test_a_model_without_a_system_role_gets_the_instructions_first_in_the_user_message() -> None:
    messages = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Q1"},
                {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q2"}]
    with ScriptedChatServer(["fine"]) as server, OpenAIChat(server.url, "m", system_role=False) as chat:
        assert chat.complete(messages).text == "fine"
        sent = server.requests[0].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"] == "Rules.\n\nQ1" and sent[2]["content"] == "Q2"
    assert fold_system([{"role": "system", "content": "Only rules."}]) == [{"role": "user", "content": "Only rules."}]
