"""A scripted stand-in for a hosted chat model: a real HTTP server speaking the chat-completions shape.

Tests run the real client (`OpenAIChat`) over loopback HTTP against it, so the request encoding, the
headers and the error handling are what production runs; only the model's answers are scripted. A testing
aid: it lives with the tests (`tests/fakes/`), not in the package, since only the tests use it.

    with ScriptedChatServer(['{"lines": []}', ErrorReply(500, "overloaded")]) as server:
        chat = OpenAIChat(server.url, "any-model")
        ...
        server.requests[0].json["messages"]
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """Answer with an HTTP error and an OpenAI-style error body (`{"error": {"message": ...}}`)."""

    status: int = 500
    message: str = "internal server error"


@dataclass(frozen=True, slots=True)
class RawReply:
    """Answer with exactly this body (garbage, a completion without choices, ...)."""

    body: str | bytes | dict[str, Any]
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class SlowReply:
    """Wait `seconds`, then answer `reply` (for timeouts)."""

    reply: Reply
    seconds: float


#: A scripted answer: a string is the assistant message's content.
Reply = str | ErrorReply | RawReply | SlowReply


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server got: its path, headers (lower-cased names) and parsed JSON body."""

    path: str
    headers: dict[str, str]
    json: Any


class ScriptedChatServer:
    """An HTTP server on 127.0.0.1 (a free port) that answers chat completions from a script.

    Args:
        script: the replies in order, or a callable that takes the request's JSON and returns a reply.
            When a list runs out, the server answers HTTP 500 saying so.

    Attributes:
        requests: every request received, in order.
    """

    #: The one path the server answers (others get 404); a subclass speaking another API changes it.
    route = "/v1/chat/completions"

    def __init__(self, script: Sequence[Reply] | Callable[[Any], Reply]) -> None:
        self._script = script if callable(script) else list(script)
        self._lock = threading.Lock()
        self._served = 0
        self.requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give a client, ending in `/v1`."""
        if self._server is None:
            raise RuntimeError("the server is not running: use it as a context manager or call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ScriptedChatServer:
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # a short poll so that stop() returns at once: tests start a server each
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="scripted-chat",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if callable(self._script):
                return self._script(request.json)
            if self._served >= len(self._script):
                return ErrorReply(500, f"ScriptedChatServer: no reply left for request {self._served + 1}")
            reply = self._script[self._served]
            self._served += 1
            return reply

    def reply_body(self, text: str, request: Any) -> dict[str, Any]:
        """The JSON body of a successful answer carrying `text` (the API's own shape)."""
        return completion_body(text, request)

    def error_body(self, reply: ErrorReply) -> dict[str, Any]:
        """The JSON body of a scripted error (the API's own shape)."""
        return {"error": {"message": reply.message, "type": "server_error", "code": reply.status}}


def completion_body(text: str, request: Any) -> dict[str, Any]:
    """A chat-completions response carrying `text`, with rough token counts (words, not real tokens)."""
    model = request.get("model", "scripted") if isinstance(request, dict) else "scripted"
    messages = request.get("messages", []) if isinstance(request, dict) else []
    prompt_words = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
    completion_words = len(text.split())
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_words, "completion_tokens": completion_words,
                  "total_tokens": prompt_words + completion_words},
    }


def _handler_for(server: ScriptedChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches on)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = None
            request = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, payload)
            if self.path.rstrip("/") != server.route:
                with server._lock:
                    server.requests.append(request)
                self._send(ErrorReply(404, f"no route for {self.path}"), payload)
                return
            self._send(server._next_reply(request), payload)

        def _send(self, reply: Reply, payload: Any) -> None:
            while isinstance(reply, SlowReply):
                time.sleep(reply.seconds)
                reply = reply.reply
            if isinstance(reply, str):
                status, body, content_type = 200, json.dumps(server.reply_body(reply, payload)), "application/json"
            elif isinstance(reply, ErrorReply):
                status, body, content_type = reply.status, json.dumps(server.error_body(reply)), "application/json"
            else:
                body = json.dumps(reply.body) if isinstance(reply.body, dict) else reply.body
                status, content_type = reply.status, reply.content_type
            data = body.encode("utf-8") if isinstance(body, str) else body
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError as exc:  # the client gave up (a timeout test): nothing to answer
                logger.debug("scripted chat client went away: %s", exc)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            logger.debug("scripted chat: " + format, *args)

    return Handler
