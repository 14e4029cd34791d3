"""The Anthropic Messages client against the scripted Anthropic server over real loopback HTTP: the request's
shape and headers, cache breakpoints, cache accounting, and every failure as an actionable `ChatError`."""

from __future__ import annotations

import socket

import pytest
from fakes.anthropic_server import ErrorReply, RawReply, ScriptedAnthropicServer, SlowReply

from meetmem.summarizers.errors import ChatError
from meetmem.summarizers.llm.anthropic_chat import AnthropicChat, AnthropicReply, conversation, system_blocks
from meetmem.summarizers.llm.chat import PromptTooLong

PARTS = [(1, "Instructions."), (1, "Meeting: m"), (2, "Ledger:\n- decision"), (3, "Summary.")]
SYSTEM = "\n\n".join(text for _, text in PARTS)
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "[#1 00:01 A] hi\nQuestion: q?"}]


def test_a_request_carries_the_key_version_system_blocks_and_cache_breakpoints() -> None:
    with ScriptedAnthropicServer(["first [#1]", "second [#1]"]) as server, \
            AnthropicChat(server.url + "/v1", "claude-x", api_key="sk-1", max_tokens=64) as chat:
        first = chat.complete(MESSAGES, system_parts=PARTS)
        second = chat.complete(MESSAGES, system_parts=PARTS)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-1" and request.headers["anthropic-version"] == "2023-06-01"
    assert request.json["max_tokens"] == 64 and request.json["model"] == "claude-x"
    assert request.json["messages"] == [{"role": "user", "content": MESSAGES[1]["content"]}]
    system = request.json["system"]
    assert [b.get("cache_control") for b in system] == [None, {"type": "ephemeral"}, {"type": "ephemeral"}, None]
    assert "".join(b["text"] for b in system) == SYSTEM
    assert isinstance(first, AnthropicReply) and first.text == "first [#1]"
    assert first.cache_creation_tokens and not first.cache_read_tokens
    assert second.cache_read_tokens == first.cache_creation_tokens and not second.cache_creation_tokens
    assert second.prompt_tokens == first.prompt_tokens  # the whole prompt, cached or not


def test_without_matching_parts_the_system_message_is_one_block() -> None:
    assert system_blocks(MESSAGES) == [{"type": "text", "text": SYSTEM}]
    assert system_blocks(MESSAGES, [(1, "something else")]) == [{"type": "text", "text": SYSTEM}]
    assert system_blocks([{"role": "user", "content": "q"}], PARTS) == []


def test_messages_alternate_and_start_with_the_user() -> None:
    got = conversation([{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"},
                        {"role": "user", "content": "u1"}, {"role": "tool", "content": "t"},
                        {"role": "assistant", "content": "b"}])
    assert [m["role"] for m in got] == ["user", "assistant", "user", "assistant"]
    assert got[2]["content"] == "u1\n\nt"


@pytest.mark.parametrize(("reply", "expected"), [
    (ErrorReply(401, "invalid x-api-key"), "check the API key"),
    (ErrorReply(404, "model: claude-nope"), "model name 'claude-x'"),
    (ErrorReply(429, "slow down"), "rate limited"),
    (ErrorReply(529, "Overloaded"), "overloaded"),
    (ErrorReply(400, "messages: roles must alternate"), "roles must alternate"),
    (RawReply("<html>gateway</html>", content_type="text/html"), "not JSON"),
    (RawReply({"id": "x", "content": [{"type": "tool_use"}]}), "without text"),
])
def test_failures_are_chat_errors_that_say_what_to_check(reply: object, expected: str) -> None:
    with ScriptedAnthropicServer([reply]) as server, AnthropicChat(server.url, "claude-x", api_key="k") as chat:
        with pytest.raises(ChatError, match=expected) as caught:
            chat.complete(MESSAGES)
    assert not isinstance(caught.value, PromptTooLong)


def test_prompt_too_long_is_its_own_error_with_the_limit() -> None:
    with ScriptedAnthropicServer([ErrorReply(400, "prompt is too long: 210345 tokens > 200000 maximum")]) as server, \
            AnthropicChat(server.url, "claude-x", api_key="k") as chat:
        with pytest.raises(PromptTooLong) as caught:
            chat.complete(MESSAGES)
    assert caught.value.limit == 200000 and caught.value.prompt_tokens == 210345 and caught.value.status == 400


def test_timeouts_and_refused_connections_are_chat_errors() -> None:
    with ScriptedAnthropicServer([SlowReply("late", 1.0)]) as server, \
            AnthropicChat(server.url, "claude-x", api_key="k", timeout=0.2) as chat:
        with pytest.raises(ChatError, match="did not answer within 0.2 s"):
            chat.complete(MESSAGES)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with AnthropicChat(f"http://127.0.0.1:{port}", "claude-x") as chat, \
            pytest.raises(ChatError, match="cannot connect"):
        chat.complete(MESSAGES)


def test_a_model_name_is_required() -> None:
    with pytest.raises(ChatError, match="model name"):
        AnthropicChat("https://api.anthropic.com", "")
