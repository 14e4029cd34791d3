"""A scripted stand-in for Anthropic's Messages API: a real HTTP server on loopback, the replies scripted.

The hosted API cannot run in tests; `AnthropicChat` runs against this over HTTP instead, so its request
encoding, headers and error handling are what production runs. It keeps Anthropic's prompt-cache
accounting roughly: the system text up to the last `cache_control` block counts as read from the cache when
an earlier request sent the same prefix, else as written to it (token counts are words, not real tokens).

    with ScriptedAnthropicServer(["The quote is due March 12th [#12]."]) as server:
        chat = AnthropicChat(server.url, "any-model", api_key="test")
"""

from __future__ import annotations

from typing import Any

from .chat_server import ErrorReply, RawReply, Reply, ScriptedChatServer, SlowReply

__all__ = ["ErrorReply", "RawReply", "Reply", "ScriptedAnthropicServer", "SlowReply"]


class ScriptedAnthropicServer(ScriptedChatServer):
    """`ScriptedChatServer` speaking `POST /v1/messages` (errors as `{"type": "error", "error": {...}}`)."""

    route = "/v1/messages"

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self._cached: set[str] = set()

    @property
    def url(self) -> str:
        """The base URL to give `AnthropicChat` (no `/v1`: the client adds it)."""
        return super().url.removesuffix("/v1")

    def reply_body(self, text: str, request: Any) -> dict[str, Any]:
        request = request if isinstance(request, dict) else {}
        system = request.get("system") or []
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        marked = max((i for i, b in enumerate(system) if isinstance(b, dict) and b.get("cache_control")),
                     default=-1)
        prefix = "".join(str(b.get("text", "")) for b in system[: marked + 1] if isinstance(b, dict))
        rest = "".join(str(b.get("text", "")) for b in system[marked + 1:] if isinstance(b, dict))
        rest += " ".join(str(m.get("content", "")) for m in request.get("messages", []) if isinstance(m, dict))
        with self._lock:
            hit = bool(prefix) and prefix in self._cached
            if prefix:
                self._cached.add(prefix)
        cached = len(prefix.split())
        return {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "scripted"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": len(rest.split()), "output_tokens": len(text.split()),
                      "cache_read_input_tokens": cached if hit else 0,
                      "cache_creation_input_tokens": 0 if hit else cached},
        }

    def error_body(self, reply: ErrorReply) -> dict[str, Any]:
        kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                529: "overloaded_error"}.get(reply.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": reply.message}}
