"""The chat-model seam and its client for OpenAI-compatible chat-completions APIs.

`OpenAIChat` speaks `POST {base_url}/chat/completions`, which vLLM, the llama.cpp server, Ollama (at
`/v1`) and the hosted services all answer. Every way a call can fail becomes a `ChatError` whose message
says what to check (the URL, the key, the model name), so the caller can record it as the reason it fell
back to the extractive summary. A prompt the model's context window cannot hold is the one failure a caller
can repair (send less), so it has its own class, `PromptTooLong`, carrying the window when the server says it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LLM_INSTALL_HINT, ChatError

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

#: How much of a server's error body goes into a message: enough to read, not a whole HTML page.
_ERROR_TEXT_CHARS = 300

#: The statuses a server refuses an overlong prompt with: 400 almost everywhere, 413 and 422 at some gateways.
_PROMPT_TOO_LONG_STATUSES = frozenset({400, 413, 422})

#: How servers say a prompt does not fit, matched on the error's message, code and type together:
#: OpenAI, vLLM, Mistral and llama-cpp-python ("maximum context length", `context_length_exceeded`); the
#: llama.cpp server ("exceeds the available context size", `exceed_context_size_error`); Anthropic ("prompt
#: is too long"); Gemini ("input token count ... exceeds the maximum number of tokens").
_PROMPT_TOO_LONG_RE = re.compile(
    r"context_length_exceeded|exceed_context_size_error|maximum context length|prompt is too long"
    r"|exceeds? (?:the )?(?:available )?context (?:size|window|length)|\bn_ctx\b"
    r"|input token count .* exceeds the maximum number of tokens",
    re.IGNORECASE,
)

_N = r"(\d[\d,]*)"
#: Where a message states the context window, first match wins.
_LIMIT_RES = tuple(re.compile(pattern, re.IGNORECASE) for pattern in (
    rf"maximum context length is {_N}",  # OpenAI, vLLM, llama-cpp-python
    rf"context window of {_N}",  # llama-cpp-python's own ValueError
    rf"context size \({_N} tokens?\)",  # llama.cpp server
    rf"tokens? > {_N} maximum",  # Anthropic
    rf"model with {_N} maximum context length",  # Mistral
    rf"maximum number of tokens allowed \({_N}\)",  # Gemini
    rf"\bn_ctx\s*[=:]\s*{_N}",
))
#: Where a message states how many tokens the prompt came to.
_PROMPT_TOKENS_RES = tuple(re.compile(pattern, re.IGNORECASE) for pattern in (
    rf"\({_N} in the messages",  # OpenAI (older), vLLM, llama-cpp-python: "you requested N (P in the messages"
    rf"messages resulted in {_N} tokens",  # OpenAI
    rf"request \({_N} tokens?\)",  # llama.cpp server
    rf"prompt is too long: {_N} tokens",  # Anthropic
    rf"prompt contains {_N} tokens",  # Mistral
    rf"input token count \({_N}\)",  # Gemini
    rf"requested tokens \({_N}\)",  # llama-cpp-python's own ValueError
))


@dataclass(frozen=True, slots=True)
class ChatReply:
    """The assistant's text and the token counts the server reported (None when it reported none)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class PromptTooLong(ChatError):
    """The server refused the prompt because it does not fit the model's context window.

    The caller can answer by sending less (fewer passages, a shorter transcript window) and asking again.

    Attributes:
        limit: the context window in tokens, when the server stated it.
        prompt_tokens: what the request came to in the server's own tokens, when it stated that.
    """

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None,
                 limit: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message, url=url, status=status)
        self.limit = limit
        self.prompt_tokens = prompt_tokens


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
        system_role: send the system message as one; False folds it into the first user message, for
            models without a system role (llama.cpp's Gemma format drops a system message silently).
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
        system_role: bool = True,
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
        self.system_role = system_role
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def complete(self, messages: list[dict[str, str]]) -> ChatReply:
        """Send `messages`, return the first choice's text.

        Raises:
            PromptTooLong: the server said the prompt does not fit the model's context window.
            ChatError: the server cannot be reached, times out, answers with an HTTP error, or answers
                with something that is not a chat completion.
        """
        body = self._request(fold_system(messages) if not self.system_role else messages)
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
            too_long = prompt_too_long(response)
            if too_long is not None:
                limit, prompt_tokens = too_long
                window = f" of {limit} tokens" if limit is not None else ""
                message = (f"{self._status_message(response)} (the prompt does not fit the model's context "
                           f"window{window}: send less, or give the server a larger context)")
                raise PromptTooLong(message, url=self.url, status=response.status_code, limit=limit,
                                    prompt_tokens=prompt_tokens)
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
        message = f"the chat model at {self.url} answered HTTP {status}: {error_text(response)}"
        if status in (401, 403):
            message += " (check the API key)"
        elif status == 404:
            message += f" (check the base URL, which usually ends in /v1, and the model name {self.model!r})"
        elif status == 429:
            message += " (rate limited: try again later)"
        return message

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The request body (a subclass adds to it, as the tool-offering client adds its tools)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    def _completion(self, response: httpx.Response) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
        """The reply's JSON, its first choice and that choice's message (None when it has none)."""
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ChatError(f"the chat model at {self.url} answered with a body that is not JSON: "
                            f"{snippet(response.text)!r}", url=self.url) from exc
        if not isinstance(data, dict):
            raise ChatError(f"the chat model at {self.url} answered JSON that is not a chat completion: "
                            f"{snippet(response.text)!r}", url=self.url)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ChatError(f"the chat model at {self.url} answered with no choices: {snippet(response.text)!r}",
                            url=self.url)
        first = choices[0] if isinstance(choices[0], dict) else {}
        message = first.get("message")
        return data, first, message if isinstance(message, dict) else None

    @staticmethod
    def _usage(data: dict[str, Any]) -> tuple[int | None, int | None]:
        """The prompt and completion token counts the server reported."""
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return reported_count(usage.get("prompt_tokens")), reported_count(usage.get("completion_tokens"))

    def _reply(self, response: httpx.Response) -> ChatReply:
        data, first, message = self._completion(response)
        text = message.get("content") if message is not None else None
        if not isinstance(text, str):
            raise ChatError(f"the chat model at {self.url} answered a choice without message content: "
                            f"{snippet(response.text)!r}", url=self.url)
        if first.get("finish_reason") == "length":
            logger.warning("the chat model at %s stopped at its token limit; the reply may be cut short", self.url)
        return ChatReply(text, *self._usage(data))


def fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages with the system message(s) put at the head of the first user message (kept first, so a
    cached prefix stays a prefix), for models that have no system role."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    head = "\n\n".join(system)
    for message in rest:
        if message.get("role") == "user":
            message["content"] = head + "\n\n" + message["content"]
            return rest
    return [{"role": "user", "content": head}, *rest]


def error_text(response: httpx.Response) -> str:
    """The server's own explanation: OpenAI's `error.message`, FastAPI's `detail`, or the body's start."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return snippet(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(data.get(key), str):
                return snippet(data[key])
    return snippet(response.text) or response.reason_phrase or "no explanation"


def prompt_too_long(response: httpx.Response) -> tuple[int | None, int | None] | None:
    """`(limit, prompt_tokens)` when the error answer says the prompt overflowed the context, else None.

    Either number is None when the server did not state it. Structured fields (the llama.cpp server's
    `n_ctx` and `n_prompt_tokens`) are taken before numbers read out of the message.
    """
    if response.status_code not in _PROMPT_TOO_LONG_STATUSES:
        return None
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    fields = error if isinstance(error, dict) else data if isinstance(data, dict) else {}
    said = " ".join(str(fields.get(key, "")) for key in ("message", "detail", "code", "type"))
    if isinstance(data, dict) and isinstance(error, str):
        said += " " + error
    if not said.strip():
        said = response.text
    if not _PROMPT_TOO_LONG_RE.search(said):
        return None
    limit = reported_count(fields.get("n_ctx")) or _first_number(_LIMIT_RES, said)
    prompt_tokens = reported_count(fields.get("n_prompt_tokens")) or _first_number(_PROMPT_TOKENS_RES, said)
    return limit, prompt_tokens


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def snippet(text: str, limit: int = _ERROR_TEXT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters: how a server's reply is quoted in a message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reported_count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
