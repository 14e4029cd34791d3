"""A `ChatModel` for Anthropic's Messages API (`POST {base_url}/v1/messages`), with prompt caching.

A cached prompt prefix costs about a tenth of a fresh one, but Anthropic caches only up to the blocks a
request marks with `cache_control`. The context compiler lays a prompt out stable-first (instructions,
then the ledger, then summaries), so this client marks the end of the instructions (layer 1) and the end
of the ledger (layer 2): a question about an unchanged meeting then pays full price only for what follows.
Every way a call can fail becomes a `ChatError` that says what to check; an overlong prompt is a
`PromptTooLong`, which the caller can repair by sending less.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import LLM_INSTALL_HINT, ChatError
from .chat import ChatReply, PromptTooLong, error_text, prompt_too_long, reported_count, snippet

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

#: The layers whose last block ends a cacheable prefix (compiler layers: 1 stable, 2 ledger).
CACHED_LAYERS = (1, 2)


@dataclass(frozen=True, slots=True)
class AnthropicReply(ChatReply):
    """A reply with Anthropic's cache accounting. `prompt_tokens` is the whole prompt (fresh + cached).

    Attributes:
        cache_read_tokens: prompt tokens read from the cache (billed at about a tenth).
        cache_creation_tokens: prompt tokens written to the cache by this request.
    """

    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None


class AnthropicChat:
    """A client for the Anthropic Messages API.

    Args:
        base_url: the API root (`https://api.anthropic.com`; a trailing `/v1` is accepted too).
        model: the model name (required).
        api_key: sent as `x-api-key` (the hosted API needs one; a gateway may not).
        timeout: seconds to wait for the whole answer.
        max_tokens: the cap on the reply's length (the API requires one).
        temperature: sampling temperature.
        transport: an httpx transport to use instead of the network (for tests of the client alone).
    """

    #: `complete` takes `system_parts` to place cache breakpoints (see `LLMAnswerer`).
    takes_system_parts = True

    def __init__(
        self,
        base_url: str = ANTHROPIC_URL,
        model: str = "",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 512,
        *,
        temperature: float = 0.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not model:
            raise ChatError("the Anthropic client needs a model name (e.g. the one your account lists)")
        try:
            import httpx
        except ImportError as exc:
            raise ChatError(f"the Anthropic client needs httpx (install it with: {LLM_INSTALL_HINT})") from exc
        self._httpx = httpx
        base = base_url.rstrip("/")
        self.base_url = base[: -len("/v1")] if base.endswith("/v1") else base
        self.url = f"{self.base_url}/v1/messages"
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Accept": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def complete(self, messages: list[dict[str, Any]], system_parts: Sequence[tuple[int, str]] | None = None,
                 ) -> AnthropicReply:
        """Send `messages` (OpenAI-style roles), return the reply's text and token accounting.

        Args:
            messages: chat messages; `system` ones become the request's `system` blocks.
            system_parts: the system message as (layer, text) parts (`CompiledPrompt.system_parts()`); the
                last part of layers 1 and 2 each carry `cache_control`. Ignored unless they make up the
                system message exactly (so a caller cannot send one text and cache another).

        Raises:
            PromptTooLong: the API said the prompt does not fit the model's context window.
            ChatError: the API cannot be reached, times out, answers with an error or with something that is
                not a message.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "messages": conversation(messages),
        }
        system = system_blocks(messages, system_parts)
        if system:
            body["system"] = system
        httpx = self._httpx
        try:
            response = self._client.post(self.url, json=body)
        except httpx.ConnectError as exc:
            raise ChatError(f"cannot connect to the Anthropic API at {self.url} ({exc}): check the base URL and "
                            "the network", url=self.url) from exc
        except httpx.TimeoutException as exc:
            raise ChatError(f"the Anthropic API at {self.url} did not answer within {self.timeout:g} s: raise the "
                            "timeout or use a faster model", url=self.url) from exc
        except httpx.HTTPError as exc:
            raise ChatError(f"the request to the Anthropic API at {self.url} failed: {exc}", url=self.url) from exc
        if response.status_code >= 400:
            message = self._status_message(response)
            too_long = prompt_too_long(response)
            if too_long is not None:
                limit, prompt_tokens = too_long
                window = f" of {limit} tokens" if limit is not None else ""
                raise PromptTooLong(f"{message} (the prompt does not fit the model's context window{window}: send "
                                    "less)", url=self.url, status=response.status_code, limit=limit,
                                    prompt_tokens=prompt_tokens)
            raise ChatError(message, url=self.url, status=response.status_code)
        return self._reply(response)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> AnthropicChat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _status_message(self, response: httpx.Response) -> str:
        status = response.status_code
        message = f"the Anthropic API at {self.url} answered HTTP {status}: {error_text(response)}"
        if status in (401, 403):
            message += " (check the API key, sent as x-api-key)"
        elif status == 404:
            message += f" (check the base URL, {self.base_url}, and the model name {self.model!r})"
        elif status == 429:
            message += " (rate limited: try again later)"
        elif status == 529:
            message += " (the API is overloaded: try again later)"
        return message

    def _reply(self, response: httpx.Response) -> AnthropicReply:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ChatError(f"the Anthropic API at {self.url} answered with a body that is not JSON: "
                            f"{snippet(response.text)!r}", url=self.url) from exc
        content = data.get("content") if isinstance(data, dict) else None
        if not isinstance(content, list):
            raise ChatError(f"the Anthropic API at {self.url} answered with something that is not a message: "
                            f"{snippet(response.text)!r}", url=self.url)
        texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str)]
        if not texts:
            raise ChatError(f"the Anthropic API at {self.url} answered a message without text: "
                            f"{snippet(response.text)!r}", url=self.url)
        if data.get("stop_reason") == "max_tokens":
            logger.warning("the Anthropic API stopped at max_tokens=%d; the reply may be cut short", self.max_tokens)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        fresh = reported_count(usage.get("input_tokens"))
        read = reported_count(usage.get("cache_read_input_tokens"))
        created = reported_count(usage.get("cache_creation_input_tokens"))
        prompt = None if fresh is None else fresh + (read or 0) + (created or 0)
        return AnthropicReply("".join(texts), prompt, reported_count(usage.get("output_tokens")), read, created)


def system_blocks(messages: Sequence[Mapping[str, Any]],
                  system_parts: Sequence[tuple[int, str]] | None = None) -> list[dict[str, Any]]:
    """The request's `system` text blocks, with `cache_control` ending layers 1 and 2 when parts are given."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    if not system:
        return []
    if not system_parts or "\n\n".join(text for _, text in system_parts) != system:
        return [{"type": "text", "text": system}]
    blocks: list[dict[str, Any]] = []
    parts = list(system_parts)
    for i, (layer, text) in enumerate(parts):
        # The compiler joins parts with a blank line; keep those bytes, so the cached prefix is the same text.
        block: dict[str, Any] = {"type": "text", "text": text + ("\n\n" if i < len(parts) - 1 else "")}
        last_of_layer = i == len(parts) - 1 or parts[i + 1][0] != layer
        if layer in CACHED_LAYERS and last_of_layer:
            block["cache_control"] = {"type": "ephemeral"}
        blocks.append(block)
    return blocks


def conversation(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style messages as Anthropic's: no system role, strictly alternating, starting with the user
    (consecutive messages of one role are joined; a tool result is read as the user's)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        role = "assistant" if role == "assistant" else "user"
        text = str(message.get("content") or "")
        if not text:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": "(continued)"})
    return out
