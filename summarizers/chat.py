"""The chat-model seam and its client for OpenAI-compatible chat-completions APIs.

`OpenAIChat` speaks `POST {base_url}/chat/completions`, which vLLM, the llama.cpp server, Ollama (at
`/v1`) and the hosted services all answer. Every way a call can fail becomes a `ChatError` whose message
says what to check (the URL, the key, the model name), so the caller can record it as the reason it fell
back to the extractive summary.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .errors import LLM_INSTALL_HINT, ChatError

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

#: How much of a server's error body goes into a message: enough to read, not a whole HTML page.
_ERROR_TEXT_CHARS = 300


@dataclass(frozen=True, slots=True)
class ChatReply:
    """The assistant's text and the token counts the server reported (None when it reported none)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatModel(Protocol):
    """Answers a list of chat messages (`{"role": ..., "content": ...}`) with one reply."""

    def complete(self, messages: list[dict[str, str]]) -> ChatReply:
        """The model's reply. Raises `ChatError` when it cannot be had."""
        ...


class OpenAIChat:
    """A client for an OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: the API root, usually ending in `/v1` (`http://127.0.0.1:8080/v1`).
        model: the model name the server knows.
        api_key: sent as `Authorization: Bearer <key>` when given (local servers usually need none).
        timeout: seconds to wait for the whole answer.
        temperature: sampling temperature; 0 makes summaries repeatable where the server allows.
        max_tokens: a cap on the reply's length, when given.
        transport: an httpx transport to use instead of the network (for tests of the client alone).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float = 0.0,
        *,
        max_tokens: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ChatError(f"the LLM summarizer needs httpx (install it with: {LLM_INSTALL_HINT})") from exc
        self._httpx = httpx
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def complete(self, messages: list[dict[str, str]]) -> ChatReply:
        """Send `messages`, return the first choice's text.

        Raises:
            ChatError: the server cannot be reached, times out, answers with an HTTP error, or answers
                with something that is not a chat completion.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        httpx = self._httpx
        try:
            response = self._client.post(self.url, json=body)
        except httpx.ConnectError as exc:
            raise ChatError(f"cannot connect to the chat model at {self.url} ({exc}): is the server running and "
                            "the URL right?", url=self.url) from exc
        except httpx.TimeoutException as exc:
            raise ChatError(f"the chat model at {self.url} did not answer within {self.timeout:g} s: raise the "
                            "timeout or use a smaller model", url=self.url) from exc
        except httpx.HTTPError as exc:
            raise ChatError(f"the request to the chat model at {self.url} failed: {exc}", url=self.url) from exc
        if response.status_code >= 400:
            raise ChatError(self._status_message(response), url=self.url, status=response.status_code)
        return self._reply(response)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _status_message(self, response: httpx.Response) -> str:
        status = response.status_code
        message = f"the chat model at {self.url} answered HTTP {status}: {_error_text(response)}"
        if status in (401, 403):
            message += " (check the API key)"
        elif status == 404:
            message += f" (check the base URL, which usually ends in /v1, and the model name {self.model!r})"
        elif status == 429:
            message += " (rate limited: try again later)"
        return message

    def _reply(self, response: httpx.Response) -> ChatReply:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ChatError(f"the chat model at {self.url} answered with a body that is not JSON: "
                            f"{_snippet(response.text)!r}", url=self.url) from exc
        if not isinstance(data, dict):
            raise ChatError(f"the chat model at {self.url} answered JSON that is not a chat completion: "
                            f"{_snippet(response.text)!r}", url=self.url)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ChatError(f"the chat model at {self.url} answered with no choices: {_snippet(response.text)!r}",
                            url=self.url)
        first = choices[0] if isinstance(choices[0], dict) else {}
        message = first.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(text, str):
            raise ChatError(f"the chat model at {self.url} answered a choice without message content: "
                            f"{_snippet(response.text)!r}", url=self.url)
        if first.get("finish_reason") == "length":
            logger.warning("the chat model at %s stopped at its token limit; the reply may be cut short", self.url)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return ChatReply(text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


def _error_text(response: httpx.Response) -> str:
    """The server's own explanation: OpenAI's `error.message`, FastAPI's `detail`, or the body's start."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _snippet(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(data.get(key), str):
                return _snippet(data[key])
    return _snippet(response.text) or response.reason_phrase or "no explanation"


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_TEXT_CHARS else text[: _ERROR_TEXT_CHARS - 1] + "…"


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
